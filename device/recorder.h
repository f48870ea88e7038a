/* SPDX-License-Identifier: Apache-2.0 */
/* The process's recording: one stack table for all contexts, created at activation from the
 * options, and one history per context (cs_history_t, PyTorch's per-device trace ring), which its
 * allocator reports events to (the observer) under the allocator's own lock. The allocation hook
 * captures the caller's stack before entering the allocator. */
#ifndef CS_RECORDER_H
#define CS_RECORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "allocator/allocator.h"
#include "common/cs_options.h"
#include "record/intern.h"
#include "record/ring.h"
#include "record/thread_log.h"
#include "snapshot/snapshot.h"

/* At activation. A failure leaves recording off (one warning); allocation is unaffected. */
void cs_record_start(const cs_options_t *opts);

/* The caller's interned stack, or 0 (stacks off, not started, or the table is full). Hot path. */
uint32_t cs_record_stack(void);

/* One context's history and the device its entries name. After its set-up (before the
 * allocator exists) every call on it is made under the context allocator's lock, or in a fork
 * child before it runs anything else. */
/* A context's history. In memory, per-thread chunks (record/thread_log.h): threads allocating at
 * once do not share the lines written. In a recording file, one ring in the file's mapping, as
 * `cudasnap recover` reads it after kill -9 (record/recfile.h), which threads write in turn. */
typedef struct cs_history_s {
  cs_ring_t ring;       /* in_file */
  cs_thread_log_t log;  /* !in_file */
  bool in_file;
  int device;
  uint32_t alloc_thread; /* the thread of its latest allocation (record/thread_id.h), 0: none */
} cs_history_t;

/* CUDASNAP_MAX_ENTRIES entries (none, with one warning, when that cannot be had), in the recording
 * file when there is one, recording or not as cudasnap_record_history last asked. */
void cs_history_init(cs_history_t *h, int device);
void cs_history_destroy(cs_history_t *h);

/* Each under the history's owner lock (its allocator's). */
bool cs_history_enabled(const cs_history_t *h);
void cs_history_set_enabled(cs_history_t *h, bool enabled);
void cs_history_clear(cs_history_t *h);
/* Room a copy needs: fixed once the history is made, so it may be read without the lock. */
size_t cs_history_room(const cs_history_t *h);
/* One event that is not the allocator's (a snapshot's mark). */
void cs_history_push(cs_history_t *h, cs_action_t action, uint64_t addr, uint64_t size);
/* Copy it into a snapshot's state. */
void cs_history_copy(cs_history_t *h, cs_snap_state_t *state);

/* Whether new histories record (cudasnap_record_history); existing ones are switched by the
 * caller, under their locks. */
void cs_record_set_enabled(bool enabled);

/* The observer for the allocator of a context: its events go to h (which must outlive it). */
cs_allocator_observer_t cs_record_observer(cs_history_t *h);

cs_intern_t *cs_record_intern(void);    /* NULL before start or with stacks off */

/* The thread (record/thread_id.h) that made the device's latest allocation through the cache, 0
 * when none has. Lock-free; for the live record. */
uint32_t cs_record_alloc_thread(int device);

/* fork: the child forgets the parent's stacks (the contexts clear their histories) */
void cs_record_postfork_child(void);

/* The history of memory passed through (device/passthrough_mem.c) in the recording file: true, and r
 * is a ring of a section of the file (record/recfile.h, device CS_RECFILE_RING_PASSTHROUGH), when
 * there is a file with room; else false (one warning when a file has no room), r untouched. */
bool cs_record_passthrough_ring(cs_ring_t *r);

#endif

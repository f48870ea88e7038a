/* The process's recording: one stack table for all contexts, created at activation from the
 * options, and one history per context (cs_history_t, PyTorch's per-device trace ring), which its
 * allocator reports events to (the observer) under the allocator's own lock. The allocation hook
 * captures the caller's stack before entering the allocator. */
#ifndef CS_RECORD_H
#define CS_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "allocator/allocator.h"
#include "common/cs_options.h"
#include "record/intern.h"
#include "record/ring.h"

/* At activation. A failure leaves recording off (one warning); allocation is unaffected. */
void cs_record_start(const cs_options_t *opts);

/* The caller's interned stack, or 0 (stacks off, not started, or the table is full). Hot path. */
uint32_t cs_record_stack(void);

/* One context's history: the ring and the device its entries name. After its set-up (before the
 * allocator exists) every call on it is made under the context allocator's lock, or in a fork
 * child before it runs anything else. */
typedef struct cs_history_s {
  cs_ring_t ring;
  int device;
} cs_history_t;

/* A ring of CUDASNAP_MAX_ENTRIES entries (none, with one warning, when that cannot be had),
 * recording or not as cudasnap_record_history last asked. */
void cs_history_init(cs_history_t *h, int device);

/* Whether new histories record (cudasnap_record_history); existing ones are switched by the
 * caller, under their locks. */
void cs_record_set_enabled(bool enabled);

/* The observer for the allocator of a context: its events go to h (which must outlive it). */
cs_allocator_observer_t cs_record_observer(cs_history_t *h);

cs_intern_t *cs_record_intern(void);    /* NULL before start or with stacks off */

/* fork: the child forgets the parent's stacks (the contexts clear their histories) */
void cs_record_postfork_child(void);

/* The history of memory passed through (interpose/foreign.c) in the recording file: true, and r
 * is a ring of a section of the file (record/recfile.h, device CS_RECFILE_RING_PASSTHROUGH), when
 * there is a file with room; else false (one warning when a file has no room), r untouched. */
bool cs_record_passthrough_ring(cs_ring_t *r);

#endif

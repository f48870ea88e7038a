/* SPDX-License-Identifier: Apache-2.0 */
/* cs_phases: the program's phases (NVTX ranges and marks), process-wide, for the snapshot's
 * `external_annotations`.
 *
 * NVTX calls come from any thread, with or without a CUDA context, at any rate; each one records
 * a START or END with a name, the thread whose range it is (record/thread_id.h) and a time from the
 * event clock (record/ticks.h), so phases line up with the allocator histories. Ranges belong to
 * their threads (issue 44): readers nest each thread's own, never one thread's inside another's.
 * Recording takes no lock and shares nothing with the allocators: one atomic increment claims a
 * slot of a fixed ring (the oldest are overwritten), and each slot carries a sequence number that
 * a reader checks, so a snapshot never reads a half-written entry.
 *
 * Names are interned once into a fixed, lock-free table of copies (a name in a transient buffer,
 * as Python passes it, is copied the first time it is seen). When the table is full, new names
 * record as CS_PHASES_OVERFLOW_NAME. Nothing is ever freed while the process runs: a snapshot
 * reads names while other threads add them. */
#ifndef CS_PHASES_H
#define CS_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cs_phase_stage_e { CS_PHASE_START = 0, CS_PHASE_END = 1 } cs_phase_stage_t;

#define CS_PHASES_OVERFLOW_NAME "(too many phase names)"

/* Annotations kept (the newest), and distinct names. */
enum { CS_PHASES_CAPACITY = 1 << 16, CS_PHASES_MAX_NAMES = 1 << 14 };

/* Reserve the ring and the name table (address space only: pages are touched as they are used).
 * Idempotent and thread-safe. false without memory; recording then does nothing. */
bool cs_phases_init(void);

/* The id of a name (its bytes up to the first NUL or `len`, whichever comes first), interning it
 * on first sight. 0 before cs_phases_init succeeded. Thread-safe, lock-free. */
uint32_t cs_phases_name(const char *name, size_t len);

/* The name of an id (never NULL: "" for 0 or unknown ids). */
const char *cs_phases_name_text(uint32_t id);

/* Record one annotation of the calling thread's, now. Thread-safe, lock-free, no allocation. */
void cs_phases_record(uint32_t name, cs_phase_stage_t stage, int device);

/* The same with a given tick reading (a mark records START and END at one time). */
void cs_phases_record_at(uint32_t name, cs_phase_stage_t stage, int device, uint64_t ticks);

/* The same for a range of `thread`'s (0: the caller's): an NVTX range started on one thread and
 * ended on another is the starting thread's, at both ends. */
void cs_phases_record_on(uint32_t name, cs_phase_stage_t stage, int device, uint32_t thread, uint64_t ticks);

/* The name the program gave a thread (nvtxNameOsThread), as a name id (0: forget it). At most
 * CS_PHASES_MAX_THREADS threads are named; later ones are not. Thread-safe, lock-free. A thread
 * that records a phase also keeps, as it ends, the kernel's name for it (pthread_setname_np's),
 * for a snapshot taken after it has gone. */
enum { CS_PHASES_MAX_THREADS = 4096 };
void cs_phases_name_thread(uint32_t thread, uint32_t name);
/* That name's text, NULL when the thread was given none. */
const char *cs_phases_thread_name(uint32_t thread);

/* The innermost range open on `thread` now, as a name id; 0 when none. Looks back at most
 * CS_PHASES_OPEN_LOOKBACK annotations: a range opened before that many later ones is not seen.
 * Lock-free; for the live record. */
enum { CS_PHASES_OPEN_LOOKBACK = 4096 };
uint32_t cs_phases_open_on(uint32_t thread);

/* A frozen copy, oldest first, with times in wall-clock microseconds. */
typedef struct cs_phase_s {
  const char *name;
  uint64_t time_us;
  int device;
  cs_phase_stage_t stage;
  uint32_t thread;         /* whose range (record/thread_id.h) */
  const char *thread_name; /* the name the program gave it, NULL: none known */
  const char *thread_ended_as; /* the kernel's name for it when it ended (NULL: it has not, or
                                  had no phase of its own recorded): snapshot/thread_names.h */
} cs_phase_t;

typedef struct cs_phase_list_s {
  cs_phase_t *items;
  size_t count;
  uint64_t dropped; /* annotations overwritten before this copy */
  char *owned;      /* thread names read for this copy (snapshot/thread_names.h), freed with it */
} cs_phase_list_t;

/* Copy what the ring holds, sorted by time (ties keep recording order), with the names threads
 * were given through cs_phases_name_thread. 0, or -1 without memory (the list is then empty). An
 * empty list when nothing was recorded. */
int cs_phases_copy(cs_phase_list_t *out);
void cs_phase_list_free(cs_phase_list_t *list);

/* Forget the annotations and the threads' names (a fork child: they are its parent's). Names of
 * phases stay. */
void cs_phases_clear(void);

#endif

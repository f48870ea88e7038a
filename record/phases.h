/* cs_phases: the program's phases (NVTX ranges and marks), process-wide, for the snapshot's
 * `external_annotations`.
 *
 * NVTX calls come from any thread, with or without a CUDA context, at any rate; each one records
 * a START or END with a name and a time from the event clock (record/ticks.h), so phases line up
 * with the allocator histories. Recording takes no lock and shares nothing with the allocators:
 * one atomic increment claims a slot of a fixed ring (the oldest are overwritten), and each slot
 * carries a sequence number that a reader checks, so a snapshot never reads a half-written entry.
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

/* Record one annotation now. Thread-safe, lock-free, no allocation. */
void cs_phases_record(uint32_t name, cs_phase_stage_t stage, int device);

/* The same with a given tick reading (tests; a mark records START and END at one time). */
void cs_phases_record_at(uint32_t name, cs_phase_stage_t stage, int device, uint64_t ticks);

/* The innermost range open on device now (or on any device when the program named none), as a
 * name id; 0 when none. Looks back at most CS_PHASES_OPEN_LOOKBACK annotations: a range opened
 * before that many later ones is not seen. Lock-free; for the live record. */
enum { CS_PHASES_OPEN_LOOKBACK = 4096 };
uint32_t cs_phases_open(int device);

/* A frozen copy, oldest first, with times in wall-clock microseconds. */
typedef struct cs_phase_s {
  const char *name;
  uint64_t time_us;
  int device;
  cs_phase_stage_t stage;
} cs_phase_t;

typedef struct cs_phase_list_s {
  cs_phase_t *items;
  size_t count;
  uint64_t dropped; /* annotations overwritten before this copy */
} cs_phase_list_t;

/* Copy what the ring holds, sorted by time (ties keep recording order). 0, or -1 without memory
 * (the list is then empty). An empty list when nothing was recorded. */
int cs_phases_copy(cs_phase_list_t *out);
void cs_phase_list_free(cs_phase_list_t *list);

/* Forget the annotations (a fork child: they are its parent's). Names stay. */
void cs_phases_clear(void);

#endif

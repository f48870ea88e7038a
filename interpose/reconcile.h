/* The driver's side of a snapshot's reconciliation: per device, cuMemGetInfo's total and free, and
 * the reserved and used bytes of the stream-ordered pools (the default pool, the current one and
 * every pool the program allocated from), asked right after the state copy. What the rest of the device's used
 * memory is made of comes from the copy itself (docs/memory-kinds.md,
 * "Reconciliation"). */
#ifndef CS_RECONCILE_H
#define CS_RECONCILE_H

#include <stdint.h>

#include "snapshot/snapshot.h"

/* Fills s->memory[d].driver_* and pool_* for each device of the snapshot that has a usable
 * context (one of cudasnap's, or the active primary). Never creates a context. A device whose
 * context could not be looked up before deadline_ns (CLOCK_MONOTONIC) stays unknown. */
void cs_reconcile_query(cs_snap_state_t *s, uint64_t deadline_ns);

/* The driver's answer for device into *m (zeroed first; the *_known flags say what answered).
 * pre: a context of device is current. Calls the real functions only (never cudasnap's hooks)
 * and takes no allocator lock: the backend calls it under one (interpose/driver_watch.c). */
void cs_reconcile_device(int device, cs_snap_driver_t *m);

#endif

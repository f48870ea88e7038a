/* SPDX-License-Identifier: Apache-2.0 */
/* The driver's answer for one device: cuMemGetInfo's total and free, and the reserved and used
 * bytes of the stream-ordered pools (the default pool, the current one and every pool the program
 * allocated from, device/mempools.h) and of the graph memory pool. A snapshot asks it right after
 * the state copy, for its reconciliation (docs/memory-kinds.md, "Reconciliation": what the rest of
 * the device's used memory is made of comes from the copy itself); the driver watch asks it on
 * slow paths (device/driver_watch.h). */
#ifndef CS_DRIVER_QUERY_H
#define CS_DRIVER_QUERY_H

#include "snapshot/snapshot.h"

/* The driver's answer for device into *m (zeroed first; the *_known flags say what answered).
 * pre: a context of device is current. Calls the real functions only (never cudasnap's hooks)
 * and takes no allocator lock: the backend calls it under one (device/driver_watch.c). */
void cs_driver_query_device(int device, cs_snap_driver_t *m);

#endif

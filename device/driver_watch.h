/* SPDX-License-Identifier: Apache-2.0 */
/* The driver's answers between snapshots, per device: the last one (a snapshot that cannot ask,
 * at a crash or a termination signal, carries it with its time) and the one at the peak of the
 * memory cudasnap sees (the cache's segments plus device memory passed through).
 *
 * The driver is asked on slow paths only, never on a cache hit: where the cache takes a segment
 * from the driver (device/backend_cuda.c, under the allocator's lock, with the backend's
 * context current) and where memory passes through (device/passthrough_mem.c), when the seen bytes
 * reach a high that has no answer yet, at most once per CS_DRIVER_WATCH_INTERVAL_MS per device.
 * A high reached within the interval stays "unsampled": the next growth at that level, the cache
 * giving a segment back while at it, or a snapshot taken while at it (its own answer) catches it
 * up; until then the kept answer is an earlier, lower point's, and says so (answer_seen).
 *
 * Readers (cs_driver_watch_copy) take no lock and make no call: the records are published through
 * a latch (two copies and a sequence counter), so a crash handler reads a whole one even when the
 * crashing thread was half-way through writing. */
#ifndef CS_DRIVER_WATCH_H
#define CS_DRIVER_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "memviz/passthrough.h"
#include "snapshot/snapshot.h"

/* At most one driver query per device per this many ms from the slow paths (docs/snapshots.md). */
enum { CS_DRIVER_WATCH_INTERVAL_MS = 100 };

/* Calls f(device, arg) with a context of device current, or not at all (device/contexts.h's
 * cs_contexts_with_device): how cs_driver_watch_poll asks the driver, from callers that have no
 * context of the device current. */
typedef void (*cs_driver_watch_with_device_fn)(int device, uint64_t deadline_ns, void (*f)(int device, void *arg),
                                               void *arg);

/* At activation (device/contexts.c): the contexts cs_driver_watch_poll asks in. Until then it asks
 * nothing (no memory passes through before the driver is initialized, which activates cudasnap). */
void cs_driver_watch_use(cs_driver_watch_with_device_fn with_device);

/* The cache took a segment of `bytes` on device; may_ask: the driver may be asked now (false
 * during a stream capture). pre: the backend's context of device is current (the driver is asked
 * in it); the allocator's lock may be held. */
void cs_driver_watch_cache_grew(int device, uint64_t bytes, bool may_ask);

/* The cache is about to give a segment back to the driver (before the driver's free: a peak that
 * has no answer yet is caught up first). Same pre as above. */
void cs_driver_watch_cache_releasing(int device);
/* The cache gave back, or forgot (its context is gone), `bytes` of segments on device. Only
 * counters. */
void cs_driver_watch_cache_released(int device, uint64_t bytes);

/* Memory passed through on device changed by delta bytes (kinds the driver does not count on a
 * device are ignored). Only counters: callable under passthrough_mem.c's lock. */
void cs_driver_watch_passthrough(int device, cs_passthrough_kind_t kind, int64_t delta);

/* After cs_driver_watch_passthrough, with no cudasnap lock held: asks the driver for the devices
 * whose high has no answer yet, when their interval allows (never during a stream capture). */
void cs_driver_watch_poll(void);

/* A snapshot's own answer for device, taken with the seen bytes as they are now: kept as the
 * last answer, and as the peak's when the seen bytes are at the peak and it has none. */
void cs_driver_watch_answer(int device, const cs_snap_driver_t *answer);

/* Copies every device's records into the state: the peak's always, the last answer into
 * memory[].last when with_last. Async-signal-safe: no lock, no call but memcpy. */
void cs_driver_watch_copy(cs_snap_state_t *s, bool with_last);

/* The device's used bytes (total - free) at the driver's last answer, for the live record; false
 * when the driver has not been asked on device yet. Lock-free, no call. */
bool cs_driver_watch_last_used(int device, uint64_t *used, uint64_t *time_us);

/* fork: the child starts with no answers and nothing seen (the parent's memory is not its own). */
void cs_driver_watch_postfork_child(void);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* cs_backend_t: everything the caching allocator needs from a device, behind one contract.
 *
 * The real implementation (device/backend_cuda.c) forwards to the resolved CUDA driver functions of one
 * context; tests use tests/fakes/fake_backend.c. allocator/ includes no CUDA header: handles are
 * opaque uintptr_t values (a CUdeviceptr, CUstream or CUevent in the real backend).
 *
 * Return values. Every int-returning operation returns
 *   0            success,
 *   -CS_ENOMEM   out of device memory (segment_alloc only),
 *   -CS_EAGAIN   not yet (event_query only: the event has not completed),
 *   > 0          the backend's own failure status (a CUresult in the real backend), which the
 *                allocator passes back to its caller unchanged so that the program sees exactly
 *                what the driver said.
 *
 * Preconditions and guarantees.
 *   - The allocator calls every operation with its own lock held, except `synchronize`, which it
 *     calls with the lock let go (it may wait long, or for ever on a hung kernel, and other
 *     threads and the process's ending must not wait with it). An operation must not call back
 *     into the allocator.
 *   - segment_alloc: size > 0 and a multiple of 512. On success *addr is non-zero and aligned to
 *     at least 512 bytes.
 *   - segment_free: addr and size are those of an earlier segment_alloc of the same backend that
 *     was not freed since (the size is passed for backends that keep no table of their own).
 *   - synchronize: waits until all work issued so far in the backend's context has completed and
 *     returns the first error of earlier asynchronous work, as cuCtxSynchronize does. Never called
 *     while is_capturing() is true.
 *   - event_*: an event is created once, recorded any number of times, queried after a record, and
 *     destroyed once. event_record and event_query are never called while is_capturing() is true
 *     (recording would add a node to the captured graph; querying can invalidate the capture).
 *   - is_capturing: true while any stream capture is underway in the process. Must be cheap: it is
 *     asked on every allocation and free.
 *   - fence_streams: writes up to cap stream handles on which an event must be recorded so that,
 *     once all those events complete, every piece of work issued before the call has completed
 *     (the legacy default stream, which orders all blocking streams, plus every live non-blocking
 *     stream). Returns how many streams there are, which may exceed cap.
 *   - mem_info: the device's free and total bytes, as cuMemGetInfo reports them (unadjusted).
 *
 * Thread-safety: the allocator serializes its own calls; a backend shared by several allocators
 * must be safe for concurrent use. */
#ifndef CS_BACKEND_H
#define CS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cs_backend_ops_s {
  int (*segment_alloc)(void *self, size_t size, uintptr_t *addr);
  int (*segment_free)(void *self, uintptr_t addr, size_t size);
  int (*mem_info)(void *self, size_t *free_bytes, size_t *total_bytes);
  int (*synchronize)(void *self);
  int (*event_create)(void *self, uintptr_t *event);
  int (*event_record)(void *self, uintptr_t event, uintptr_t stream);
  int (*event_query)(void *self, uintptr_t event);
  int (*event_destroy)(void *self, uintptr_t event);
  bool (*is_capturing)(void *self);
  size_t (*fence_streams)(void *self, uintptr_t *streams, size_t cap);
} cs_backend_ops_t;

typedef struct cs_backend_s {
  const cs_backend_ops_t *ops;
  void *self; /* passed back as the first argument of every operation */
} cs_backend_t;

#endif

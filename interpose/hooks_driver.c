/* SPDX-License-Identifier: Apache-2.0 */
/* The driver hooks (interposition.md section 6). Each is short: enter, hand the call to the cache
 * (device/contexts.h) or to the real function, record, return exactly the status the driver or
 * the cache produced.
 *
 * Cache path: cuMemAlloc_v2 and cuMemFree_v2. Every other memory API passes through and is
 * recorded in device/passthrough_mem.c. Life-cycle hooks keep the cache consistent with contexts,
 * streams and captures. cudasnap's own driver calls use the real functions, never these hooks. */
#include "common/cs_error.h"
#include "common/cs_log.h"
#include "device/array_bytes.h"
#include "device/contexts.h"
#include "device/graphs.h"
#include "device/mempools.h"
#include "device/passthrough_mem.h"
#include "device/passthrough_oom.h"
#include "device/recorder.h"
#include "device/streams.h"
#include "interpose/guard.h"
#include "interpose/hooks.h"
#include "process/dump.h"
#include "process/lifecycle.h"
#include "process/runtime.h"
#include "real/real.h"

/* Call the real variant `name`, or report the driver as not initialized when it cannot be found
 * (a program that calls the driver has it loaded, so this is a broken installation). */
#define CS_FORWARD(result, name, pfn, ...)                                                        \
  do {                                                                                            \
    pfn cs_real_fn_ = CS_REAL_FN(name, pfn);                                                      \
    if (CS_UNLIKELY(!cs_real_fn_)) return CUDA_ERROR_NOT_INITIALIZED;                             \
    (result) = cs_real_fn_(__VA_ARGS__);                                                          \
  } while (0)

/* CS_FORWARD for a call that makes memory past the cache (device/passthrough_oom.h): when the
 * driver says out of memory, cudasnap's caches on the device give back their free memory and the
 * call is asked once more; an out-of-memory answer the program then gets is recorded as one of
 * `kind` asking `size` bytes on `stream`. device_expr and size are evaluated only then. */
#define CS_FORWARD_MEMORY(result, kind, device_expr, size, stream, name, pfn, ...)                \
  do {                                                                                            \
    CS_FORWARD(result, name, pfn, __VA_ARGS__);                                                   \
    if (CS_UNLIKELY((result) == CUDA_ERROR_OUT_OF_MEMORY)) {                                      \
      int cs_oom_device_ = (device_expr);                                                         \
      if (cs_oom_release(cs_oom_device_)) CS_FORWARD(result, name, pfn, __VA_ARGS__);             \
      if ((result) == CUDA_ERROR_OUT_OF_MEMORY) cs_oom_record(kind, cs_oom_device_, (size), (uintptr_t)(stream)); \
    }                                                                                             \
  } while (0)

/* The give-back of CS_FORWARD_MEMORY, from the program's call only. */
static CS_COLD bool cs_oom_release(int device) {
  if (device < 0) return false; /* the guard is not touched: every exit matches an enter */
  bool released = false;
  if (cs_guard_enter()) released = cs_passthrough_oom_release(device);
  cs_guard_exit();
  return released;
}

/* The record of CS_FORWARD_MEMORY, from the program's call only; the snapshot is written before
 * the program sees the error. */
static CS_COLD void cs_oom_record(cs_passthrough_kind_t kind, int device, size_t size, uintptr_t stream) {
  if (cs_guard_enter()) {
    cs_passthrough_oom_record(kind, device, size, stream);
    cs_dump_on_oom();
  }
  cs_guard_exit();
}

/* The real variant asked to free what `pending` marked (cs_passthrough_free_begin), its answer
 * recorded (cs_passthrough_free_end) on every path. */
#define CS_FORWARD_FREE(result, pending, name, pfn, ...)                                          \
  do {                                                                                            \
    pfn cs_real_fn_ = CS_REAL_FN(name, pfn);                                                      \
    (result) = cs_real_fn_ ? cs_real_fn_(__VA_ARGS__) : CUDA_ERROR_NOT_INITIALIZED;               \
    cs_passthrough_free_end(pending, (result) == CUDA_SUCCESS);                                   \
  } while (0)

static int cs_current_device(void) {
  CUdevice device = -1;
  PFN_cuCtxGetDevice_v2000 get_device = CS_REAL_FN(cuCtxGetDevice, PFN_cuCtxGetDevice_v2000);
  if (get_device && get_device(&device) != CUDA_SUCCESS) device = -1;
  return device;
}

/* What cuMemFree frees that is not the cache's: whichever kind the address was. */
static const cs_passthrough_kind_t cs_free_kinds[] = {CS_PASSTHROUGH_DEVICE, CS_PASSTHROUGH_PITCH,
                                                      CS_PASSTHROUGH_MANAGED, CS_PASSTHROUGH_ASYNC,
                                                      CS_PASSTHROUGH_GRAPH};
/* What cuMemFreeAsync frees: a stream-ordered allocation, or a graph's. */
static const cs_passthrough_kind_t cs_free_async_kinds[] = {CS_PASSTHROUGH_ASYNC, CS_PASSTHROUGH_GRAPH};

/* A free of the one kind `kind` at key, begun (cs_passthrough_free_begin) with the caller's stack. */
static void cs_free_begin(cs_passthrough_pending_t *p, cs_passthrough_kind_t kind, uintptr_t key) {
  cs_passthrough_free_begin(p, &kind, 1, key, cs_record_stack());
}

/* The same for kinds that are not drawn (host memory, reservations): no stack is kept. */
static void cs_kind_free_begin_nostack(cs_passthrough_pending_t *p, cs_passthrough_kind_t kind, uintptr_t key) {
  cs_passthrough_free_begin(p, &kind, 1, key, 0);
}

/* ------------------------------------------------------------------------------------------------
 * The cache path
 * ----------------------------------------------------------------------------------------------*/

static CUresult cs_status_of(int rc) {
  switch (rc) {
  case 0: return CUDA_SUCCESS;
  case -CS_ENOMEM: return CUDA_ERROR_OUT_OF_MEMORY;
  case -CS_EINVAL: return CUDA_ERROR_INVALID_VALUE;
  default: return rc > 0 ? (CUresult)rc : CUDA_ERROR_UNKNOWN;
  }
}

/* A cuMemAlloc_v2 the driver answers, outside the guard. Nested inside cudasnap (!program): the
 * driver's answer only. The program's own call (no context cudasnap serves, a capture under which
 * the driver refuses allocations, or cudasnap's metadata could not grow) is a pass-through
 * allocation as any other: given back to and asked again on out of memory, that answer recorded,
 * and memory it gets on a device cudasnap knows (device >= 0) recorded with `stack` (0: taken
 * here). */
static CS_NOINLINE CUresult cs_alloc_by_driver(CUdeviceptr *dptr, size_t bytesize, bool program, int device,
                                               uint32_t stack) {
  CUresult r;
  if (!program) {
    CS_FORWARD(r, cuMemAlloc_v2, PFN_cuMemAlloc_v3020, dptr, bytesize);
    return r;
  }
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_DEVICE, device >= 0 ? device : cs_current_device(), bytesize, 0, cuMemAlloc_v2,
                    PFN_cuMemAlloc_v3020, dptr, bytesize);
  if (r == CUDA_SUCCESS && device >= 0)
    cs_passthrough_add(CS_PASSTHROUGH_DEVICE, *dptr, bytesize, device, 0, stack ? stack : cs_record_stack());
  return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  cs_context_t *c = NULL;
  const bool program = cs_guard_enter();
  if (CS_LIKELY(program)) {
    cs_lifecycle_activate();
    c = cs_contexts_current();
  }
  if (CS_UNLIKELY(!c || !dptr || (cs_streams_capture_underway() && cs_streams_capture_forbids_this_thread()))) {
    /* Nested inside cudasnap, no current context, a context cudasnap cannot serve, or a capture
     * under which the driver refuses allocations (and invalidates the capture): the driver
     * answers, including with its own errors. */
    cs_guard_exit();
    return cs_alloc_by_driver(dptr, bytesize, program, c ? cs_context_device(c) : -1, 0);
  }
  uintptr_t addr = 0;
  uint32_t stack = cs_record_stack(); /* before the allocator's lock: unwinding takes a while */
  int rc = cs_contexts_malloc(c, bytesize, stack, &addr);
  if (CS_UNLIKELY(rc == -CS_EHOSTMEM)) {
    /* cudasnap's own metadata could not grow: let the driver serve this one. */
    cs_guard_exit();
    return cs_alloc_by_driver(dptr, bytesize, true, cs_context_device(c), stack);
  }
  CUresult r = cs_status_of(rc);
  if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)addr;
  /* the snapshot is written before the program sees the error */
  else if (r == CUDA_ERROR_OUT_OF_MEMORY) cs_dump_on_oom();
  cs_guard_exit();
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  CUresult r;
  if (CS_UNLIKELY(!cs_guard_enter() || dptr == 0)) {
    CS_FORWARD(r, cuMemFree_v2, PFN_cuMemFree_v3020, dptr);
    cs_guard_exit();
    return r;
  }
  if (CS_UNLIKELY(cs_streams_capture_underway()) && cs_streams_capture_forbids_this_thread() &&
      cs_contexts_find_segment((uintptr_t)dptr, NULL)) {
    /* The driver refuses a free under such a capture, and invalidates the capture: asked to free
     * nothing, it does both (a driver that checks the pointer first answers success, and the
     * capture goes on). The block stays the program's. */
    CS_FORWARD(r, cuMemFree_v2, PFN_cuMemFree_v3020, 0);
    cs_guard_exit();
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  int rc = cs_contexts_free((uintptr_t)dptr);
  if (CS_LIKELY(rc != -CS_EINVAL)) {
    r = cs_status_of(rc);
  } else if (cs_contexts_find_segment((uintptr_t)dptr, NULL)) {
    /* Inside a segment cudasnap holds but not a live block: freed twice, or never handed out.
     * The driver would free the whole cached segment under the allocator, so answer as the
     * driver answers an unknown pointer. */
    r = CUDA_ERROR_INVALID_VALUE;
  } else {
    cs_passthrough_pending_t freeing;
    cs_passthrough_free_begin(&freeing, cs_free_kinds, CS_ARRAY_SIZE(cs_free_kinds), dptr, cs_record_stack());
    CS_FORWARD_FREE(r, &freeing, cuMemFree_v2, PFN_cuMemFree_v3020, dptr);
  }
  cs_guard_exit();
  return r;
}

/* cudaMemGetInfo resolves this too, so one hook keeps every caller's view of free memory as it
 * would be without the cache (interposition.md section 7.4): free is the driver's figure plus the
 * whole segments cudasnap holds without a live block, which an allocation that finds the device
 * full gets back (cs_passthrough_oom_release); free fragments of shared segments are not counted. */
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  CUresult r;
  CS_FORWARD(r, cuMemGetInfo_v2, PFN_cuMemGetInfo_v3020, free_bytes, total_bytes);
  if (r != CUDA_SUCCESS || !free_bytes || !total_bytes) return r;
  if (CS_LIKELY(cs_guard_enter())) {
    cs_lifecycle_activate();
    int device = cs_current_device();
    if (device >= 0 && cs_runtime_options()->meminfo == CS_MEMINFO_ADJUSTED) {
      size_t cached = cs_contexts_releasable_bytes(device);
      size_t room = *total_bytes > *free_bytes ? *total_bytes - *free_bytes : 0;
      *free_bytes += cached < room ? cached : room;
    }
  }
  cs_guard_exit();
  return r;
}

/* ------------------------------------------------------------------------------------------------
 * Record-only pass-through
 * ----------------------------------------------------------------------------------------------*/

/* A pass-through allocation of the current device, with its caller's stack. */
static void cs_passthrough_add_here(cs_passthrough_kind_t kind, uintptr_t key, size_t size, uintptr_t stream) {
  cs_passthrough_add(kind, key, size, cs_current_device(), stream, cs_record_stack());
}

CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_DEVICE, cs_current_device(), bytesize, 0, cuMemAlloc, PFN_cuMemAlloc_v2000, dptr,
                    bytesize);
  if (r == CUDA_SUCCESS) cs_passthrough_add_here(CS_PASSTHROUGH_DEVICE, *dptr, bytesize, 0);
  return r;
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_passthrough_free_begin(&freeing, cs_free_kinds, CS_ARRAY_SIZE(cs_free_kinds), dptr, cs_record_stack());
  CS_FORWARD_FREE(r, &freeing, cuMemFree, PFN_cuMemFree_v2000, dptr);
  return r;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int element_size) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_PITCH, cs_current_device(), width * height, 0, cuMemAllocPitch_v2,
                    PFN_cuMemAllocPitch_v3020, dptr, pitch, width, height, element_size);
  if (r == CUDA_SUCCESS) cs_passthrough_add_here(CS_PASSTHROUGH_PITCH, *dptr, *pitch * height, 0);
  return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_MANAGED, cs_current_device(), bytesize, 0, cuMemAllocManaged,
                    PFN_cuMemAllocManaged_v6000, dptr, bytesize, flags);
  if (r == CUDA_SUCCESS) cs_passthrough_add_here(CS_PASSTHROUGH_MANAGED, *dptr, bytesize, 0);
  return r;
}

/* A stream-ordered allocation: memory now, or, during capture, an allocation node whose site is
 * this call (device/graphs.c draws it from each launch). */
static void cs_async_allocated(CUdeviceptr dptr, size_t bytesize, CUstream stream, bool per_thread) {
  if (cs_streams_is_capturing((uintptr_t)stream, per_thread)) cs_graphs_node_site(dptr, cs_record_stack());
  else cs_passthrough_add_here(CS_PASSTHROUGH_ASYNC, dptr, bytesize, (uintptr_t)stream);
}

#define CS_ASYNC_ALLOC_HOOK(name, pfn, per_thread)                                                \
  CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream stream) {                           \
    CUresult r;                                                                                   \
    CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_ASYNC, cs_current_device(), bytesize, stream, name, pfn, dptr, bytesize, \
                      stream);                                                                    \
    if (r == CUDA_SUCCESS) cs_async_allocated(*dptr, bytesize, stream, per_thread);               \
    return r;                                                                                     \
  }
CS_ASYNC_ALLOC_HOOK(cuMemAllocAsync, PFN_cuMemAllocAsync_v11020, false)
CS_ASYNC_ALLOC_HOOK(cuMemAllocAsync_ptsz, PFN_cuMemAllocAsync_v11020_ptsz, true)

#define CS_POOL_ALLOC_HOOK(name, pfn, per_thread)                                                 \
  CUresult name(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream) {        \
    CUresult r;                                                                                   \
    CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_ASYNC, cs_current_device(), bytesize, stream, name, pfn, dptr, bytesize, pool, \
                      stream);                                                                    \
    if (r == CUDA_SUCCESS) {                                                                      \
      cs_async_allocated(*dptr, bytesize, stream, per_thread);                                    \
      cs_mempools_used((uintptr_t)pool, cs_current_device());                                     \
    }                                                                                             \
    return r;                                                                                     \
  }
CS_POOL_ALLOC_HOOK(cuMemAllocFromPoolAsync, PFN_cuMemAllocFromPoolAsync_v11020, false)
CS_POOL_ALLOC_HOOK(cuMemAllocFromPoolAsync_ptsz, PFN_cuMemAllocFromPoolAsync_v11020_ptsz, true)

/* cuMemFreeAsync of a block of cudasnap's cache, in the driver's codes (device/contexts.h). */
static CUresult cs_free_async_cached(CUdeviceptr dptr, CUstream stream, bool per_thread) {
  int rc = cs_contexts_free_after_stream((uintptr_t)dptr, (uintptr_t)stream, per_thread);
  return rc == -CS_EINVAL ? CUDA_ERROR_INVALID_VALUE : cs_status_of(rc);
}

/* During capture a free node, which frees nothing until a launch (device/graphs.c). Otherwise
 * the free is begun before the driver is asked (passthrough_mem.h): another thread may be handed the
 * address as soon as the driver has freed it. */
#define CS_ASYNC_FREE_HOOK(name, pfn, per_thread)                                                 \
  CUresult name(CUdeviceptr dptr, CUstream stream) {                                             \
    CUresult r;                                                                                   \
    if (CS_UNLIKELY(dptr != 0 && cs_contexts_find_segment((uintptr_t)dptr, NULL))) {              \
      if (cs_guard_enter()) r = cs_free_async_cached(dptr, stream, per_thread);                   \
      else r = CUDA_ERROR_INVALID_VALUE; /* cudasnap's own work never frees asynchronously */     \
      cs_guard_exit();                                                                            \
      return r;                                                                                   \
    }                                                                                             \
    if (dptr == 0 || cs_streams_is_capturing((uintptr_t)stream, per_thread)) {                    \
      CS_FORWARD(r, name, pfn, dptr, stream);                                                     \
      return r;                                                                                   \
    }                                                                                             \
    cs_passthrough_pending_t freeing;                                                             \
    cs_passthrough_free_begin(&freeing, cs_free_async_kinds, CS_ARRAY_SIZE(cs_free_async_kinds), dptr, \
                              cs_record_stack());                                                 \
    CS_FORWARD_FREE(r, &freeing, name, pfn, dptr, stream);                                        \
    return r;                                                                                     \
  }
CS_ASYNC_FREE_HOOK(cuMemFreeAsync, PFN_cuMemFreeAsync_v11020, false)
CS_ASYNC_FREE_HOOK(cuMemFreeAsync_ptsz, PFN_cuMemFreeAsync_v11020_ptsz, true)

/* A pool the program destroys is no longer asked for its reserved bytes. */
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  CUresult r;
  CS_FORWARD(r, cuMemPoolDestroy, PFN_cuMemPoolDestroy_v11020, pool);
  if (r == CUDA_SUCCESS) cs_mempools_destroyed((uintptr_t)pool);
  return r;
}

/* ---- virtual memory management: recorded, never cached ---- */

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
  CUresult r;
  /* located on the host (CUDA 12.2 on): pinned host memory, whose lack no device cache can make up */
  bool on_device = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  CS_FORWARD_MEMORY(r, on_device || !prop ? CS_PASSTHROUGH_VMM_HANDLE : CS_PASSTHROUGH_HOST,
                    on_device ? prop->location.id : -1, size, 0, cuMemCreate, PFN_cuMemCreate_v10020, handle, size,
                    prop, flags);
  if (r == CUDA_SUCCESS)
    cs_passthrough_add(CS_PASSTHROUGH_VMM_HANDLE, (uintptr_t)*handle, size,
                       prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1, 0,
                       cs_record_stack());
  return r;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_free_begin(&freeing, CS_PASSTHROUGH_VMM_HANDLE, (uintptr_t)handle);
  CS_FORWARD_FREE(r, &freeing, cuMemRelease, PFN_cuMemRelease_v10020, handle);
  return r;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  CUresult r;
  CS_FORWARD(r, cuMemMap, PFN_cuMemMap_v10020, ptr, size, offset, handle, flags);
  if (r == CUDA_SUCCESS) cs_passthrough_map(ptr, size, (uintptr_t)handle, cs_current_device(), cs_record_stack());
  return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_passthrough_unmap_begin(&freeing, ptr, size, cs_record_stack());
  CS_FORWARD_FREE(r, &freeing, cuMemUnmap, PFN_cuMemUnmap_v10020, ptr, size);
  return r;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  CUresult r;
  CS_FORWARD(r, cuMemAddressReserve, PFN_cuMemAddressReserve_v10020, ptr, size, alignment, addr, flags);
  if (r == CUDA_SUCCESS) cs_passthrough_add(CS_PASSTHROUGH_VMM_RESERVE, *ptr, size, -1, 0, cs_record_stack());
  return r;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_kind_free_begin_nostack(&freeing, CS_PASSTHROUGH_VMM_RESERVE, ptr);
  CS_FORWARD_FREE(r, &freeing, cuMemAddressFree, PFN_cuMemAddressFree_v10020, ptr, size);
  return r;
}

CUresult cuMemExportToShareableHandle(void *shareable, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType type, unsigned long long flags) {
  CUresult r;
  CS_FORWARD(r, cuMemExportToShareableHandle, PFN_cuMemExportToShareableHandle_v10020, shareable, handle,
             type, flags);
  return r;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *os_handle,
                                        CUmemAllocationHandleType type) {
  CUresult r;
  CS_FORWARD(r, cuMemImportFromShareableHandle, PFN_cuMemImportFromShareableHandle_v10020, handle,
             os_handle, type);
  /* another process's physical memory: no size, no device of ours */
  if (r == CUDA_SUCCESS) cs_passthrough_add(CS_PASSTHROUGH_VMM_HANDLE, (uintptr_t)*handle, 0, -1, 0, cs_record_stack());
  return r;
}

/* ---- host memory ---- */

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_HOST, -1, bytesize, 0, cuMemHostAlloc, PFN_cuMemHostAlloc_v2020, pp, bytesize,
                    flags);
  if (r == CUDA_SUCCESS) cs_passthrough_add(CS_PASSTHROUGH_HOST, (uintptr_t)*pp, bytesize, -1, 0, cs_record_stack());
  return r;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_HOST, -1, bytesize, 0, cuMemAllocHost_v2, PFN_cuMemAllocHost_v3020, pp, bytesize);
  if (r == CUDA_SUCCESS) cs_passthrough_add(CS_PASSTHROUGH_HOST, (uintptr_t)*pp, bytesize, -1, 0, cs_record_stack());
  return r;
}

CUresult cuMemFreeHost(void *p) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_kind_free_begin_nostack(&freeing, CS_PASSTHROUGH_HOST, (uintptr_t)p);
  CS_FORWARD_FREE(r, &freeing, cuMemFreeHost, PFN_cuMemFreeHost_v2000, p);
  return r;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_HOST_REGISTERED, -1, bytesize, 0, cuMemHostRegister_v2,
                    PFN_cuMemHostRegister_v6050, p, bytesize, flags);
  if (r == CUDA_SUCCESS)
    cs_passthrough_add(CS_PASSTHROUGH_HOST_REGISTERED, (uintptr_t)p, bytesize, -1, 0, cs_record_stack());
  return r;
}

CUresult cuMemHostUnregister(void *p) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_kind_free_begin_nostack(&freeing, CS_PASSTHROUGH_HOST_REGISTERED, (uintptr_t)p);
  CS_FORWARD_FREE(r, &freeing, cuMemHostUnregister, PFN_cuMemHostUnregister_v4000, p);
  return r;
}

/* ---- arrays (device/array_bytes.h: the bytes their descriptors ask for) ---- */

CUresult cuArrayCreate_v2(CUarray *array, const CUDA_ARRAY_DESCRIPTOR *desc) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_ARRAY, cs_current_device(), cs_array_bytes_2d(desc), 0, cuArrayCreate_v2,
                    PFN_cuArrayCreate_v3020, array, desc);
  if (r == CUDA_SUCCESS && desc)
    cs_passthrough_add_here(CS_PASSTHROUGH_ARRAY, (uintptr_t)*array, cs_array_bytes_2d(desc), 0);
  return r;
}

CUresult cuArray3DCreate_v2(CUarray *array, const CUDA_ARRAY3D_DESCRIPTOR *desc) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_ARRAY, cs_current_device(), cs_array_bytes_3d(desc, 1), 0, cuArray3DCreate_v2,
                    PFN_cuArray3DCreate_v3020, array, desc);
  if (r == CUDA_SUCCESS && desc)
    cs_passthrough_add_here(CS_PASSTHROUGH_ARRAY, (uintptr_t)*array, cs_array_bytes_3d(desc, 1), 0);
  return r;
}

CUresult cuArrayDestroy(CUarray array) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_free_begin(&freeing, CS_PASSTHROUGH_ARRAY, (uintptr_t)array);
  CS_FORWARD_FREE(r, &freeing, cuArrayDestroy, PFN_cuArrayDestroy_v2000, array);
  return r;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *array, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                unsigned int levels) {
  CUresult r;
  CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_ARRAY, cs_current_device(), cs_array_bytes_3d(desc, levels), 0,
                    cuMipmappedArrayCreate, PFN_cuMipmappedArrayCreate_v5000, array, desc, levels);
  if (r == CUDA_SUCCESS && desc)
    cs_passthrough_add_here(CS_PASSTHROUGH_ARRAY, (uintptr_t)*array, cs_array_bytes_3d(desc, levels), 0);
  return r;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_free_begin(&freeing, CS_PASSTHROUGH_ARRAY, (uintptr_t)array);
  CS_FORWARD_FREE(r, &freeing, cuMipmappedArrayDestroy, PFN_cuMipmappedArrayDestroy_v5000, array);
  return r;
}

/* ---- graph memory nodes (device/graphs.c): sites at node creation, memory from launches ---- */

CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
                                CUDA_MEM_ALLOC_NODE_PARAMS *params) {
  CUresult r;
  CS_FORWARD(r, cuGraphAddMemAllocNode, PFN_cuGraphAddMemAllocNode_v11040, node, graph, deps, n, params);
  if (r == CUDA_SUCCESS) cs_graphs_node_site(params->dptr, cs_record_stack());
  return r;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
                               CUdeviceptr dptr) {
  CUresult r;
  CS_FORWARD(r, cuGraphAddMemFreeNode, PFN_cuGraphAddMemFreeNode_v11040, node, graph, deps, n, dptr);
  return r;
}

static void cs_graph_instantiated(CUresult r, CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  if (r == CUDA_SUCCESS && exec)
    cs_graphs_instantiated((uintptr_t)*exec, (uintptr_t)graph, flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
                           cs_record_stack());
}

CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node, char *log, size_t log_size) {
  CUresult r;
  CS_FORWARD(r, cuGraphInstantiate, PFN_cuGraphInstantiate_v10000, exec, graph, error_node, log, log_size);
  cs_graph_instantiated(r, exec, graph, 0);
  return r;
}

CUresult cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node, char *log, size_t log_size) {
  CUresult r;
  CS_FORWARD(r, cuGraphInstantiate_v2, PFN_cuGraphInstantiate_v11000, exec, graph, error_node, log, log_size);
  cs_graph_instantiated(r, exec, graph, 0);
  return r;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  CUresult r;
  CS_FORWARD(r, cuGraphInstantiateWithFlags, PFN_cuGraphInstantiateWithFlags_v11040, exec, graph, flags);
  cs_graph_instantiated(r, exec, graph, flags);
  return r;
}

/* With CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD the instantiation uploads the graph (cuGraphUpload,
 * below), and can fail for lack of memory as an upload does. */
#define CS_INSTANTIATE_WITH_PARAMS_HOOK(name, pfn)                                                \
  CUresult name(CUgraphExec *exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *params) {        \
    CUresult r;                                                                                   \
    CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_GRAPH, cs_current_device(), cs_graphs_graph_bytes((uintptr_t)graph), \
                      params ? (uintptr_t)params->hUploadStream : 0, name, pfn, exec, graph, params); \
    cs_graph_instantiated(r, exec, graph, params ? params->flags : 0);                            \
    return r;                                                                                     \
  }
CS_INSTANTIATE_WITH_PARAMS_HOOK(cuGraphInstantiateWithParams, PFN_cuGraphInstantiateWithParams_v12000)
CS_INSTANTIATE_WITH_PARAMS_HOOK(cuGraphInstantiateWithParams_ptsz, PFN_cuGraphInstantiateWithParams_v12000_ptsz)

/* A launch of a graph with memory nodes takes their memory from the graph memory pool, which grows
 * from the device: it fails for lack of memory as an allocation does, and gets the same give-back
 * and retry. */
#define CS_GRAPH_LAUNCH_HOOK(name, pfn)                                                           \
  CUresult name(CUgraphExec exec, CUstream stream) {                                             \
    CUresult r;                                                                                   \
    CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_GRAPH, cs_current_device(), cs_graphs_exec_bytes((uintptr_t)exec), stream, \
                      name, pfn, exec, stream);                                                   \
    if (r == CUDA_SUCCESS) cs_graphs_launched((uintptr_t)exec, (uintptr_t)stream, cs_record_stack); \
    return r;                                                                                     \
  }
CS_GRAPH_LAUNCH_HOOK(cuGraphLaunch, PFN_cuGraphLaunch_v10000)
CS_GRAPH_LAUNCH_HOOK(cuGraphLaunch_ptsz, PFN_cuGraphLaunch_v10000_ptsz)

/* An upload backs the exec's allocations with the pool's memory ahead of a launch: it fails for
 * lack of memory as a launch does. Nothing becomes live, so nothing is recorded on success. */
#define CS_GRAPH_UPLOAD_HOOK(name, pfn)                                                           \
  CUresult name(CUgraphExec exec, CUstream stream) {                                             \
    CUresult r;                                                                                   \
    CS_FORWARD_MEMORY(r, CS_PASSTHROUGH_GRAPH, cs_current_device(), cs_graphs_exec_bytes((uintptr_t)exec), stream, \
                      name, pfn, exec, stream);                                                   \
    return r;                                                                                     \
  }
CS_GRAPH_UPLOAD_HOOK(cuGraphUpload, PFN_cuGraphUpload_v11010)
CS_GRAPH_UPLOAD_HOOK(cuGraphUpload_ptsz, PFN_cuGraphUpload_v11010_ptsz)

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  CUresult r;
  CS_FORWARD(r, cuGraphExecDestroy, PFN_cuGraphExecDestroy_v10000, exec);
  if (r == CUDA_SUCCESS) cs_graphs_exec_destroyed((uintptr_t)exec);
  return r;
}

/* ---- IPC ---- */

/* The driver knows an import's size (the exporter's allocation); drawn on the current device. */
static void cs_ipc_opened(CUdeviceptr dptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  PFN_cuMemGetAddressRange_v3020 range = CS_REAL_FN(cuMemGetAddressRange_v2, PFN_cuMemGetAddressRange_v3020);
  if (!range || range(&base, &size, dptr) != CUDA_SUCCESS) size = 0;
  cs_passthrough_add_here(CS_PASSTHROUGH_IPC, dptr, size, 0);
}

CUresult cuIpcOpenMemHandle(CUdeviceptr *dptr, CUipcMemHandle handle, unsigned int flags) {
  CUresult r;
  CS_FORWARD(r, cuIpcOpenMemHandle, PFN_cuIpcOpenMemHandle_v4010, dptr, handle, flags);
  if (r == CUDA_SUCCESS) cs_ipc_opened(*dptr);
  return r;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *dptr, CUipcMemHandle handle, unsigned int flags) {
  CUresult r;
  CS_FORWARD(r, cuIpcOpenMemHandle_v2, PFN_cuIpcOpenMemHandle_v11000, dptr, handle, flags);
  if (r == CUDA_SUCCESS) cs_ipc_opened(*dptr);
  return r;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  CUresult r;
  cs_passthrough_pending_t freeing;
  cs_free_begin(&freeing, CS_PASSTHROUGH_IPC, dptr);
  CS_FORWARD_FREE(r, &freeing, cuIpcCloseMemHandle, PFN_cuIpcCloseMemHandle_v4010, dptr);
  return r;
}

/* A legacy IPC handle names a driver allocation, which the importer maps from its start. For a
 * block that starts its segment (every block over 1 MiB by default, every block with
 * ipc_small:True) that start is the block's, and the driver's answer is the one it gives without
 * cudasnap, interior pointers included. A block cut from a shared segment at an offset has no
 * handle of its own: the driver's answer would make the importer read and write the segment's
 * first block, silently. So the call fails as for a pointer the driver cannot export, with one
 * line saying why and what to set (docs/design.md, "IPC"). */
CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr) {
  CUresult r;
  uintptr_t segment = 0, block = 0;
  if (dptr != 0 && cs_contexts_find_block((uintptr_t)dptr, &segment, &block) && block != segment) {
    cs_log_warn("cuIpcGetMemHandle(0x%llx) refused (CUDA_ERROR_INVALID_VALUE): the block lies %llu bytes "
                "into a cudasnap segment shared with other blocks, and another process would map the "
                "segment's start, not this block; run with CUDASNAP_ALLOC_CONF=ipc_small:True (blocks of "
                "1 MiB or less get segments of their own)%s or CUDASNAP_CACHE=0",
                (unsigned long long)dptr, (unsigned long long)(block - segment),
                cs_runtime_options()->alloc.split_large ? ", without split_large," : "");
    return CUDA_ERROR_INVALID_VALUE;
  }
  CS_FORWARD(r, cuIpcGetMemHandle, PFN_cuIpcGetMemHandle_v4010, handle, dptr);
  return r;
}

/* ------------------------------------------------------------------------------------------------
 * Contexts: forget a context's pools once the driver has torn it down. Only after its success: a
 * teardown it refuses (a bad handle, a primary context passed to cuCtxDestroy) leaves the context
 * and every block the program holds in it alive. The driver frees the context's memory itself, so
 * nothing is released by cudasnap (no CUDA call on the context is possible afterwards).
 * ----------------------------------------------------------------------------------------------*/

#define CS_PRIMARY_RESET_HOOK(name, pfn)                                                          \
  CUresult name(CUdevice dev) {                                                                   \
    CUresult r;                                                                                   \
    CS_FORWARD(r, name, pfn, dev);                                                                \
    if (r == CUDA_SUCCESS) cs_contexts_drop_primary(dev, false);                                  \
    return r;                                                                                     \
  }
CS_PRIMARY_RESET_HOOK(cuDevicePrimaryCtxReset, PFN_cuDevicePrimaryCtxReset_v7000)
CS_PRIMARY_RESET_HOOK(cuDevicePrimaryCtxReset_v2, PFN_cuDevicePrimaryCtxReset_v11000)

/* A release destroys the primary context only when its last reference goes: ask afterwards. */
#define CS_PRIMARY_RELEASE_HOOK(name, pfn)                                                        \
  CUresult name(CUdevice dev) {                                                                   \
    CUresult r;                                                                                   \
    CS_FORWARD(r, name, pfn, dev);                                                                \
    unsigned flags = 0;                                                                           \
    int active = 1;                                                                               \
    PFN_cuDevicePrimaryCtxGetState_v7000 get_state =                                              \
        CS_REAL_FN(cuDevicePrimaryCtxGetState, PFN_cuDevicePrimaryCtxGetState_v7000);              \
    if (r == CUDA_SUCCESS && get_state && get_state(dev, &flags, &active) == CUDA_SUCCESS && !active) \
      cs_contexts_drop_primary(dev, false);                                                       \
    return r;                                                                                     \
  }
CS_PRIMARY_RELEASE_HOOK(cuDevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v7000)
CS_PRIMARY_RELEASE_HOOK(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000)

#define CS_CTX_DESTROY_HOOK(name, pfn)                                                            \
  CUresult name(CUcontext ctx) {                                                                  \
    CUresult r;                                                                                   \
    CS_FORWARD(r, name, pfn, ctx);                                                                \
    if (r == CUDA_SUCCESS) cs_contexts_drop(ctx, false);                                          \
    return r;                                                                                     \
  }
CS_CTX_DESTROY_HOOK(cuCtxDestroy, PFN_cuCtxDestroy_v2000)
CS_CTX_DESTROY_HOOK(cuCtxDestroy_v2, PFN_cuCtxDestroy_v4000)

/* ------------------------------------------------------------------------------------------------
 * Streams and captures
 * ----------------------------------------------------------------------------------------------*/

static uintptr_t cs_current_context(void) {
  CUcontext ctx = NULL;
  PFN_cuCtxGetCurrent_v4000 get_current = CS_REAL_FN(cuCtxGetCurrent, PFN_cuCtxGetCurrent_v4000);
  if (get_current) get_current(&ctx);
  return (uintptr_t)ctx;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  CUresult r;
  CS_FORWARD(r, cuStreamCreate, PFN_cuStreamCreate_v2000, stream, flags);
  if (r == CUDA_SUCCESS) cs_streams_created((uintptr_t)*stream, cs_current_context(), flags);
  return r;
}

CUresult cuStreamCreateWithPriority(CUstream *stream, unsigned int flags, int priority) {
  CUresult r;
  CS_FORWARD(r, cuStreamCreateWithPriority, PFN_cuStreamCreateWithPriority_v5050, stream, flags, priority);
  if (r == CUDA_SUCCESS) cs_streams_created((uintptr_t)*stream, cs_current_context(), flags);
  return r;
}

/* Green contexts' streams are always non-blocking, and their work may use any block of the
 * device: every fence covers them. */
CUresult cuGreenCtxStreamCreate(CUstream *stream, CUgreenCtx green, unsigned int flags, int priority) {
  CUresult r;
  CS_FORWARD(r, cuGreenCtxStreamCreate, PFN_cuGreenCtxStreamCreate_v12050, stream, green, flags, priority);
  if (r == CUDA_SUCCESS && stream) cs_streams_green_created((uintptr_t)*stream);
  return r;
}

/* The event that keeps the stream's pending work in later fences is recorded before the driver
 * destroys it (cs_streams_destroyed). */
#define CS_STREAM_DESTROY_HOOK(name, pfn)                                                         \
  CUresult name(CUstream stream) {                                                                \
    CUresult r;                                                                                   \
    cs_streams_destroyed((uintptr_t)stream);                                                      \
    CS_FORWARD(r, name, pfn, stream);                                                             \
    return r;                                                                                     \
  }
CS_STREAM_DESTROY_HOOK(cuStreamDestroy, PFN_cuStreamDestroy_v2000)
CS_STREAM_DESTROY_HOOK(cuStreamDestroy_v2, PFN_cuStreamDestroy_v4000)

#define CS_BEGIN_CAPTURE_HOOK(name, pfn)                                                          \
  CUresult name(CUstream stream, CUstreamCaptureMode mode) {                                      \
    CUresult r;                                                                                   \
    CS_FORWARD(r, name, pfn, stream, mode);                                                       \
    if (r == CUDA_SUCCESS) cs_streams_capture_began((uintptr_t)stream, (int)mode);                \
    return r;                                                                                     \
  }
CS_BEGIN_CAPTURE_HOOK(cuStreamBeginCapture_v2, PFN_cuStreamBeginCapture_v10010)
CS_BEGIN_CAPTURE_HOOK(cuStreamBeginCapture_v2_ptsz, PFN_cuStreamBeginCapture_v10010_ptsz)

/* The CUDA 10.0 form takes no mode (global capture). */
#define CS_BEGIN_CAPTURE_V1_HOOK(name, pfn)                                                       \
  CUresult name(CUstream stream) {                                                                \
    CUresult r;                                                                                   \
    CS_FORWARD(r, name, pfn, stream);                                                             \
    if (r == CUDA_SUCCESS) cs_streams_capture_began((uintptr_t)stream, CU_STREAM_CAPTURE_MODE_GLOBAL); \
    return r;                                                                                     \
  }
CS_BEGIN_CAPTURE_V1_HOOK(cuStreamBeginCapture, PFN_cuStreamBeginCapture_v10000)
CS_BEGIN_CAPTURE_V1_HOOK(cuStreamBeginCapture_ptsz, PFN_cuStreamBeginCapture_v10000_ptsz)

#define CS_BEGIN_CAPTURE_TO_GRAPH_HOOK(name, pfn)                                                 \
  CUresult name(CUstream stream, CUgraph graph, const CUgraphNode *deps, const CUgraphEdgeData *edges, \
                size_t n, CUstreamCaptureMode mode) {                                             \
    CUresult r;                                                                                   \
    CS_FORWARD(r, name, pfn, stream, graph, deps, edges, n, mode);                                \
    if (r == CUDA_SUCCESS) cs_streams_capture_began((uintptr_t)stream, (int)mode);                \
    return r;                                                                                     \
  }
CS_BEGIN_CAPTURE_TO_GRAPH_HOOK(cuStreamBeginCaptureToGraph, PFN_cuStreamBeginCaptureToGraph_v12030)
CS_BEGIN_CAPTURE_TO_GRAPH_HOOK(cuStreamBeginCaptureToGraph_ptsz, PFN_cuStreamBeginCaptureToGraph_v12030_ptsz)

/* A capture ends with the call even when the driver reports it invalidated. */
#define CS_END_CAPTURE_HOOK(name, pfn)                                                            \
  CUresult name(CUstream stream, CUgraph *graph) {                                                \
    CUresult r;                                                                                   \
    CS_FORWARD(r, name, pfn, stream, graph);                                                      \
    cs_streams_capture_ended((uintptr_t)stream);                                                  \
    return r;                                                                                     \
  }
CS_END_CAPTURE_HOOK(cuStreamEndCapture, PFN_cuStreamEndCapture_v10000)
CS_END_CAPTURE_HOOK(cuStreamEndCapture_ptsz, PFN_cuStreamEndCapture_v10000_ptsz)

/* ------------------------------------------------------------------------------------------------
 * Start
 * ----------------------------------------------------------------------------------------------*/

CUresult cuInit(unsigned int flags) {
  CUresult r;
  CS_FORWARD(r, cuInit, PFN_cuInit_v2000, flags);
  cs_lifecycle_activate();
  return r;
}

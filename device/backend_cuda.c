/* SPDX-License-Identifier: Apache-2.0 */
/* The driver behind the allocator. Every call is made in the backend's own context (pushed when
 * another one is current: an API call or a free may come from any thread), through the real
 * functions, never through cudasnap's hooks. */
#include "device/backend_cuda.h"

#include "common/cs_error.h"
#include "device/driver_watch.h"
#include "device/passthrough_mem.h"
#include "device/streams.h"
#include "real/real.h"

_Static_assert(CS_ENOMEM == 1, "cs_cuda_status maps OOM to -CS_ENOMEM");

/* Make ctx current if it is not; returns whether it was pushed. */
static bool cs_ctx_enter(CUcontext ctx) {
  CUcontext current = NULL;
  CS_REAL_FN(cuCtxGetCurrent, PFN_cuCtxGetCurrent_v4000)(&current);
  if (current == ctx) return false;
  return CS_REAL_FN(cuCtxPushCurrent_v2, PFN_cuCtxPushCurrent_v4000)(ctx) == CUDA_SUCCESS;
}

static void cs_ctx_leave(bool pushed) {
  CUcontext popped;
  if (pushed) CS_REAL_FN(cuCtxPopCurrent_v2, PFN_cuCtxPopCurrent_v4000)(&popped);
}

static int cs_cuda_segment_alloc(void *self, size_t size, uintptr_t *addr) {
  cs_cuda_backend_t *b = self;
  bool pushed = cs_ctx_enter(b->ctx);
  /* During a capture the allocation must not be captured: relaxed mode allows it, as PyTorch's
   * cudaMallocMaybeCapturing does (interposition.md section 7.6). */
  bool capturing = cs_streams_capture_underway();
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange =
      CS_REAL_FN(cuThreadExchangeStreamCaptureMode, PFN_cuThreadExchangeStreamCaptureMode_v10010);
  if (capturing && exchange) exchange(&mode);
  CUdeviceptr p = 0;
  CUresult r = CS_REAL_FN(cuMemAlloc_v2, PFN_cuMemAlloc_v3020)(&p, size);
  if (r == CUDA_SUCCESS) {
    /* a pass-through free in flight there was done: recorded before the segment is (passthrough_mem.h) */
    cs_passthrough_reused((uintptr_t)p, size);
    b->held += size;
    /* the slow path: the driver may be asked for its figures at a new high, in this context
     * (not while a capture is underway: a later slow path or the snapshot catches up) */
    cs_driver_watch_cache_grew(b->device, size, !capturing);
  }
  if (capturing && exchange) exchange(&mode);
  cs_ctx_leave(pushed);
  if (r == CUDA_SUCCESS) *addr = (uintptr_t)p;
  return cs_cuda_status(r);
}

static int cs_cuda_segment_free(void *self, uintptr_t addr, size_t size) {
  cs_cuda_backend_t *b = self;
  bool pushed = cs_ctx_enter(b->ctx);
  if (!cs_streams_capture_underway()) cs_driver_watch_cache_releasing(b->device);
  CUresult r = CS_REAL_FN(cuMemFree_v2, PFN_cuMemFree_v3020)((CUdeviceptr)addr);
  cs_ctx_leave(pushed);
  if (r == CUDA_SUCCESS) {
    b->held -= size < b->held ? size : b->held;
    cs_driver_watch_cache_released(b->device, size);
  }
  return (int)r;
}

static int cs_cuda_mem_info(void *self, size_t *free_bytes, size_t *total_bytes) {
  cs_cuda_backend_t *b = self;
  bool pushed = cs_ctx_enter(b->ctx);
  CUresult r = CS_REAL_FN(cuMemGetInfo_v2, PFN_cuMemGetInfo_v3020)(free_bytes, total_bytes);
  cs_ctx_leave(pushed);
  return (int)r;
}

static int cs_cuda_synchronize(void *self) {
  cs_cuda_backend_t *b = self;
  bool pushed = cs_ctx_enter(b->ctx);
  CUresult r = CS_REAL_FN(cuCtxSynchronize, PFN_cuCtxSynchronize_v2000)();
  cs_ctx_leave(pushed);
  /* green contexts' streams and destroyed streams' last work, which cuCtxSynchronize may not cover */
  int streams = cs_streams_synchronized((uintptr_t)b->ctx);
  return r == CUDA_SUCCESS ? streams : (int)r;
}

static int cs_cuda_event_create(void *self, uintptr_t *event) {
  cs_cuda_backend_t *b = self;
  bool pushed = cs_ctx_enter(b->ctx);
  CUevent e = NULL;
  CUresult r = CS_REAL_FN(cuEventCreate, PFN_cuEventCreate_v2000)(&e, CU_EVENT_DISABLE_TIMING);
  cs_ctx_leave(pushed);
  if (r == CUDA_SUCCESS) *event = (uintptr_t)e;
  return (int)r;
}

static int cs_cuda_event_record(void *self, uintptr_t event, uintptr_t stream) {
  cs_cuda_backend_t *b = self;
  bool pushed = cs_ctx_enter(b->ctx);
  CUresult r = CS_REAL_FN(cuEventRecord, PFN_cuEventRecord_v2000)((CUevent)event, (CUstream)stream);
  cs_ctx_leave(pushed);
  return (int)r;
}

static int cs_cuda_event_query(void *self, uintptr_t event) {
  (void)self; /* an event query needs no current context */
  CUresult r = CS_REAL_FN(cuEventQuery, PFN_cuEventQuery_v2000)((CUevent)event);
  return r == CUDA_ERROR_NOT_READY ? -CS_EAGAIN : (int)r;
}

static int cs_cuda_event_destroy(void *self, uintptr_t event) {
  (void)self;
  return (int)CS_REAL_FN(cuEventDestroy_v2, PFN_cuEventDestroy_v4000)((CUevent)event);
}

static bool cs_cuda_is_capturing(void *self) {
  (void)self;
  return cs_streams_capture_underway();
}

static size_t cs_cuda_fence_streams(void *self, uintptr_t *streams, size_t cap) {
  cs_cuda_backend_t *b = self;
  return cs_streams_fence_set((uintptr_t)b->ctx, streams, cap);
}

static const cs_backend_ops_t cs_cuda_ops = {
    .segment_alloc = cs_cuda_segment_alloc,
    .segment_free = cs_cuda_segment_free,
    .mem_info = cs_cuda_mem_info,
    .synchronize = cs_cuda_synchronize,
    .event_create = cs_cuda_event_create,
    .event_record = cs_cuda_event_record,
    .event_query = cs_cuda_event_query,
    .event_destroy = cs_cuda_event_destroy,
    .is_capturing = cs_cuda_is_capturing,
    .fence_streams = cs_cuda_fence_streams,
};

cs_backend_t cs_cuda_backend(cs_cuda_backend_t *b) { return (cs_backend_t){.ops = &cs_cuda_ops, .self = b}; }

void cs_cuda_backend_forgot(cs_cuda_backend_t *b) {
  cs_driver_watch_cache_released(b->device, b->held);
  b->held = 0;
}

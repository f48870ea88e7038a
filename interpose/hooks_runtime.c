/* SPDX-License-Identifier: Apache-2.0 */
/* Runtime hooks for programs linked with a dynamic libcudart: a label and a forward, and on a
 * failure a note of the first one. Static cudart (nvcc's default) and the math libraries'
 * embedded cudart never come here; they reach the driver hooks through dlsym and cuGetProcAddress
 * like everything else. */
#include "interpose/hooks_runtime.h"

#include <stdatomic.h>
#include <stdint.h>

#include "interpose/cudart_api.h"
#include "interpose/guard.h"
#include "interpose/hooks.h"
#include "real/real.h"

CS_TLS int cs_rt_label;

/* The first runtime call that failed, packed as (fn + 1) << 32 | error; 0: none. A program whose
 * runtime finds no driver makes no driver call at all, so this is all cudasnap sees of its CUDA
 * use: `cudasnap run` says at exit that its calls failed, and why (interpose/preload.c). Set on
 * the failure path only. */
static _Atomic uint64_t cs_rt_failure;

static CS_COLD void cs_rt_failed(cs_fn_t fn, cudaError_t error) {
  uint64_t none = 0;
  atomic_compare_exchange_strong_explicit(&cs_rt_failure, &none, (uint64_t)(fn + 1) << 32 | (uint32_t)error,
                                          memory_order_relaxed, memory_order_relaxed);
}

bool cs_rt_first_failure(int *fn, int *error) {
  uint64_t f = atomic_load_explicit(&cs_rt_failure, memory_order_relaxed);
  if (f == 0) return false;
  *fn = (int)(f >> 32) - 1;
  *error = (int)(uint32_t)f;
  return true;
}

/* Forward to the next definition (libcudart's) with the label set; restore it after, so a runtime
 * function implemented on top of another keeps the outer label. A failure is noted (above). */
#define CS_RT_LABEL_HOOK(name, params, args)                                                      \
  cudaError_t name params {                                                                       \
    typedef cudaError_t(*cs_fn_type_) params;                                                     \
    cs_fn_type_ real = (cs_fn_type_)cs_real(CS_FN_##name);                                        \
    if (CS_UNLIKELY(!real)) return cudaErrorInitializationError;                                  \
    int outer = cs_rt_label;                                                                      \
    cs_rt_label = CS_FN_##name;                                                                   \
    cudaError_t r = real args;                                                                    \
    cs_rt_label = outer;                                                                          \
    if (CS_UNLIKELY(r != cudaSuccess)) cs_rt_failed(CS_FN_##name, r);                             \
    return r;                                                                                     \
  }

CS_RT_LABEL_HOOK(cudaMalloc, (void **ptr, size_t size), (ptr, size))
CS_RT_LABEL_HOOK(cudaFree, (void *ptr), (ptr))
CS_RT_LABEL_HOOK(cudaMallocAsync, (void **ptr, size_t size, cudaStream_t stream), (ptr, size, stream))
CS_RT_LABEL_HOOK(cudaFreeAsync, (void *ptr, cudaStream_t stream), (ptr, stream))
CS_RT_LABEL_HOOK(cudaMallocFromPoolAsync, (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream),
                 (ptr, size, pool, stream))
CS_RT_LABEL_HOOK(cudaMallocPitch, (void **ptr, size_t *pitch, size_t width, size_t height),
                 (ptr, pitch, width, height))
CS_RT_LABEL_HOOK(cudaMalloc3D, (struct cudaPitchedPtr * ptr, struct cudaExtent extent), (ptr, extent))
CS_RT_LABEL_HOOK(cudaMallocManaged, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))
CS_RT_LABEL_HOOK(cudaMallocHost, (void **ptr, size_t size), (ptr, size))
CS_RT_LABEL_HOOK(cudaHostAlloc, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))
CS_RT_LABEL_HOOK(cudaFreeHost, (void *ptr), (ptr))
CS_RT_LABEL_HOOK(cudaHostRegister, (void *ptr, size_t size, unsigned int flags), (ptr, size, flags))
CS_RT_LABEL_HOOK(cudaMallocArray,
                 (cudaArray_t * array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height,
                  unsigned int flags),
                 (array, desc, width, height, flags))
CS_RT_LABEL_HOOK(cudaMalloc3DArray,
                 (cudaArray_t * array, const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
                  unsigned int flags),
                 (array, desc, extent, flags))
CS_RT_LABEL_HOOK(cudaMemGetInfo, (size_t *free_bytes, size_t *total_bytes), (free_bytes, total_bytes))
CS_RT_LABEL_HOOK(cudaDeviceReset, (void), ())
CS_RT_LABEL_HOOK(cudaGetDeviceCount, (int *count), (count))
CS_RT_LABEL_HOOK(cudaSetDevice, (int device), (device))

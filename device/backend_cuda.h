/* SPDX-License-Identifier: Apache-2.0 */
/* cs_backend_t over the real CUDA driver, for one context. */
#ifndef CS_BACKEND_CUDA_H
#define CS_BACKEND_CUDA_H

#include "allocator/backend.h"
#include "real/cuda_api.h"

typedef struct cs_cuda_backend_s {
  CUcontext ctx;
  CUdevice device;
  uint64_t held;      /* bytes of segments from the driver not given back; under the allocator's lock */
} cs_cuda_backend_t;

cs_backend_t cs_cuda_backend(cs_cuda_backend_t *b);

/* The context is gone and the allocator forgot its segments without the driver (allocator
 * drop_all): what they held is no longer seen (device/driver_watch.h). */
void cs_cuda_backend_forgot(cs_cuda_backend_t *b);

/* CUresult <-> the allocator's return convention (allocator/backend.h). */
static inline int cs_cuda_status(CUresult r) {
  return r == CUDA_ERROR_OUT_OF_MEMORY ? -1 /* -CS_ENOMEM */ : (int)r;
}

#endif

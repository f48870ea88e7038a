/* SPDX-License-Identifier: Apache-2.0 */
/* For the test programs that use the driver API directly (linked with the fake libcuda.so.1):
 * the primary context of device 0, and the workload's operations through the driver. */
#ifndef CS_IT_DRIVER_H
#define CS_IT_DRIVER_H

#include <cuda.h>

#include "tests/integration/it_common.h"

/* cuInit, then make device 0's primary context current; returns it. */
static inline CUcontext it_driver_context(void) {
  CUdevice dev;
  CUcontext ctx;
  IT_CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuInit failed");
  IT_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS,
           "no context");
  return ctx;
}

static inline int it_driver_alloc(uint64_t *dptr, size_t n) {
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc(&p, n);
  *dptr = p;
  return (int)r;
}
static inline int it_driver_free(uint64_t dptr) { return (int)cuMemFree((CUdeviceptr)dptr); }
static inline int it_driver_htod(uint64_t dst, const void *src, size_t n) {
  return (int)cuMemcpyHtoD((CUdeviceptr)dst, src, n);
}
static inline int it_driver_dtoh(void *dst, uint64_t src, size_t n) {
  return (int)cuMemcpyDtoH(dst, (CUdeviceptr)src, n);
}
static const it_ops_t it_driver_ops = {it_driver_alloc, it_driver_free, it_driver_htod, it_driver_dtoh};

/* The parameters of a graph memory node of `bytes` on device 0, for cuGraphAddMemAllocNode. */
/* cuMemAlloc / cuMemFree that must succeed: the program stops with the driver's error otherwise. */
static inline CUdeviceptr it_alloc_ok(size_t n) {
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc(&p, n);
  IT_CHECK(r == CUDA_SUCCESS && p, "cuMemAlloc_v2(%zu): error %d", n, (int)r);
  return p;
}

static inline void it_free_ok(CUdeviceptr p) {
  CUresult r = cuMemFree(p);
  IT_CHECK(r == CUDA_SUCCESS, "cuMemFree_v2(0x%llx): error %d", (unsigned long long)p, (int)r);
}

static inline CUDA_MEM_ALLOC_NODE_PARAMS it_alloc_node_params(size_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.bytesize = bytes;
  return p;
}

#endif

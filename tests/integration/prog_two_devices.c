/* SPDX-License-Identifier: Apache-2.0 */
/* Allocations on two devices (one primary context each), some freed, one of each left live: the
 * snapshot has segments of both devices and one trace list per device. */
#include "tests/integration/it_driver.h"

int main(void) {
  CUdevice dev[2];
  CUcontext ctx[2];
  CUdeviceptr keep[2] = {0, 0};
  IT_CHECK(cuInit(0) == CUDA_SUCCESS, "cuInit failed");
  for (int d = 0; d < 2; d++) {
    IT_CHECK(cuDeviceGet(&dev[d], d) == CUDA_SUCCESS, "no device %d", d);
    IT_CHECK(cuDevicePrimaryCtxRetain(&ctx[d], dev[d]) == CUDA_SUCCESS, "no context on %d", d);
    IT_CHECK(cuCtxSetCurrent(ctx[d]) == CUDA_SUCCESS, "cuCtxSetCurrent %d", d);
    for (int i = 0; i < 8; i++) {
      CUdeviceptr p = 0;
      IT_CHECK(cuMemAlloc(&p, (size_t)(i + 1 + 3 * d) << 18) == CUDA_SUCCESS, "alloc on %d", d);
      if (i == 5) keep[d] = p;
      else IT_CHECK(cuMemFree(p) == CUDA_SUCCESS, "free on %d", d);
    }
  }
  if (cudasnap_memory_allocated) {
    IT_CHECK(cudasnap_memory_allocated(0) > 0 && cudasnap_memory_allocated(1) > 0, "both devices hold memory");
  }
  for (int d = 0; d < 2; d++) {
    IT_CHECK(cuCtxSetCurrent(ctx[d]) == CUDA_SUCCESS, "cuCtxSetCurrent %d", d);
    IT_CHECK(cuMemFree(keep[d]) == CUDA_SUCCESS, "free kept on %d", d);
  }
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 24, defect 6: a context teardown the driver refuses changes nothing. cuCtxDestroy of the
 * primary context is refused (primary contexts go through cuDevicePrimaryCtxRelease); the
 * program's blocks in it live on, usable and freeable, and cudasnap still counts them.
 *
 *   it_teardown refused   prints "refused ok" */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "tests/integration/it_common.h"

enum { IT_BLOCK = 4 << 20 }; /* a whole large segment: counted as it is */

int main(int argc, char **argv) {
  IT_CHECK(argc == 2 && strcmp(argv[1], "refused") == 0, "usage: it_teardown refused");
  IT_CHECK(it_preloaded(), "this test needs cudasnap preloaded");
  IT_CHECK(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0) failed");
  void *p = NULL;
  IT_CHECK(cudaMalloc(&p, IT_BLOCK) == cudaSuccess, "cudaMalloc failed");
  IT_CHECK(cudaMemset(p, 0x5a, IT_BLOCK) == cudaSuccess, "cudaMemset failed");
  CUcontext primary = NULL;
  IT_CHECK(cuCtxGetCurrent(&primary) == CUDA_SUCCESS && primary, "no current context");
  CUresult r = cuCtxDestroy(primary);
  IT_CHECK(r != CUDA_SUCCESS, "cuCtxDestroy of the primary context succeeded");

  IT_CHECK(cudasnap_memory_allocated(0) == IT_BLOCK,
           "after a refused cuCtxDestroy cudasnap_memory_allocated(0) = %" PRId64 ", expected %d",
           cudasnap_memory_allocated(0), IT_BLOCK);
  unsigned char host[4096], back[4096];
  for (size_t i = 0; i < sizeof host; i++) host[i] = (unsigned char)(i * 5 + 1);
  IT_CHECK(cudaMemcpy(p, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess, "cudaMemcpy failed");
  IT_CHECK(cudaMemcpy(back, p, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess, "cudaMemcpy failed");
  IT_CHECK(memcmp(host, back, sizeof host) == 0, "data mismatch after the refused teardown");
  IT_CHECK(cudaFree(p) == cudaSuccess, "cudaFree after the refused teardown failed");
  IT_CHECK(cudasnap_memory_allocated(0) == 0, "after the cudaFree cudasnap_memory_allocated(0) = %" PRId64,
           cudasnap_memory_allocated(0));
  printf("refused ok\n");
  return 0;
}

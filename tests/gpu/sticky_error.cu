/* SPDX-License-Identifier: Apache-2.0 */
// Check 2 of scripts/gpu-check.sh: a kernel fault raised before a free is reported at that free.
//
// The real cudaFree synchronizes and returns the error of earlier asynchronous work (an illegal
// address here). cudasnap in its default sync mode must do the same even though the block goes
// back to its cache instead of the driver; the script compares FREE_ERROR with a run without
// cudasnap and expects it non-zero. The kernel writes through a bad pointer passed from the host,
// so the compiler cannot see the fault coming.
#include "tests/gpu/gc_common.h"

__global__ void gc_fault(volatile int *bad) { *bad = 1; }

int main() {
  void *p = nullptr;
  GC_CHECK(cudaMalloc(&p, 1u << 20));
  GC_CHECK(cudaDeviceSynchronize());
  gc_fault<<<1, 1>>>(reinterpret_cast<int *>(static_cast<uintptr_t>(0x10)));
  GC_CHECK(cudaGetLastError()); // the launch itself succeeds; the fault comes later
  const cudaError_t e = cudaFree(p); // no synchronization in between
  std::printf("FREE_ERROR %d\nFREE_ERROR_NAME %s\n", static_cast<int>(e), cudaGetErrorName(e));
  return 0; // the context is unusable now: make no further CUDA call
}

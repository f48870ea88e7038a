/* SPDX-License-Identifier: Apache-2.0 */
/* One rank of a fake job, for `cudasnap ranks` (tests/cli/ranks_test.sh): its RANK picks its
 * workload. Every rank holds 4 MiB of weights (hold_weights) and RANK MiB of activations
 * (hold_activations); rank 3 also holds 96 MiB of embeddings (hold_embeddings: the first pipeline
 * stage, the rank that peaks); rank 5 allocates 3 MiB blocks until the device is full (run it with
 * a small FAKE_CUDA_CAPACITY: an OOM, then frees them). Exits 0 with everything freed. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/integration/it_driver.h"

enum { RANKS_MAX_BLOCKS = 256 };

static __attribute__((noinline)) CUdeviceptr hold_weights(void) {
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAlloc(&p, 4 << 20) == CUDA_SUCCESS, "cuMemAlloc 4 MiB");
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
  return p;
}

static __attribute__((noinline)) CUdeviceptr hold_activations(size_t mib) {
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAlloc(&p, mib << 20) == CUDA_SUCCESS, "cuMemAlloc %zu MiB", mib);
  __asm__ volatile("" ::: "memory");
  return p;
}

static __attribute__((noinline)) CUdeviceptr hold_embeddings(void) {
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAlloc(&p, (size_t)96 << 20) == CUDA_SUCCESS, "cuMemAlloc 96 MiB");
  __asm__ volatile("" ::: "memory");
  return p;
}

static __attribute__((noinline)) void fill_until_oom(void) {
  static CUdeviceptr blocks[RANKS_MAX_BLOCKS];
  int n = 0;
  CUresult r = CUDA_SUCCESS;
  while (n < RANKS_MAX_BLOCKS && (r = cuMemAlloc(&blocks[n], 3 << 20)) == CUDA_SUCCESS) n++;
  IT_CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "filling the device ended with %d after %d blocks", (int)r, n);
  for (int i = 0; i < n; i++) IT_CHECK(cuMemFree(blocks[i]) == CUDA_SUCCESS, "cuMemFree");
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  const char *env = getenv("RANK");
  int rank = env ? atoi(env) : 0;
  (void)it_driver_context();
  CUdeviceptr weights = hold_weights();
  CUdeviceptr act = hold_activations((size_t)rank + 1);
  CUdeviceptr emb = rank == 3 ? hold_embeddings() : 0;
  if (rank == 5) fill_until_oom();
  if (emb) IT_CHECK(cuMemFree(emb) == CUDA_SUCCESS, "cuMemFree");
  IT_CHECK(cuMemFree(act) == CUDA_SUCCESS && cuMemFree(weights) == CUDA_SUCCESS, "cuMemFree");
  return 0;
}

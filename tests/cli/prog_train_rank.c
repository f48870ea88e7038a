/* SPDX-License-Identifier: Apache-2.0 */
/* One rank of a two-rank training job, built with -O2 -g as the jobs users profile are (issue 46;
 * names_test.sh). Each step allocates its activations and frees them. At step 2 the rank keeps a
 * buffer for logging (3 MiB per rank from 1) in stash_for_logging, a static function -O2 inlines into main, and never
 * frees it: the leak, whose site must read stash_for_logging, with main as its caller. Rank 1
 * also asks it for 1 TiB at step 1 first: an out-of-memory error at the same site, which the
 * program passes over. The lines the test looks for carry a "@site" or "@call" mark. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/integration/it_driver.h"

enum { TRAIN_STEPS = 4, TRAIN_LOGGED = 4 };

static CUdeviceptr logged[TRAIN_LOGGED];
static int nlogged;

static __attribute__((noinline)) CUdeviceptr load_weights(size_t mib) {
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAlloc(&p, mib << 20) == CUDA_SUCCESS, "cuMemAlloc %zu MiB", mib); /* @site load_weights */
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
  return p;
}

static void stash_for_logging(size_t bytes) {
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc(&p, bytes); /* @site stash_for_logging */
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    printf("no room for %zu B of logging\n", bytes);
    return;
  }
  IT_CHECK(r == CUDA_SUCCESS, "cuMemAlloc %zu B: error %d", bytes, (int)r);
  logged[nlogged++ % TRAIN_LOGGED] = p;
}

int main(void) {
  const char *env = getenv("RANK");
  const int rank = env ? atoi(env) : 0;
  (void)it_driver_context();
  CUdeviceptr weights = load_weights(4);
  for (int step = 0; step < TRAIN_STEPS; step++) {
    CUdeviceptr act = 0;
    IT_CHECK(cuMemAlloc(&act, (size_t)(rank + 1) << 20) == CUDA_SUCCESS, "cuMemAlloc activations");
    if (step == 2 || (step == 1 && rank == 1))
      stash_for_logging(step == 1 ? (size_t)1 << 40 : (size_t)(3 + 3 * rank) << 20); /* @call stash_for_logging */
    IT_CHECK(cuMemFree(act) == CUDA_SUCCESS, "cuMemFree");
  }
  IT_CHECK(cuMemFree(weights) == CUDA_SUCCESS, "cuMemFree");
  printf("rank %d: %d buffer%s kept for logging\n", rank, nlogged, nlogged == 1 ? "" : "s");
  return 0;
}

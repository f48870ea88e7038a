/* SPDX-License-Identifier: Apache-2.0 */
/* A program that holds device memory while a test looks at it from outside (cudasnap dump).
 *
 * Phase 1 allocates 1 MiB in hold_small() and prints "ready 1"; after a line on stdin, phase 2
 * allocates 8 MiB in hold_large() and prints "ready 2"; at the end of stdin it frees everything
 * and exits 0. The test drives it through a pipe, so it waits without a timer. */
#include <stdio.h>

#include "tests/integration/it_driver.h"

static __attribute__((noinline)) CUdeviceptr hold_small(void) {
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAlloc(&p, 1 << 20) == CUDA_SUCCESS, "cuMemAlloc 1 MiB");
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
  return p;
}

static __attribute__((noinline)) CUdeviceptr hold_large(void) {
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAlloc(&p, 8 << 20) == CUDA_SUCCESS, "cuMemAlloc 8 MiB");
  __asm__ volatile("" ::: "memory");
  return p;
}

int main(void) {
  (void)it_driver_context();
  CUdeviceptr small = hold_small();
  printf("ready 1\n");
  fflush(stdout);
  int c;
  while ((c = getchar()) != EOF && c != '\n') continue;
  CUdeviceptr large = hold_large();
  printf("ready 2\n");
  fflush(stdout);
  while (getchar() != EOF) continue;
  IT_CHECK(cuMemFree(large) == CUDA_SUCCESS && cuMemFree(small) == CUDA_SUCCESS, "cuMemFree");
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* kill -9 with a recording file (issue 13): allocates weights in allocate_weights() (a known
 * function at a known line), leaks one block of them, runs some steps that allocate and free,
 * then prints "frame=allocate_weights <line>" and "ready" on stdout and waits to be killed.
 * With a second argument "spin" it goes on allocating and freeing until killed, so that the kill
 * lands anywhere, in the middle of recording an event too. record_kill.sh kills it with SIGKILL
 * and recovers the recording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/it_driver.h"

static int weights_line;

static __attribute__((noinline)) CUdeviceptr allocate_weights(size_t bytes) {
  CUdeviceptr p = 0;
  weights_line = __LINE__ + 1;
  CUresult r = cuMemAlloc(&p, bytes);
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
  IT_CHECK(r == CUDA_SUCCESS, "cuMemAlloc failed: %d", (int)r);
  return p;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 10;
  (void)it_driver_context();
  CUdeviceptr weights = allocate_weights(6 << 20);
  CUdeviceptr leak = allocate_weights(3 << 20);
  for (int step = 0; step < steps; step++) {
    CUdeviceptr act = 0;
    IT_CHECK(cuMemAlloc(&act, (size_t)(step % 16 + 1) << 16) == CUDA_SUCCESS, "step alloc");
    IT_CHECK(cuMemFree(act) == CUDA_SUCCESS, "step free");
  }
  IT_CHECK(cuMemFree(weights) == CUDA_SUCCESS, "free weights");
  (void)leak; /* never freed: the recovered snapshot holds it, named */
  printf("frame=allocate_weights %d\nready\n", weights_line);
  fflush(stdout);
  if (argc > 2 && strcmp(argv[2], "spin") == 0) {
    CUdeviceptr held[8] = {0};
    for (unsigned i = 0;; i++) { /* until SIGKILL: some blocks live at any moment */
      CUdeviceptr *slot = &held[i % 8];
      if (*slot) IT_CHECK(cuMemFree(*slot) == CUDA_SUCCESS, "spin free");
      *slot = 0;
      IT_CHECK(cuMemAlloc(slot, (size_t)(i % 13 + 1) << 14) == CUDA_SUCCESS, "spin alloc");
    }
  }
  for (;;) pause(); /* until SIGKILL */
}

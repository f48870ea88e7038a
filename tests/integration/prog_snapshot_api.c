/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots through the opt-in API (include/cudasnap.h), and the exit leak report.
 * Allocates weights in allocate_weights() (a known function at a known line, printed on stdout as
 * "frame=allocate_weights <line>"), runs some steps, dumps the same state as JSON and as pickle
 * (argv[1], argv[2]), switches the history off and on (which forgets it), and exits leaving one
 * block allocated on purpose. */
#include <stdio.h>

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
  IT_CHECK(argc == 3, "usage: %s OUT.json OUT.pickle", argv[0]);
  IT_CHECK(cudasnap_dump && cudasnap_record_history, "run under cudasnap");
  (void)it_driver_context();
  CUdeviceptr weights = allocate_weights(6 << 20);
  CUdeviceptr leak = allocate_weights(3 << 20);
  for (int step = 0; step < 10; step++) {
    CUdeviceptr act = 0;
    IT_CHECK(cuMemAlloc(&act, (size_t)(step + 1) << 16) == CUDA_SUCCESS, "step alloc");
    IT_CHECK(cuMemFree(act) == CUDA_SUCCESS, "step free");
  }
  IT_CHECK(cudasnap_dump(argv[1]) == 0, "dump to %s failed", argv[1]);
  IT_CHECK(cudasnap_dump(argv[2]) == 0, "dump to %s failed", argv[2]);
  cudasnap_record_history(0);
  cudasnap_record_history(1);
  IT_CHECK(cuMemFree(weights) == CUDA_SUCCESS, "free weights");
  (void)leak; /* never freed: the exit report names allocate_weights */
  printf("frame=allocate_weights %d\n", weights_line);
  return 0;
}

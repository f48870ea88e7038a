/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 28: the driver's answer at the peak (cudasnap.memory[].driver_at_peak). The program grows
 * to a peak on device 0, frees everything, gives the cache back to the driver, and takes a
 * snapshot (argv[2]), so that the driver's used bytes at the snapshot are below the peak's.
 * On stdout: "peak_used <bytes>", what the fake driver counted used at the peak.
 *   sampled   8 MiB, 150 ms later 16 MiB: each high asked at once
 *   catchup   8 MiB, 16 MiB at once (the second high within the rate limit), 150 ms later the
 *             frees and empty_cache: the driver is asked before the cache gives the peak back
 *   burst     8 MiB, 16 MiB at once, the frees and empty_cache at once: the answer may be the one
 *             on the way up (the test checks that the snapshot says which)
 * Run with CUDASNAP_CACHE=0, every allocation passes through (device/passthrough_mem.c's path). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tests/fakes/fake_cuda_control.h"
#include "tests/integration/it_driver.h"

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static size_t used_now(const fake_cuda_control_t *fc) {
  fake_cuda_counters_t counters;
  fc->get_counters(&counters);
  return counters.bytes_in_use;
}

int main(int argc, char **argv) {
  IT_CHECK(argc == 3, "usage: %s sampled|catchup|burst OUT.json", argv[0]);
  IT_CHECK(cudasnap_dump && cudasnap_empty_cache, "run under cudasnap");
  const char *mode = argv[1];
  (void)it_driver_context();
  fake_cuda_control_t fc;
  IT_CHECK(fake_cuda_control_load(&fc) == 0, "no fake driver");
  CUdeviceptr a = 0, b = 0;
  IT_CHECK(cuMemAlloc(&a, 8 << 20) == CUDA_SUCCESS, "alloc 8 MiB");
  if (strcmp(mode, "sampled") == 0) sleep_ms(150);
  IT_CHECK(cuMemAlloc(&b, 16 << 20) == CUDA_SUCCESS, "alloc 16 MiB");
  printf("peak_used %zu\n", used_now(&fc));
  if (strcmp(mode, "catchup") == 0) sleep_ms(150);
  IT_CHECK(cuMemFree(b) == CUDA_SUCCESS && cuMemFree(a) == CUDA_SUCCESS, "free");
  IT_CHECK(cudasnap_empty_cache(0) == 0, "empty_cache");
  /* a small block left, so that the snapshot is not empty */
  IT_CHECK(cuMemAlloc(&a, 1 << 20) == CUDA_SUCCESS, "alloc 1 MiB");
  printf("snapshot_used %zu\n", used_now(&fc));
  IT_CHECK(cudasnap_dump(argv[2]) == 0, "dump to %s failed", argv[2]);
  return 0;
}

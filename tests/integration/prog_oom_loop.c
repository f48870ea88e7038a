/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 24, defect 2: a program that meets out of memory on purpose, again and again, and recovers
 * each time (as PyTorch does when it trims its cache and retries, or cuDNN probing workspaces).
 * Run with FAKE_CUDA_CAPACITY=64 MiB:
 *
 *   it_oom_loop N    N times: ask for 1 GiB (out of memory), then allocate and free 1 MiB (it
 *                    succeeds). Prints "ooms=N" and "us_per_oom=<mean microseconds per round>".
 *
 *   it_oom_loop --signals DIR
 *                    two OOMs (the second once the first one's snapshot is written, so that
 *                    its snapshot is due 10 s later and not coalesced with the first), then
 *                    SIGUSR1 to itself every 300 ms for 16 s, and on until both
 *                    OOM snapshots are there or 60 s have passed; prints "oom_files=<*-oom.json
 *                    files in DIR>" just before it exits: the pending OOM must have been written
 *                    while the signals went on, not postponed by each signal's snapshot (issue
 *                    33), nor left to the exit. (16 s is enough on a quiet machine; on a loaded
 *                    one the signals' own snapshots can hold the control thread past it, which
 *                    is a slow machine, not the postponement: that never ends while they come.)
 *
 * Under cudasnap with oom in CUDASNAP_DUMP_ON, each OOM costs the program the state copy only;
 * the snapshots are coalesced (process/dump_trigger.c). Also bench/oom_loop.sh's workload. */
#include <cuda.h>
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "tests/integration/it_driver.h"

static double it_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int it_count_oom_files(const char *dir) {
  DIR *d = opendir(dir);
  IT_CHECK(d != NULL, "cannot open %s", dir);
  int n = 0;
  const char *suffix = "-oom.json";
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name), slen = strlen(suffix);
    if (len > slen && strcmp(e->d_name + len - slen, suffix) == 0) n++;
  }
  closedir(d);
  return n;
}

static int it_signals_while_oom_pending(const char *dir) {
  (void)it_driver_context();
  struct timespec step = {.tv_sec = 0, .tv_nsec = 300 * 1000000L};
  for (int i = 0; i < 2; i++) {
    CUdeviceptr p = 0;
    IT_CHECK(cuMemAlloc(&p, (size_t)1 << 30) == CUDA_ERROR_OUT_OF_MEMORY, "1 GiB did not fail with OOM");
    /* the first OOM's snapshot written before the second OOM: an OOM that comes while the one
     * before is still waiting for the control thread replaces it (coalesced), as designed */
    for (int w = 0; i == 0 && w < 30000 / 300 && it_count_oom_files(dir) == 0; w++) nanosleep(&step, NULL);
  }
  for (int i = 0; i < 60000 / 300; i++) {
    IT_CHECK(raise(SIGUSR1) == 0, "raise");
    nanosleep(&step, NULL);
    if (i >= 16000 / 300 && it_count_oom_files(dir) == 2) break;
  }
  printf("oom_files=%d\n", it_count_oom_files(dir));
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--signals") == 0) return it_signals_while_oom_pending(argv[2]);
  IT_CHECK(argc == 2, "usage: %s N | --signals DIR", argv[0]);
  long rounds = atol(argv[1]);
  IT_CHECK(rounds > 0, "N must be positive");
  (void)it_driver_context();
  CUdeviceptr keep = 0;
  IT_CHECK(cuMemAlloc(&keep, 4 * IT_MIB) == CUDA_SUCCESS, "the first allocation failed");
  double start = it_now_us();
  for (long i = 0; i < rounds; i++) {
    CUdeviceptr p = 0;
    IT_CHECK(cuMemAlloc(&p, (size_t)1 << 30) == CUDA_ERROR_OUT_OF_MEMORY, "1 GiB did not fail with OOM");
    IT_CHECK(cuMemAlloc(&p, IT_MIB) == CUDA_SUCCESS, "1 MiB after the OOM failed");
    IT_CHECK(cuMemFree(p) == CUDA_SUCCESS, "cuMemFree_v2 failed");
  }
  double took = it_now_us() - start;
  printf("ooms=%ld\nus_per_oom=%.1f\n", rounds, took / (double)rounds);
  IT_CHECK(cuMemFree(keep) == CUDA_SUCCESS, "cuMemFree_v2 failed");
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* What the live record's publication costs the program's allocating threads (issue 45): one
 * thread holds LIVE blocks, then times each allocate+free pair for SECONDS while cudasnap's control
 * thread publishes the live record (every second by default). A publication that holds the
 * allocator's lock for long shows as the longest pairs, one per publication.
 *
 *   bench_live_stall LIVE SECONDS
 *
 * Run it under LD_PRELOAD=libcudasnap.so on the fake driver (bench/live_stall.sh runs two builds by
 * turns). The held blocks are 512 bytes (one 2 MiB segment per 4,096 of them); the timed pairs
 * are 4096 bytes, as bench_hotpath's `same` pattern, 20 ms of them at a time with 2 ms pauses
 * (below). Prints one line of figures in ns:
 *
 *   pairs=N p50=.. p99=.. p999=.. p9999=.. max=.. over100us=N over1ms=N slowest=NS@S,...
 *
 * slowest: the five slowest pairs, ns@seconds from the start of the timed loop: a stall per
 * publication puts them about a second apart. Percentiles are exact to 10 ns up to 10 ms. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BUCKET_NS = 10, BUCKETS = 1000000, SLOWEST = 5 }; /* 10 ns buckets up to 10 ms */
/* Pairs for RUN_NS, then a pause of PAUSE_NS: the thread runs 91% of the time, so that a run at a
 * real-time priority (bench/live_stall.sh with BENCH_RT=1) stays under the kernel's real-time
 * throttling, which stops such threads for the rest of each second past 95% of it. */
enum { RUN_NS = 20000000, PAUSE_NS = 2000000 };

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "bench_live_stall: %s failed with status %d\n", what, rc);
  exit(1);
}

typedef struct slow_s {
  uint64_t ns, at_ns;
} slow_t;

/* The percentile q (0..1) of the histogram of n pairs, in ns. */
static uint64_t percentile(const uint32_t *hist, uint64_t n, double q) {
  uint64_t want = (uint64_t)(q * (double)n), seen = 0;
  for (size_t i = 0; i < BUCKETS; i++) {
    seen += hist[i];
    if (seen > want) return (uint64_t)i * BUCKET_NS;
  }
  return (uint64_t)BUCKETS * BUCKET_NS;
}

int main(int argc, char **argv) {
  if (argc != 3 || atol(argv[1]) < 0 || atof(argv[2]) <= 0) {
    fprintf(stderr, "usage: bench_live_stall LIVE SECONDS\n");
    return 2;
  }
  long live = atol(argv[1]);
  double seconds = atof(argv[2]);
  if (!dlsym(RTLD_DEFAULT, "cudasnap_memory_allocated")) {
    fprintf(stderr, "bench_live_stall: run it with LD_PRELOAD=libcudasnap.so\n");
    return 1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUresult r = cuInit(0);
  if (r == CUDA_SUCCESS) r = cuDeviceGet(&dev, 0);
  if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&ctx, dev);
  if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(ctx);
  if (r != CUDA_SUCCESS) die("driver initialization", (int)r);

  CUdeviceptr *held = calloc((size_t)live + 1, sizeof *held);
  uint32_t *hist = calloc(BUCKETS, sizeof *hist);
  if (!held || !hist) die("host memory", 0);
  /* its pages made now, not at a timed pair's first count (a write: calloc's pages are not there yet) */
  for (size_t i = 0; i < BUCKETS; i += 1024) ((volatile uint32_t *)hist)[i] = 0;
  for (long i = 0; i < live; i++)
    if ((r = cuMemAlloc_v2(&held[i], 512)) != CUDA_SUCCESS) die("holding the live blocks", (int)r);
  CUdeviceptr p;
  for (int i = 0; i < 10000; i++) { /* the timed pairs' segment, and a warm cache */
    if ((r = cuMemAlloc_v2(&p, 4096)) != CUDA_SUCCESS || (r = cuMemFree_v2(p)) != CUDA_SUCCESS) die("warm-up", (int)r);
  }

  uint64_t pairs = 0, overflow = 0, over100us = 0, over1ms = 0, max = 0;
  slow_t slowest[SLOWEST] = {{0, 0}};
  const uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
  uint64_t t0 = start;
  uint64_t pause_at = start + RUN_NS;
  while (t0 < end) {
    if (t0 >= pause_at) { /* not timed: the next pair starts after the pause */
      struct timespec pause = {.tv_sec = 0, .tv_nsec = PAUSE_NS};
      nanosleep(&pause, NULL);
      t0 = now_ns();
      pause_at = t0 + RUN_NS;
    }
    if ((r = cuMemAlloc_v2(&p, 4096)) != CUDA_SUCCESS) die("allocation", (int)r);
    if ((r = cuMemFree_v2(p)) != CUDA_SUCCESS) die("free", (int)r);
    uint64_t t1 = now_ns(), ns = t1 - t0;
    pairs++;
    if (ns / BUCKET_NS < BUCKETS) hist[ns / BUCKET_NS]++;
    else overflow++;
    if (ns > 100000) over100us++;
    if (ns > 1000000) over1ms++;
    if (ns > max) max = ns;
    if (ns > slowest[SLOWEST - 1].ns) { /* kept sorted, slowest first */
      int i = SLOWEST - 1;
      while (i > 0 && slowest[i - 1].ns < ns) {
        slowest[i] = slowest[i - 1];
        i--;
      }
      slowest[i] = (slow_t){.ns = ns, .at_ns = t0 - start};
    }
    t0 = t1;
  }
  printf("pairs=%llu p50=%llu p99=%llu p999=%llu p9999=%llu max=%llu over100us=%llu over1ms=%llu slowest=",
         (unsigned long long)pairs, (unsigned long long)percentile(hist, pairs, 0.5),
         (unsigned long long)percentile(hist, pairs, 0.99),
         (unsigned long long)percentile(hist, pairs, 0.999),
         (unsigned long long)percentile(hist, pairs, 0.9999), (unsigned long long)max,
         (unsigned long long)over100us, (unsigned long long)over1ms);
  for (int i = 0; i < SLOWEST; i++)
    printf("%s%llu@%.2f", i ? "," : "", (unsigned long long)slowest[i].ns, (double)slowest[i].at_ns / 1e9);
  printf("\n");
  for (long i = 0; i < live; i++)
    if ((r = cuMemFree_v2(held[i])) != CUDA_SUCCESS) die("freeing the live blocks", (int)r);
  free(held);
  free(hist);
  return 0;
}

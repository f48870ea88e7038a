/* SPDX-License-Identifier: Apache-2.0 */
// Check 12 of scripts/gpu-check.sh (issue 37, item 3): what landed after the bundle was first
// written, on a program whose every allocation is a plain cudaMalloc. Built with nvcc for the GPU
// and as host code for the dry run on the fake runtime. Three modes:
//
//   memory_pressure oom CHUNK_BYTES MAX_CHUNKS
//       cudaMalloc CHUNK_BYTES at a time (from gc_oom_site) until the allocation fails, then frees
//       everything. Prints ALLOCS (the chunks that succeeded), ASKED_BYTES (the failed request),
//       ERROR (its status, 2 = cudaErrorMemoryAllocation). Status 1 if nothing failed after
//       MAX_CHUNKS: the test would not have tested an out-of-memory error.
//   memory_pressure live MAX_SECONDS STOP_FILE
//       holds a few blocks, prints PID, TOTAL_BYTES (cudaMemGetInfo), HELD_BYTES and READY (flushed:
//       the script reads them while the program runs), then allocates and frees a block in a loop
//       until STOP_FILE exists (the script has read the live view) or MAX_SECONDS pass, so
//       `cudasnap top` and `cudasnap metrics` see a live process; prints CHECKSUM.
//   memory_pressure grow COUNT BASE_BYTES STEP_BYTES GAP_MS
//       COUNT allocations, each STEP_BYTES larger than the one before and all kept: under cudasnap
//       every one is a cache growth (a new segment from the driver), since no free block fits, and
//       a new high of the device's memory. GAP_MS apart: cudasnap asks the driver (cuMemGetInfo)
//       at a new high at most once per 100 ms, so with GAP_MS over 100 every growth asks it. Prints
//       SECONDS (the cudaMalloc calls' wall time, summed; not the gaps), MAX_US (the slowest call),
//       GROWTHS, BYTES and CS_SEGMENTS (cudasnap's segment.all.allocated less the warm-up's, -2
//       without cudasnap). A 1 MiB block is allocated first, untimed.
#include <time.h>
#include <unistd.h>

#include "tests/gpu/gc_common.h"

static double gc_now() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

static unsigned long long gc_arg(int argc, char **argv, int i) {
  if (i >= argc) gc_fail("usage: memory_pressure oom CHUNK MAX | live MAX_SECONDS STOP_FILE | grow COUNT BASE STEP GAP_MS");
  char *end = nullptr;
  unsigned long long v = std::strtoull(argv[i], &end, 10);
  if (end == argv[i] || *end != '\0') gc_fail("arguments are numbers");
  return v;
}

// the site the OOM answer must name ("asked by gc_oom_site"); the empty asm after the call keeps
// it from being a tail call, which would leave no frame of its own
__attribute__((noinline)) static cudaError_t gc_oom_site(void **p, size_t bytes) {
  cudaError_t e = cudaMalloc(p, bytes);
  asm volatile("" ::: "memory");
  return e;
}

__attribute__((noinline)) static void *gc_growth_site(size_t bytes) {
  void *p = nullptr;
  GC_CHECK(cudaMalloc(&p, bytes));
  return p;
}

static int gc_oom(size_t chunk, size_t max_chunks) {
  std::vector<void *> held;
  cudaError_t e = cudaSuccess;
  while (held.size() < max_chunks) {
    void *p = nullptr;
    e = gc_oom_site(&p, chunk);
    if (e != cudaSuccess) break;
    held.push_back(p);
  }
  if (e == cudaSuccess) gc_fail("no allocation failed: raise MAX_CHUNKS");
#ifdef __CUDACC__
  (void)cudaGetLastError(); // an allocation error is not sticky; clear it for the frees
#endif
  for (void *p : held) GC_CHECK(cudaFree(p));
  std::printf("ALLOCS %zu\nASKED_BYTES %zu\nERROR %d\n", held.size(), chunk, static_cast<int>(e));
  return 0;
}

static int gc_live(double seconds, const char *stop_file) {
  static const size_t sizes[] = {1u << 20, 3u << 20, 12u << 20, 24u << 20, 64u << 20};
  std::vector<void *> held;
  size_t bytes = 0;
  for (size_t s : sizes) {
    held.push_back(gc_growth_site(s));
    gc_fill(held.back(), s / 4, static_cast<uint32_t>(s));
    bytes += s;
  }
  size_t free_bytes = 0, total = 0;
  GC_CHECK(cudaMemGetInfo(&free_bytes, &total));
  GC_CHECK(cudaDeviceSynchronize());
  std::printf("PID %d\nTOTAL_BYTES %zu\nHELD_BYTES %zu\nREADY 1\n", static_cast<int>(getpid()), total, bytes);
  std::fflush(stdout);
  uint64_t sum = 1469598103934665603ull;
  const double end = gc_now() + seconds;
  for (uint32_t round = 0; gc_now() < end && access(stop_file, F_OK) != 0; round++) {
    void *p = gc_growth_site(4u << 20);
    gc_fill(p, 1024, round);
    if (round % 64 == 0) sum = gc_checksum(p, 4096, sum);
    GC_CHECK(cudaFree(p));
    usleep(2000);
  }
  for (void *p : held) sum = gc_checksum(p, 4096, sum);
  for (void *p : held) GC_CHECK(cudaFree(p));
  std::printf("CHECKSUM %016llx\n", static_cast<unsigned long long>(sum));
  return 0;
}

static int gc_grow(size_t count, size_t base, size_t step, unsigned gap_ms) {
  std::vector<void *> held(count, nullptr);
  // the context, and cudasnap's first allocation (its lazy set-up: stacks, the live record), come
  // before the clock starts: a warm-up block, kept, so that what is timed is growths only
  void *warm = gc_growth_site(1u << 20);
  GC_CHECK(cudaDeviceSynchronize());
  double seconds = 0, slowest = 0;
  size_t bytes = 0;
  for (size_t i = 0; i < count; i++) {
    usleep(gap_ms * 1000u);
    const double t0 = gc_now();
    held[i] = gc_growth_site(base + i * step);
    const double took = gc_now() - t0;
    seconds += took;
    if (took > slowest) slowest = took;
    bytes += base + i * step;
  }
  const int64_t segments = gc_stat("segment.all.allocated") - 1; // less the warm-up's
  for (void *p : held) GC_CHECK(cudaFree(p));
  GC_CHECK(cudaFree(warm));
  std::printf("SECONDS %.6f\nMAX_US %.1f\nGROWTHS %zu\nBYTES %zu\nCS_SEGMENTS %lld\n", seconds, slowest * 1e6, count,
              bytes, static_cast<long long>(segments));
  if (gc_preloaded() && segments < static_cast<int64_t>(count)) gc_fail("fewer segments than growths: the cache did not grow each time");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) gc_fail("usage: memory_pressure oom CHUNK MAX | live MAX_SECONDS STOP_FILE | grow COUNT BASE STEP GAP_MS");
  if (std::strcmp(argv[1], "oom") == 0) return gc_oom(gc_arg(argc, argv, 2), gc_arg(argc, argv, 3));
  if (std::strcmp(argv[1], "live") == 0) {
    if (argc < 4) gc_fail("usage: memory_pressure live MAX_SECONDS STOP_FILE");
    return gc_live(static_cast<double>(gc_arg(argc, argv, 2)), argv[3]);
  }
  if (std::strcmp(argv[1], "grow") == 0)
    return gc_grow(gc_arg(argc, argv, 2), gc_arg(argc, argv, 3), gc_arg(argc, argv, 4),
                   static_cast<unsigned>(gc_arg(argc, argv, 5)));
  gc_fail("the mode is oom, live or grow");
}

/* SPDX-License-Identifier: Apache-2.0 */
// Check 1 of scripts/gpu-check.sh: does every cudaMalloc of an nvcc-built program reach cudasnap's
// cache, and does the program compute the same thing under it?
//
// Sizes cross each boundary of the allocator: under 512 B (rounded up), the 1 MiB small/large
// split, 10 MiB (PyTorch's 20 MiB large segments), and tens of MiB. Half the blocks are freed and
// allocated again mid-run so cached blocks are handed out a second time. Prints
//   ALLOCS n           cudaMalloc calls the program made
//   CS_ALLOCATIONS n   cudasnap's allocation.all.allocated (-1 without cudasnap)
//   CS_LIVE_BYTES n    cudasnap_memory_allocated while every block is live (-1 without cudasnap)
//   REQUESTED_BYTES n  bytes requested then
//   CHECKSUM x         over every block's contents, the same with and without cudasnap
// and itself fails when cudasnap is preloaded but counted fewer allocations or bytes.
//
// Built twice by the script (nvcc's default static cudart, and -cudart shared), and as host code
// for the dry run on the fake runtime.
#include "tests/gpu/gc_common.h"

int main() {
  static const size_t sizes[] = {100,       512,       513,       4096,          200000,   1u << 20,
                                 (1u << 20) + 4, 3u << 20, 9u << 20, (10u << 20) + 512, 24u << 20, 64u << 20};
  const size_t n = sizeof sizes / sizeof sizes[0];
  std::vector<void *> blocks(n, nullptr);
  size_t allocs = 0, requested = 0;
  for (size_t i = 0; i < n; i++) {
    GC_CHECK(cudaMalloc(&blocks[i], sizes[i]));
    allocs++;
    gc_fill(blocks[i], sizes[i] / 4, static_cast<uint32_t>(i));
  }
  // free the even blocks, then allocate them again: the cache hands back what it kept
  for (size_t i = 0; i < n; i += 2) GC_CHECK(cudaFree(blocks[i]));
  for (size_t i = 0; i < n; i += 2) {
    GC_CHECK(cudaMalloc(&blocks[i], sizes[i]));
    allocs++;
    gc_fill(blocks[i], sizes[i] / 4, static_cast<uint32_t>(100 + i));
  }
  GC_CHECK(cudaDeviceSynchronize());
  for (size_t i = 0; i < n; i++) requested += sizes[i];

  const int64_t cs_live = gc_preloaded() ? gc_sym<int64_t (*)(int)>("cudasnap_memory_allocated")(-1) : -1;
  const int64_t cs_allocs = gc_stat("allocation.all.allocated");
  uint64_t sum = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) sum = gc_checksum(blocks[i], sizes[i] / 4 * 4, sum);
  for (size_t i = 0; i < n; i++) GC_CHECK(cudaFree(blocks[i]));

  std::printf("ALLOCS %zu\nCS_ALLOCATIONS %lld\nCS_LIVE_BYTES %lld\nREQUESTED_BYTES %zu\nCHECKSUM %016llx\n", allocs,
              static_cast<long long>(cs_allocs), static_cast<long long>(cs_live), requested,
              static_cast<unsigned long long>(sum));
  if (gc_preloaded()) {
    // the cache rounds up, never down, and counts every allocation it served
    if (cs_allocs < static_cast<int64_t>(allocs)) gc_fail("cudasnap counted fewer allocations than the program made");
    if (cs_live < static_cast<int64_t>(requested)) gc_fail("cudasnap holds fewer live bytes than the program requested");
  }
  return 0;
}

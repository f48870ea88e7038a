/* SPDX-License-Identifier: Apache-2.0 */
// Check 6 of scripts/gpu-check.sh: cudaDeviceReset in the middle of a run. The reset destroys the
// primary context with every allocation in it; cudasnap must drop that context's cache first
// (its blocks are gone) and serve the new context from scratch. A block left live across the
// reset is deliberately never freed: the program may not free it after the reset.
// Prints CHECKSUM (the same with and without cudasnap) and CS_ALLOCATED_AFTER (cudasnap's
// memory_allocated after the post-reset blocks were freed: 0 when the old context's blocks were
// dropped; -1 without cudasnap).
#include "tests/gpu/gc_common.h"

static uint64_t gc_round(uint32_t seed, uint64_t h) {
  static const size_t sizes[] = {4096, 1u << 20, 6u << 20, 32u << 20};
  void *p[4];
  for (int i = 0; i < 4; i++) {
    GC_CHECK(cudaMalloc(&p[i], sizes[i]));
    gc_fill(p[i], sizes[i] / 4, seed + static_cast<uint32_t>(i));
  }
  for (int i = 0; i < 4; i++) h = gc_checksum(p[i], sizes[i], h);
  for (int i = 0; i < 4; i += 2) GC_CHECK(cudaFree(p[i])); // the odd blocks stay live
  return h;
}

int main() {
  uint64_t h = gc_round(1, 1469598103934665603ull);
  GC_CHECK(cudaDeviceSynchronize());
  GC_CHECK(cudaDeviceReset());
  h = gc_round(10, h); // a new primary context on first use
  h = gc_round(20, h);
  GC_CHECK(cudaDeviceReset());
  void *p = nullptr;
  GC_CHECK(cudaMalloc(&p, 2u << 20));
  gc_fill(p, (2u << 20) / 4, 30);
  h = gc_checksum(p, 2u << 20, h);
  GC_CHECK(cudaFree(p));
  int64_t after = gc_preloaded() ? gc_sym<int64_t (*)(int)>("cudasnap_memory_allocated")(-1) : -1;
  std::printf("CHECKSUM %016llx\nCS_ALLOCATED_AFTER %lld\n", static_cast<unsigned long long>(h),
              static_cast<long long>(after));
  return 0;
}

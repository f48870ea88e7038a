/* SPDX-License-Identifier: Apache-2.0 */
// Check 6 of scripts/gpu-check.sh: a program that exits without freeing. cudasnap's leak report
// on stderr must name the allocation site, gc_leaky_site (the script greps for it). noinline keeps
// the site a frame of its own; the script builds with -g so the name comes from DWARF.
#include "tests/gpu/gc_common.h"

__attribute__((noinline)) static void *gc_leaky_site(size_t bytes) {
  void *p = nullptr;
  GC_CHECK(cudaMalloc(&p, bytes));
  gc_fill(p, bytes / 4, 7);
  return p;
}

int main() {
  void *big = gc_leaky_site(3u << 20);
  void *small = gc_leaky_site(1024);
  GC_CHECK(cudaDeviceSynchronize());
  std::printf("LEAKED %p %p\nCHECKSUM %016llx\n", big, small,
              static_cast<unsigned long long>(gc_checksum(small, 1024)));
  return 0; // normal exit: the exit snapshot and the leak report run from cudasnap's exit handler
}

/* SPDX-License-Identifier: Apache-2.0 */
// Endings that bypass exit handlers (scripts/gpu-run.sh). argv[1] picks one:
//   exit    allocate, then _exit(3): no atexit handler and no destructor runs, yet cudasnap must
//           leave an exit snapshot, and the status must stay 3
//   crash   allocate, then write to a PROT_NONE page (a genuine SIGSEGV, not raise()): cudasnap
//           must leave a snapshot with trigger "crash", and the process must still die by SIGSEGV
// Prints ALLOCATED BYTES and CHECKSUM (flushed) before it ends; both runs allocate the same blocks,
// through gc_ending_site, which the snapshot's stacks should name.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/gpu/gc_common.h"

__attribute__((noinline)) static void *gc_ending_site(size_t bytes, uint32_t seed) {
  void *p = nullptr;
  GC_CHECK(cudaMalloc(&p, bytes));
  gc_fill(p, bytes / 4, seed);
  return p;
}

int main(int argc, char **argv) {
  const bool crash = argc == 2 && std::strcmp(argv[1], "crash") == 0;
  if (argc != 2 || (!crash && std::strcmp(argv[1], "exit") != 0)) gc_fail("usage: exit_paths exit|crash");
  const size_t big = 5u << 20, small = 4096;
  void *a = gc_ending_site(big, 11);
  void *b = gc_ending_site(small, 12);
  GC_CHECK(cudaDeviceSynchronize());
  std::printf("ALLOCATED %zu\nCHECKSUM %016llx\n", big + small,
              static_cast<unsigned long long>(gc_checksum(b, small, gc_checksum(a, big))));
  std::fflush(stdout);
  if (!crash) _exit(3);
  void *page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) gc_fail("mmap failed");
  *static_cast<volatile int *>(page) = 1; // SIGSEGV (SEGV_ACCERR)
  gc_fail("the write to a PROT_NONE page did not fault");
}

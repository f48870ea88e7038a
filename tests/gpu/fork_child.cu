/* SPDX-License-Identifier: Apache-2.0 */
// Check 6 of scripts/gpu-check.sh: fork after CUDA is initialized, as PyTorch's DataLoader
// workers do. The child makes no CUDA call and exits normally (so cudasnap's exit handler runs in
// it); it must write no snapshot of the parent's memory and free nothing of it. The parent goes on
// using its blocks. Prints PARENT_PID, CHILD_PID, CHILD_STATUS and CHECKSUM; the script checks that
// the only snapshot written is the parent's.
#include <sys/wait.h>
#include <unistd.h>

#include "tests/gpu/gc_common.h"

int main() {
  const size_t bytes = 4u << 20;
  void *a = nullptr, *b = nullptr;
  GC_CHECK(cudaMalloc(&a, bytes));
  gc_fill(a, bytes / 4, 1);
  GC_CHECK(cudaDeviceSynchronize());
  std::fflush(stdout);
  pid_t child = fork();
  if (child < 0) gc_fail("fork failed");
  if (child == 0) {
    // no CUDA here; exit() (not _exit) so atexit handlers, cudasnap's among them, run
    std::exit(0);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) gc_fail("waitpid failed");
  // the parent's context and cache are intact: allocate, reuse, free
  GC_CHECK(cudaMalloc(&b, bytes));
  gc_fill(b, bytes / 4, 2);
  uint64_t sum = gc_checksum(b, bytes, gc_checksum(a, bytes));
  GC_CHECK(cudaFree(a));
  GC_CHECK(cudaFree(b));
  std::printf("PARENT_PID %d\nCHILD_PID %d\nCHILD_STATUS %d\nCHECKSUM %016llx\n", static_cast<int>(getpid()),
              static_cast<int>(child), WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
              static_cast<unsigned long long>(sum));
  return 0;
}

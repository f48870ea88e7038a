/* SPDX-License-Identifier: Apache-2.0 */
// Check 6 of scripts/gpu-check.sh: SIGUSR1 while kernels run. Under cudasnap the program sends
// itself the signal while a long kernel (GC_SPIN_MS, default 800 ms) and queued copies are in
// flight; cudasnap's signal thread writes a snapshot and the program goes on. Without cudasnap it
// sends nothing (SIGUSR1 would end it). Prints SIGNALED (0/1), KERNEL_RUNNING (the kernel had not
// finished 200 ms after the signal: the snapshot was taken mid-kernel), CHECKSUM.
#include <signal.h>
#include <unistd.h>

#include "tests/gpu/gc_common.h"

__global__ void gc_spin_fill(uint32_t *p, size_t n, uint64_t spin_ns) {
  const uint64_t start = gc_globaltimer();
  while (gc_globaltimer() - start < spin_ns) {
  }
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<uint32_t>(i * 3u);
}

int main() {
  const char *spin = std::getenv("GC_SPIN_MS");
  const uint64_t spin_ns = (spin ? std::strtoull(spin, nullptr, 10) : 800) * 1000000ull;
  const size_t n = 1u << 20;
  void *p = nullptr, *q = nullptr;
  GC_CHECK(cudaMalloc(&p, n * 4));
  GC_CHECK(cudaMalloc(&q, n * 4));
  cudaStream_t s;
  GC_CHECK(cudaStreamCreate(&s));
  gc_spin_fill<<<32, 256, 0, s>>>(static_cast<uint32_t *>(p), n, spin_ns);
  GC_CHECK(cudaGetLastError());
  GC_CHECK(cudaMemcpyAsync(q, p, n * 4, cudaMemcpyDeviceToDevice, s));
  const bool signaled = gc_preloaded();
  if (signaled && kill(getpid(), SIGUSR1) != 0) gc_fail("kill failed");
  usleep(200000);
  const bool running = cudaStreamQuery(s) == cudaErrorNotReady;
  GC_CHECK(cudaStreamSynchronize(s));
  const uint64_t h = gc_checksum(q, n * 4, gc_checksum(p, n * 4));
  GC_CHECK(cudaFree(p));
  GC_CHECK(cudaFree(q));
  GC_CHECK(cudaStreamDestroy(s));
  std::printf("SIGNALED %d\nKERNEL_RUNNING %d\nCHECKSUM %016llx\n", signaled ? 1 : 0, running ? 1 : 0,
              static_cast<unsigned long long>(h));
  return 0;
}

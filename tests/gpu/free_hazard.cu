/* SPDX-License-Identifier: Apache-2.0 */
// Check 2 of scripts/gpu-check.sh: the free hazard each CUDASNAP_FREE mode answers differently.
//
// Stream B runs a kernel that first spins (GC_SPIN_MS, default 400 ms) and then sums buffer X.
// While it spins, the host frees X (the program's bug under a stream-ordered allocator, legal
// with cudaFree, which waits for the device), allocates a block of the same size (Y, which a
// cache is likely to place at X) and fills it with 7s on stream A. Then the sum is checked:
// X held ones, so anything but n is corruption.
//
//   sync    cudaFree waits for the device as the real one does: the kernel has finished before
//           Y exists. No corruption.
//   fence   X is parked until events recorded on every stream (B and A are non-blocking streams,
//           which cudasnap tracks) complete: Y is a new block. No corruption.
//   stream  X is reusable at once (PyTorch's rule, which the program breaks): Y is X, and the
//           kernel sums 7s. Corruption expected; the script reports it without failing.
//
// With GC_HAZARD_STREAMS=legacy both kernels run on the legacy default stream instead: the
// program stream mode is for (every use of a block before its cudaFree on that stream), which
// must then reuse X at once (REUSED 1) without corruption (issue 39, item 4).
//
// Prints FREE_MS (how long cudaFree took), REUSED (Y == X), SUM, EXPECTED, CORRUPT (0/1).
#include <chrono>

#include "tests/gpu/gc_common.h"

__global__ void gc_spin_then_sum(const uint32_t *x, size_t n, unsigned long long *sum, uint64_t spin_ns) {
  const uint64_t start = gc_globaltimer();
  while (gc_globaltimer() - start < spin_ns) {
  }
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    local += x[i];
  atomicAdd(sum, local);
}

__global__ void gc_set(uint32_t *y, size_t n, uint32_t v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = v;
}

int main() {
  const char *spin = std::getenv("GC_SPIN_MS");
  const uint64_t spin_ns = (spin ? std::strtoull(spin, nullptr, 10) : 400) * 1000000ull;
  const size_t n = 4u << 20, bytes = n * 4; // 16 MiB: a large block, reused whole in every policy
  cudaStream_t a, b;
  // Non-blocking: no implicit ordering with the legacy stream or with each other.
  GC_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  GC_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  const char *streams = std::getenv("GC_HAZARD_STREAMS");
  const bool legacy = streams && std::strcmp(streams, "legacy") == 0;
  cudaStream_t on_a = legacy ? cudaStreamLegacy : a, on_b = legacy ? cudaStreamLegacy : b;
  void *x = nullptr, *y = nullptr;
  unsigned long long *sum = nullptr;
  GC_CHECK(cudaMalloc(reinterpret_cast<void **>(&sum), sizeof *sum));
  GC_CHECK(cudaMalloc(&x, bytes));
  gc_set<<<256, 256>>>(static_cast<uint32_t *>(x), n, 1);
  GC_CHECK(cudaMemset(sum, 0, sizeof *sum));
  GC_CHECK(cudaDeviceSynchronize());

  // 64 x 256 threads: resident at once on any recent GPU, leaving SMs free for the writer
  gc_spin_then_sum<<<64, 256, 0, on_b>>>(static_cast<const uint32_t *>(x), n, sum, spin_ns);
  GC_CHECK(cudaGetLastError());
  const auto t0 = std::chrono::steady_clock::now();
  GC_CHECK(cudaFree(x));
  const double free_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  GC_CHECK(cudaMalloc(&y, bytes));
  gc_set<<<256, 256, 0, on_a>>>(static_cast<uint32_t *>(y), n, 7);
  GC_CHECK(cudaGetLastError());
  GC_CHECK(cudaDeviceSynchronize());

  unsigned long long got = 0;
  GC_CHECK(cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost));
  std::printf("FREE_MS %.1f\nREUSED %d\nSUM %llu\nEXPECTED %llu\nCORRUPT %d\n", free_ms, y == x ? 1 : 0, got,
              static_cast<unsigned long long>(n), got != n ? 1 : 0);
  GC_CHECK(cudaFree(y));
  GC_CHECK(cudaFree(sum));
  GC_CHECK(cudaStreamDestroy(a));
  GC_CHECK(cudaStreamDestroy(b));
  return 0;
}

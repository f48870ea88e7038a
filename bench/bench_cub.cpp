/* SPDX-License-Identifier: Apache-2.0 */
// NVIDIA CUB's CachingDeviceAllocator (cub/util_allocator.cuh, header-only, from the CUDA
// Toolkit's CCCL), fed the patterns of bench_common.h: the peer of bench_hotpath under cudasnap.
// Built as host code with the C++ compiler and linked with the fake libcudart.so.13 (tests/fakes),
// which reaches the fake driver as the real runtime reaches the real one, so both programs pay
// the same kind of driver cost (CUB: an event record per free; cudasnap in sync mode: a context
// query per allocation and a synchronization per free).
//
//   bench_cub same|random64 PAIRS THREADS SAMPLES DEPTH
//
// CUB gets its default bins (512 B .. 2 MiB, growing 8x) on the legacy stream, and no cap on the
// bytes it caches, as cudasnap has none. (With the default 6 MiB cap, evictions start under
// several threads, and CUB then trips over its own race: DeviceFree records the block's ready
// event after unlocking, by which time another thread may have reused the block, freed it past
// the cap and destroyed that event; cudaEventRecord fails with cudaErrorInvalidResourceHandle.)
// Prints the median ns per pair.
#include <cuda_runtime_api.h>

#include <cub/util_allocator.cuh>

#include "bench/bench_common.h"

BENCH_DEFINE_DESCEND

static cub::CachingDeviceAllocator *bench_cub_allocator;

static int bench_cub_alloc(uintptr_t *p, size_t n) {
  void *d = nullptr;
  cudaError_t e = bench_cub_allocator->DeviceAllocate(&d, n);
  *p = reinterpret_cast<uintptr_t>(d);
  return static_cast<int>(e);
}

static int bench_cub_free(uintptr_t p) {
  return static_cast<int>(bench_cub_allocator->DeviceFree(reinterpret_cast<void *>(p)));
}

static void bench_cub_thread_setup() {
  cudaError_t e = cudaSetDevice(0);
  if (e != cudaSuccess) bench_fail("cudaSetDevice", static_cast<int>(e));
}

int main(int argc, char **argv) {
  static const bench_ops_t ops = {bench_cub_alloc, bench_cub_free};
  bench_config_t cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.ops = &ops;
  cfg.thread_setup = bench_cub_thread_setup;
  if (bench_parse_args(argc, argv, &cfg) != 0) return 2;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1) bench_fail("cudaGetDeviceCount", static_cast<int>(e));
  // bin_growth, min_bin, max_bin: the defaults; max_cached_bytes: unlimited
  cub::CachingDeviceAllocator allocator(8, 3, 7, cub::CachingDeviceAllocator::INVALID_SIZE);
  bench_cub_allocator = &allocator;
  double ns = bench_run(&cfg);
  std::printf("%.2f\n", ns);
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
// Allocation pairs on a real GPU, for scripts/gpu-bench.sh: the patterns of bench_common.h through
// one of three allocators, with the CUDA runtime (nvcc's default, static cudart):
//
//   gpu_alloc raw|async|cub same|random64 PAIRS THREADS SAMPLES DEPTH
//
//   raw     cudaMalloc / cudaFree: the driver itself, or cudasnap's cache when run under
//           LD_PRELOAD=libcudasnap.so (CUDASNAP_FREE picks its free mode);
//   async   cudaMallocAsync / cudaFreeAsync on the legacy stream, from the device's default pool
//           with its release threshold raised so that it keeps what it has (a caching pool);
//   cub     NVIDIA CUB's CachingDeviceAllocator: default bins, no cap on cached bytes.
//
// GPU_ALLOC_KERNEL=1 launches a one-thread kernel that writes each new block before it is freed,
// so every free has device work in flight (what separates the free modes). Each timed loop ends
// with cudaDeviceSynchronize, so work a free only enqueued is paid for. Prints the median ns per
// pair. BENCH_EXPECT_PRELOAD=0|1 checks that cudasnap is (not) preloaded; when it is, the run
// also checks that cudasnap's cache served the allocations.
//
// Builds with nvcc; also with a plain C++ compiler as host code (no kernel), which
// scripts/gpu-bench.sh --dry-run uses against the fake CUDA runtime of tests/fakes.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cub/util_allocator.cuh>

#include "bench/bench_common.h"

BENCH_DEFINE_DESCEND

static bool gpu_kernel;
static cub::CachingDeviceAllocator *gpu_cub;

#ifdef __CUDACC__
__global__ void gpu_touch(unsigned char *p) { p[0] = 1; }
#endif

static void gpu_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu_alloc: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

static int gpu_touched(uintptr_t p, cudaError_t e) {
#ifdef __CUDACC__
  if (e == cudaSuccess && gpu_kernel) {
    gpu_touch<<<1, 1>>>(reinterpret_cast<unsigned char *>(p));
    e = cudaGetLastError();
  }
#else
  (void)p;
#endif
  return static_cast<int>(e);
}

static int gpu_raw_alloc(uintptr_t *p, size_t n) {
  void *d = nullptr;
  cudaError_t e = cudaMalloc(&d, n);
  *p = reinterpret_cast<uintptr_t>(d);
  return gpu_touched(*p, e);
}
static int gpu_raw_free(uintptr_t p) { return static_cast<int>(cudaFree(reinterpret_cast<void *>(p))); }

static int gpu_async_alloc(uintptr_t *p, size_t n) {
  void *d = nullptr;
  cudaError_t e = cudaMallocAsync(&d, n, 0);
  *p = reinterpret_cast<uintptr_t>(d);
  return gpu_touched(*p, e);
}
static int gpu_async_free(uintptr_t p) { return static_cast<int>(cudaFreeAsync(reinterpret_cast<void *>(p), 0)); }

static int gpu_cub_alloc(uintptr_t *p, size_t n) {
  void *d = nullptr;
  cudaError_t e = gpu_cub->DeviceAllocate(&d, n);
  *p = reinterpret_cast<uintptr_t>(d);
  return gpu_touched(*p, e);
}
static int gpu_cub_free(uintptr_t p) { return static_cast<int>(gpu_cub->DeviceFree(reinterpret_cast<void *>(p))); }

static void gpu_thread_setup() { gpu_check(cudaSetDevice(0), "cudaSetDevice"); }
static void gpu_sample_end() { gpu_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

int main(int argc, char **argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s raw|async|cub same|random64 PAIRS THREADS SAMPLES DEPTH\n", argv[0]);
    return 2;
  }
  static const bench_ops_t raw = {gpu_raw_alloc, gpu_raw_free};
  static const bench_ops_t async = {gpu_async_alloc, gpu_async_free};
  static const bench_ops_t cub_ops = {gpu_cub_alloc, gpu_cub_free};
  const char *mode = argv[1];
  bench_config_t cfg;
  std::memset(&cfg, 0, sizeof cfg);
  if (std::strcmp(mode, "raw") == 0) cfg.ops = &raw;
  else if (std::strcmp(mode, "async") == 0) cfg.ops = &async;
  else if (std::strcmp(mode, "cub") == 0) cfg.ops = &cub_ops;
  else {
    std::fprintf(stderr, "gpu_alloc: unknown allocator %s (raw, async, cub)\n", mode);
    return 2;
  }
  cfg.thread_setup = gpu_thread_setup;
  cfg.sample_end = gpu_sample_end;
  if (bench_parse_args(argc - 1, argv + 1, &cfg) != 0) return 2;
  const char *kernel = std::getenv("GPU_ALLOC_KERNEL");
  gpu_kernel = kernel && std::strcmp(kernel, "1") == 0;

  void *stats = dlsym(RTLD_DEFAULT, "cudasnap_memory_stats");
  bool preloaded = stats != nullptr;
  const char *expect = std::getenv("BENCH_EXPECT_PRELOAD");
  if (expect && *expect && (expect[0] == '1') != preloaded) {
    std::fprintf(stderr, "gpu_alloc: cudasnap is %spreloaded, expected otherwise\n", preloaded ? "" : "not ");
    return 1;
  }
  int count = 0;
  gpu_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count < 1) {
    std::fprintf(stderr, "gpu_alloc: no CUDA device\n");
    return 1;
  }
  gpu_check(cudaSetDevice(0), "cudaSetDevice");
#ifdef __CUDACC__
  if (cfg.ops == &async) {
    // keep freed memory in the pool across synchronizations: a caching allocator, as the others
    cudaMemPool_t pool;
    gpu_check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
    uint64_t threshold = UINT64_MAX;
    gpu_check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
  }
#endif
  // bin_growth, min_bin, max_bin: CUB's defaults; max_cached_bytes: unlimited (see bench_cub.cpp)
  cub::CachingDeviceAllocator allocator(8, 3, 7, cub::CachingDeviceAllocator::INVALID_SIZE);
  gpu_cub = &allocator;

  double ns = bench_run(&cfg);
  gpu_check(cudaGetLastError(), "the run");

  if (preloaded) {
    // the cache must have served the run: its statistics count the allocations
    int64_t (*max_allocated)(int) = nullptr;
    void *fn = dlsym(RTLD_DEFAULT, "cudasnap_max_memory_allocated");
    std::memcpy(&max_allocated, &fn, sizeof fn);
    if (cfg.ops == &raw && (!max_allocated || max_allocated(0) <= 0)) {
      std::fprintf(stderr, "gpu_alloc: cudasnap is preloaded but its cache served no allocation\n");
      return 1;
    }
  }
  std::printf("%.2f\n", ns);
  return 0;
}

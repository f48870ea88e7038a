/* SPDX-License-Identifier: Apache-2.0 */
// Helpers shared by the programs of tests/gpu, which scripts/gpu-check.sh builds with nvcc and runs
// on a real GPU, with and without libcudasnap.so preloaded.
//
// Every program prints KEY VALUE lines on stdout (CHECKSUM, ALLOCS, ...) that the script compares
// between the two runs; a CUDA error the program does not expect ends it with status 1 and a line
// on stderr, so a failure is never mistaken for a result.
//
// cudasnap's API (include/cudasnap.h) is looked up with dlsym(RTLD_DEFAULT) rather than through its
// weak declarations: the same binary then runs with and without the preload whatever the linker
// did with undefined weak symbols in an executable (bench/gpu_alloc.cu does the same).
//
// The programs that scripts/gpu-check.sh --dry-run runs on the fake CUDA runtime of tests/fakes
// also build as host code (no __CUDACC__): kernels are replaced by host-side fills.
#ifndef GC_COMMON_H
#define GC_COMMON_H

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "include/cudasnap.h"

#define GC_CHECK(call) gc_check((call), #call, __FILE__, __LINE__)

static inline void gc_check(cudaError_t e, const char *what, const char *file, int line) {
  if (e == cudaSuccess) return;
#ifdef __CUDACC__
  std::fprintf(stderr, "%s:%d: %s: %s (%d)\n", file, line, what, cudaGetErrorString(e), static_cast<int>(e));
#else // the fake runtime has no cudaGetErrorString
  std::fprintf(stderr, "%s:%d: %s: CUDA error %d\n", file, line, what, static_cast<int>(e));
#endif
  std::exit(1);
}

[[noreturn]] static inline void gc_fail(const char *msg) {
  std::fprintf(stderr, "gpu-check program: %s\n", msg);
  std::exit(1);
}

// ---- cudasnap's API, when preloaded -------------------------------------------------------------

template <typename F> static inline F gc_sym(const char *name) {
  F f = nullptr;
  void *p = dlsym(RTLD_DEFAULT, name);
  std::memcpy(&f, &p, sizeof p);
  return f;
}

static inline bool gc_preloaded() { return dlsym(RTLD_DEFAULT, "cudasnap_memory_stats") != nullptr; }

// One key of cudasnap_memory_stats(device), e.g. "allocation.all.allocated"; -1 when cudasnap is
// not preloaded or the key is unknown.
static inline int64_t gc_stat(const char *key, int device = -1) {
  auto stats = gc_sym<int (*)(int, cudasnap_stat_t *, size_t)>("cudasnap_memory_stats");
  if (!stats) return -1;
  cudasnap_stat_t all[CUDASNAP_MEMORY_STATS_KEYS];
  int n = stats(device, all, CUDASNAP_MEMORY_STATS_KEYS);
  for (int i = 0; i < n && i < CUDASNAP_MEMORY_STATS_KEYS; i++)
    if (std::strcmp(all[i].key, key) == 0) return all[i].value;
  return -1;
}

// ---- device data --------------------------------------------------------------------------------

// FNV-1a over the bytes of a device buffer, copied back to the host.
static inline uint64_t gc_checksum(const void *dev, size_t bytes, uint64_t h = 1469598103934665603ull) {
  std::vector<unsigned char> host(bytes);
  GC_CHECK(cudaMemcpy(host.data(), dev, bytes, cudaMemcpyDeviceToHost));
  for (unsigned char c : host) h = (h ^ c) * 1099511628211ull;
  return h;
}

static inline uint32_t gc_pattern(size_t i, uint32_t seed) {
  uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
  x ^= x >> 15;
  return x * 2246822519u;
}

#ifdef __CUDACC__
__global__ void gc_fill_kernel(uint32_t *p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 15;
    p[i] = x * 2246822519u;
  }
}

// Nanoseconds since an arbitrary origin, the same on every SM: lets a kernel spin for a set time
// whatever the clock rate.
__device__ inline uint64_t gc_globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

// Fills `words` 32-bit words at dev with gc_pattern(i, seed): a kernel under nvcc, a copy from the
// host in the host-only build (which runs on the fake runtime).
static inline void gc_fill(void *dev, size_t words, uint32_t seed, cudaStream_t s = 0) {
#ifdef __CUDACC__
  gc_fill_kernel<<<128, 256, 0, s>>>(static_cast<uint32_t *>(dev), words, seed);
  GC_CHECK(cudaGetLastError());
#else
  std::vector<uint32_t> host(words);
  for (size_t i = 0; i < words; i++) host[i] = gc_pattern(i, seed);
  (void)s; // the fake runtime has no cudaMemcpyAsync; its copies are synchronous anyway
  GC_CHECK(cudaMemcpy(dev, host.data(), words * 4, cudaMemcpyHostToDevice));
#endif
}

#endif

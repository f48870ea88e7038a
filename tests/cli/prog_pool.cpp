/* SPDX-License-Identifier: Apache-2.0 */
// A C++ program with its own device memory pool (issue 46; names_test.sh): mem::DevicePool<T>
// allocates every byte, for build_index (6 MiB), load_tables (2 MiB) and try_reserve (1 TiB, which
// the device cannot give: an OOM the program passes over). Built with -O2 -g, so the pool's
// methods may be inlined into their callers: either way, with the pool named part of the
// allocator (CUDASNAP_ALLOCATOR_FRAMES='mem::DevicePool<*>::*'), the callers are the sites. The
// blocks stay allocated at exit. The pool keeps its blocks in a std::vector, as pools do: the
// program loads libstdc++, whose demangler cudasnap names C++ frames with. The lines the test
// looks for carry an "@call" mark.
#include <cuda.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL prog_pool.cpp: %s\n", what);
    std::exit(1);
  }
}
}  // namespace

namespace mem {
template <typename T>
class DevicePool {
 public:
  CUdeviceptr allocate(std::size_t count) {
    CUdeviceptr p = try_allocate(count);
    check(p != 0, "cuMemAlloc");
    return p;
  }
  CUdeviceptr try_allocate(std::size_t count) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, count * sizeof(T)) != CUDA_SUCCESS) return 0;
    held_.push_back(p);
    return p;
  }

 private:
  std::vector<CUdeviceptr> held_;
};
}  // namespace mem

static mem::DevicePool<float> pool;

__attribute__((noinline)) void build_index() {
  for (int i = 0; i < 3; i++) pool.allocate(std::size_t{1} << 19);  // @call build_index
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void load_tables() {
  pool.allocate(std::size_t{1} << 19);  // @call load_tables
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) bool try_reserve() {
  bool ok = pool.try_allocate(std::size_t{1} << 38) != 0;  // @call try_reserve
  __asm__ volatile("" ::: "memory");
  return ok;
}

int main() {
  CUdevice dev;
  CUcontext ctx;
  check(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuInit");
  check(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS, "context");
  build_index();
  load_tables();
  std::printf("reserved: %s\n", try_reserve() ? "yes" : "no");
  return 0;
}

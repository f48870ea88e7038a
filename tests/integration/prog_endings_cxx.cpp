/* SPDX-License-Identifier: Apache-2.0 */
// Issue #13: an uncaught C++ exception. std::terminate calls abort(): the process dies of SIGABRT,
// with a core dump where one is written. Allocates and frees on device 0 first, and keeps 3 MiB
// from allocate_leak() (stdout: "frame=allocate_leak <line>"), as prog_endings.c does.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace {

int leak_line;

void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL prog_endings_cxx.cpp: %s\n", what);
    std::exit(1);
  }
}

__attribute__((noinline)) CUdeviceptr allocate_leak(size_t bytes) {
  CUdeviceptr p = 0;
  leak_line = __LINE__ + 1;
  CUresult r = cuMemAlloc(&p, bytes);
  __asm__ volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
  check(r == CUDA_SUCCESS, "cuMemAlloc");
  return p;
}

}  // namespace

int main() {
  CUdevice dev;
  CUcontext ctx;
  check(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuInit");
  check(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && cuCtxSetCurrent(ctx) == CUDA_SUCCESS, "context");
  for (int i = 0; i < 20; i++) {
    CUdeviceptr p = 0;
    check(cuMemAlloc(&p, static_cast<size_t>(i + 1) << 16) == CUDA_SUCCESS, "alloc");
    check(cuMemFree(p) == CUDA_SUCCESS, "free");
  }
  (void)allocate_leak(3 << 20);
  std::printf("frame=allocate_leak %d\n", leak_line);
  std::fflush(stdout);
  throw std::runtime_error("an exception nobody catches");
}

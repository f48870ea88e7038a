/* SPDX-License-Identifier: Apache-2.0 */
// An inference server's worker, built with -O2 -g (issue 46; names_test.sh): each worker thread
// keeps a KV cache whose append_page, a method defined in the class (so inline), allocates a page
// of device memory; -O2 inlines it into worker_main. The pages stay allocated when the program
// ends, so the snapshot at exit holds them: their site must read KvCache::append_page, with
// worker_main as its caller. The lines the test looks for carry a "@site"/"@call" mark.
#include <cuda.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {
constexpr int kWorkers = 2;
constexpr int kPages = 3;
constexpr std::size_t kPageBytes = std::size_t{2} << 20;

void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL prog_server.cpp: %s\n", what);
    std::exit(1);
  }
}
}  // namespace

class KvCache {
 public:
  void append_page(int layer) {
    CUdeviceptr p = 0;
    check(cuMemAlloc(&p, kPageBytes) == CUDA_SUCCESS && layer >= 0, "cuMemAlloc");  // @site append_page
    pages_[count_++ % kPages] = p;
  }
  int count() const { return count_; }

 private:
  CUdeviceptr pages_[kPages] = {};
  int count_ = 0;
};

static KvCache caches[kWorkers];

__attribute__((noinline)) void worker_main(int id, int pages) {
  for (int i = 0; i < pages; i++) caches[id].append_page(i);  // @call append_page
  __asm__ volatile("" ::: "memory");
}

int main() {
  CUdevice dev;
  CUcontext ctx;
  check(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuInit");
  check(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS, "cuDevicePrimaryCtxRetain");
  std::vector<std::thread> workers;
  for (int id = 0; id < kWorkers; id++)
    workers.emplace_back([ctx, id] {
      check(cuCtxSetCurrent(ctx) == CUDA_SUCCESS, "cuCtxSetCurrent");
      worker_main(id, kPages);
    });
  for (auto &w : workers) w.join();
  std::printf("%d pages held\n", caches[0].count() + caches[1].count());
  return 0;
}

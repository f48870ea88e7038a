/* SPDX-License-Identifier: Apache-2.0 */
/* A program linked against libcudart.so.13 (the fake runtime in these tests), using only the
 * runtime API.
 *
 *   it_cudart_workload workload [ROUNDS]   issue #3 test 1e: the shared workload through
 *       cudaMalloc/cudaFree/cudaMemcpy; prints checksum=<hex>. With cudasnap preloaded, each
 *       cudaMalloc is counted once (the runtime hook labels, the driver hook counts) and the driver
 *       sees only a handful of allocations.
 *   it_cudart_workload reset               issue #3 test 5: cudaMalloc some blocks, cudaDeviceReset,
 *       then cudaMalloc/cudaFree work again, and cudasnap_memory_allocated(0) follows. */
#include <cuda_runtime_api.h>

#include "tests/integration/it_common.h"

static int it_alloc(uint64_t *dptr, size_t n) {
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, n);
  *dptr = (uint64_t)(uintptr_t)p;
  return (int)e;
}
static int it_free(uint64_t dptr) { return (int)cudaFree((void *)(uintptr_t)dptr); }
static int it_htod(uint64_t dst, const void *src, size_t n) {
  return (int)cudaMemcpy((void *)(uintptr_t)dst, src, n, cudaMemcpyHostToDevice);
}
static int it_dtoh(void *dst, uint64_t src, size_t n) {
  return (int)cudaMemcpy(dst, (const void *)(uintptr_t)src, n, cudaMemcpyDeviceToHost);
}
static const it_ops_t it_runtime_ops = {it_alloc, it_free, it_htod, it_dtoh};

static void it_runtime_init(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  IT_CHECK(e == cudaSuccess && n > 0, "cudaGetDeviceCount: error %d, %d devices", (int)e, n);
  IT_CHECK(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0) failed");
  IT_CHECK(cudaFree(NULL) == cudaSuccess, "cudaFree(NULL) failed"); /* creates the context */
}

static int it_workload_main(uint64_t rounds) {
  int preloaded = it_preloaded();
  it_runtime_init();
  fake_cuda_control_t fake = it_fake();
  fake_cuda_counters_t before = it_counters(&fake);

  it_workload_t w;
  it_workload_init(&w, &it_runtime_ops, UINT64_C(0xc0da), 4);
  it_workload_run(&w, rounds);
  it_workload_finish(&w);

  fake_cuda_counters_t after = it_counters(&fake);
  it_check_cache(&before, &after, w.allocations, preloaded, 20);
  printf("checksum=%016" PRIx64 "\n", w.checksum);
  return 0;
}

static int it_reset_main(void) {
  int preloaded = it_preloaded();
  IT_CHECK(preloaded, "the reset test needs cudasnap preloaded");
  it_runtime_init();
  fake_cuda_control_t fake = it_fake();

  enum { N = 6 };
  static const size_t sizes[N] = {512, 4096, 300 * 1024, 1 << 20, 3 << 20, 12 << 20};
  void *p[N];
  size_t total = 0;
  for (int i = 0; i < N; i++) {
    IT_CHECK(cudaMalloc(&p[i], sizes[i]) == cudaSuccess, "cudaMalloc(%zu) failed", sizes[i]);
    IT_CHECK(cudaMemset(p[i], 0x5a, sizes[i]) == cudaSuccess, "cudaMemset failed");
    total += sizes[i];
  }
  IT_CHECK(cudaFree(p[0]) == cudaSuccess, "cudaFree failed"); /* one cached block too */
  int64_t live = cudasnap_memory_allocated(0);
  IT_CHECK(live >= (int64_t)(total - sizes[0]), "before the reset cudasnap_memory_allocated(0) = %" PRId64
           ", expected at least %zu", live, total - sizes[0]);
  IT_CHECK(it_stat(0, "allocation.all.current") == N - 1, "allocation.all.current = %" PRId64 " before the reset",
           it_stat(0, "allocation.all.current"));
  size_t in_use_before = it_counters(&fake).bytes_in_use;
  IT_CHECK(in_use_before > 0, "the driver holds no memory before the reset");

  IT_CHECK(cudaDeviceReset() == cudaSuccess, "cudaDeviceReset failed");
  int64_t after_reset = cudasnap_memory_allocated(0);
  IT_CHECK(after_reset == 0, "after cudaDeviceReset cudasnap_memory_allocated(0) = %" PRId64 ", expected 0",
           after_reset);
  IT_CHECK(it_stat(0, "reserved_bytes.all.current") == 0, "reserved_bytes.all.current = %" PRId64
           " after the reset", it_stat(0, "reserved_bytes.all.current"));
  IT_CHECK(it_counters(&fake).bytes_in_use == 0, "the driver still holds %zu bytes after the reset",
           it_counters(&fake).bytes_in_use);

  /* The runtime makes a new primary context; cudasnap serves it. */
  void *q = NULL;
  IT_CHECK(cudaMalloc(&q, 1 << 20) == cudaSuccess, "cudaMalloc after cudaDeviceReset failed");
  unsigned char host[4096], back[4096];
  for (size_t i = 0; i < sizeof host; i++) host[i] = (unsigned char)(i * 7 + 3);
  IT_CHECK(cudaMemcpy(q, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess, "cudaMemcpy failed");
  IT_CHECK(cudaMemcpy(back, q, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess, "cudaMemcpy failed");
  IT_CHECK(memcmp(host, back, sizeof host) == 0, "data mismatch after the reset");
  IT_CHECK(cudasnap_memory_allocated(0) == (int64_t)(1 << 20),
           "after a 1 MiB cudaMalloc post-reset cudasnap_memory_allocated(0) = %" PRId64,
           cudasnap_memory_allocated(0));
  IT_CHECK(cudaFree(q) == cudaSuccess, "cudaFree after cudaDeviceReset failed");
  IT_CHECK(cudasnap_memory_allocated(0) == 0, "after the last cudaFree cudasnap_memory_allocated(0) = %" PRId64,
           cudasnap_memory_allocated(0));
  printf("reset ok\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "workload";
  if (strcmp(mode, "workload") == 0) return it_workload_main(argc > 2 ? strtoull(argv[2], NULL, 0) : 2000);
  if (strcmp(mode, "reset") == 0) return it_reset_main();
  fprintf(stderr, "usage: %s workload [ROUNDS] | reset\n", argv[0]);
  return 2;
}

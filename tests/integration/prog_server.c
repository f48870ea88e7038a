/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 44: the shape of an inference server, through the runtime API (the fake libcudart.so.13):
 * THREADS workers, a non-blocking stream each, serve requests. A request, an NVTX range
 * "request" holding "prefill" and "decode", takes an input buffer from cudaMalloc (the cache) and
 * an output buffer from cudaMallocAsync on its stream (passed through), and grows a KV cache
 * shared by the workers by one block (cudaMalloc). The KV cache grows until the device is full:
 * any call answered cudaErrorMemoryAllocation is counted, the older half of the KV cache is
 * evicted, and the call asked again. Every buffer is written and read back, and so is a KV block
 * from time to time, so memory freed under the program would show.
 *
 *   it_server [REQUESTS_PER_THREAD]   (default 300; FAKE_CUDA_CAPACITY sizes the device)
 *
 * Prints "ooms N" (the answers the program got) and "requests N". Under cudasnap it also checks
 * that num_ooms of device 0 (cudasnap_memory_stats) is exactly N; server.sh checks the snapshots. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#else
#define nvtxInitialize(reserved) ((void)(reserved))
#define nvtxRangePushA(name) ((void)(name))
#define nvtxRangePop() ((void)0)
#endif

#include "tests/integration/it_common.h"

enum { THREADS = 4, KV_MAX = 512 };
#define KV_BLOCK (4 * IT_MIB)

static pthread_mutex_t it_kv_lock = PTHREAD_MUTEX_INITIALIZER;
static void *it_kv[KV_MAX]; /* a FIFO of blocks: the oldest at it_kv_head */
static uint64_t it_kv_tag[KV_MAX];
static size_t it_kv_head, it_kv_count;
static atomic_long it_ooms, it_requests;
static uint64_t it_per_thread = 300;
static pthread_barrier_t it_start;

/* What a buffer of `tag` holds at its start. */
static void it_fill(unsigned char *buf, size_t n, uint64_t tag) {
  for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)it_mix(tag + i / 8) ^ (unsigned char)i;
}

static void it_write(void *dev, uint64_t tag) {
  unsigned char buf[4096];
  it_fill(buf, sizeof buf, tag);
  IT_CHECK(cudaMemcpy(dev, buf, sizeof buf, cudaMemcpyHostToDevice) == cudaSuccess, "write to %p", dev);
}

static void it_read(const void *dev, uint64_t tag) {
  unsigned char buf[4096], want[4096];
  IT_CHECK(cudaMemcpy(buf, dev, sizeof buf, cudaMemcpyDeviceToHost) == cudaSuccess, "read of %p", dev);
  it_fill(want, sizeof want, tag);
  IT_CHECK(memcmp(buf, want, sizeof buf) == 0, "%p does not hold what was written there", dev);
}

/* Free the older half of the KV cache (one block at least); returns how many went. */
static size_t it_kv_evict(void) {
  pthread_mutex_lock(&it_kv_lock);
  size_t n = (it_kv_count + 1) / 2;
  for (size_t i = 0; i < n; i++) {
    it_read(it_kv[it_kv_head], it_kv_tag[it_kv_head]);
    IT_CHECK(cudaFree(it_kv[it_kv_head]) == cudaSuccess, "cudaFree of a KV block");
    it_kv_head = (it_kv_head + 1) % KV_MAX;
    it_kv_count--;
  }
  pthread_mutex_unlock(&it_kv_lock);
  return n;
}

static void it_kv_push(void *block, uint64_t tag) {
  pthread_mutex_lock(&it_kv_lock);
  while (it_kv_count == KV_MAX) {
    pthread_mutex_unlock(&it_kv_lock);
    it_kv_evict();
    pthread_mutex_lock(&it_kv_lock);
  }
  size_t at = (it_kv_head + it_kv_count++) % KV_MAX;
  it_kv[at] = block;
  it_kv_tag[at] = tag;
  pthread_mutex_unlock(&it_kv_lock);
}

/* A KV block chosen by `pick`, read back under the lock (no one evicts it meanwhile). */
static void it_kv_check(uint64_t pick) {
  pthread_mutex_lock(&it_kv_lock);
  if (it_kv_count) {
    size_t at = (it_kv_head + pick % it_kv_count) % KV_MAX;
    it_read(it_kv[at], it_kv_tag[at]);
  }
  pthread_mutex_unlock(&it_kv_lock);
}

/* Ask `call` until it succeeds; each out-of-memory answer is counted and evicts (or, with nothing
 * to evict, waits for another worker to give memory back). */
#define IT_EVICTING(call)                                                                         \
  do {                                                                                            \
    for (long it_tries_ = 0;; it_tries_++) {                                                      \
      cudaError_t it_e_ = (call);                                                                 \
      if (it_e_ == cudaSuccess) break;                                                            \
      IT_CHECK(it_e_ == cudaErrorMemoryAllocation, "%s: error %d", #call, (int)it_e_);            \
      atomic_fetch_add(&it_ooms, 1);                                                              \
      if (it_kv_evict() == 0) sched_yield();                                                      \
      IT_CHECK(it_tries_ < 100000, "%s: out of memory %ld times in a row", #call, it_tries_);     \
    }                                                                                             \
  } while (0)

static void it_request(cudaStream_t stream, uint64_t *rng, uint64_t tag) {
  nvtxRangePushA("request");
  size_t in_size = 64 * IT_KIB + it_next(rng) % IT_MIB, out_size = 256 * IT_KIB + it_next(rng) % (2 * IT_MIB);
  void *in = NULL, *out = NULL, *block = NULL;
  IT_EVICTING(cudaMalloc(&in, in_size));
  IT_EVICTING(cudaMallocAsync(&out, out_size, stream));
  nvtxRangePushA("prefill");
  it_write(in, tag);
  it_write(out, tag + 1);
  IT_EVICTING(cudaMalloc(&block, KV_BLOCK));
  it_write(block, tag + 2);
  it_kv_push(block, tag + 2);
  nvtxRangePop();
  nvtxRangePushA("decode");
  it_read(in, tag);
  it_read(out, tag + 1);
  if (it_next(rng) % 4 == 0) it_kv_check(it_next(rng));
  nvtxRangePop();
  IT_CHECK(cudaFreeAsync(out, stream) == cudaSuccess, "cudaFreeAsync");
  IT_CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
  IT_CHECK(cudaFree(in) == cudaSuccess, "cudaFree");
  atomic_fetch_add(&it_requests, 1);
  nvtxRangePop();
}

static void *it_worker(void *arg) {
  uintptr_t index = (uintptr_t)arg;
  IT_CHECK(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice");
  cudaStream_t stream = NULL;
  IT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreateWithFlags");
  uint64_t rng = UINT64_C(0x5e7e) + index * UINT64_C(0x10001);
  pthread_barrier_wait(&it_start);
  for (uint64_t r = 0; r < it_per_thread; r++) it_request(stream, &rng, (index << 40) + r * 4);
  IT_CHECK(cudaStreamDestroy(stream) == cudaSuccess, "cudaStreamDestroy");
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) it_per_thread = strtoull(argv[1], NULL, 0);
  int preloaded = it_preloaded();
  IT_CHECK(cudaSetDevice(0) == cudaSuccess && cudaFree(NULL) == cudaSuccess, "the runtime did not start");
  /* NVTX starts lazily at its first call, racing when that is on several threads at once (its
   * headers leave it to the program): start it here, as a server does before its workers */
  nvtxInitialize(NULL);
  pthread_barrier_init(&it_start, NULL, THREADS);
  pthread_t threads[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++)
    IT_CHECK(pthread_create(&threads[i], NULL, it_worker, (void *)i) == 0, "pthread_create");
  for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  while (it_kv_count) it_kv_evict();
  long ooms = atomic_load(&it_ooms);
  if (preloaded)
    IT_CHECK(it_stat(0, "num_ooms") == ooms, "num_ooms is %" PRId64 ", the program got %ld out-of-memory answers",
             it_stat(0, "num_ooms"), ooms);
  printf("ooms %ld\nrequests %ld\n", ooms, atomic_load(&it_requests));
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #3 test 7: 16 threads allocate, write, read and free concurrently through the driver API.
 * Each thread runs the shared workload with its own seed; the checksum combines the threads'
 * checksums independently of scheduling, so it is the same with and without cudasnap. With
 * cudasnap, the statistics must account for every allocation exactly once and end at zero. */
#include <cuda.h>
#include <pthread.h>

#include "tests/integration/it_driver.h"

enum { IT_THREADS = 16 };

static CUcontext it_ctx;
static uint64_t it_rounds = 200;
static pthread_barrier_t it_start;

typedef struct it_thread_s {
  pthread_t tid;
  unsigned index;
  uint64_t checksum;
  uint64_t allocations;
} it_thread_t;

static void *it_thread_main(void *arg) {
  it_thread_t *t = arg;
  IT_CHECK(cuCtxSetCurrent(it_ctx) == CUDA_SUCCESS, "thread %u: cuCtxSetCurrent failed", t->index);
  it_workload_t w;
  it_workload_init(&w, &it_driver_ops, UINT64_C(0x7e57) + t->index * UINT64_C(0x10001), 4);
  pthread_barrier_wait(&it_start);
  it_workload_run(&w, it_rounds);
  it_workload_finish(&w);
  t->checksum = w.checksum;
  t->allocations = w.allocations;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) it_rounds = strtoull(argv[1], NULL, 0);
  int preloaded = it_preloaded();
  it_ctx = it_driver_context();
  fake_cuda_control_t fake = it_fake();
  fake_cuda_counters_t before = it_counters(&fake);

  static it_thread_t th[IT_THREADS];
  pthread_barrier_init(&it_start, NULL, IT_THREADS);
  for (unsigned i = 0; i < IT_THREADS; i++) {
    th[i].index = i;
    IT_CHECK(pthread_create(&th[i].tid, NULL, it_thread_main, &th[i]) == 0, "pthread_create failed");
  }
  uint64_t checksum = 0, allocations = 0;
  for (unsigned i = 0; i < IT_THREADS; i++) {
    pthread_join(th[i].tid, NULL);
    checksum += it_mix(th[i].checksum ^ i);
    allocations += th[i].allocations;
  }
  pthread_barrier_destroy(&it_start);

  fake_cuda_counters_t after = it_counters(&fake);
  /* Up to 64 blocks are live at once here, so the bound is looser than a single thread's. */
  it_check_cache(&before, &after, allocations, preloaded, allocations / 10);
  if (preloaded) {
    IT_CHECK(it_stat(0, "allocated_bytes.all.current") == 0, "allocated_bytes.all.current = %" PRId64,
             it_stat(0, "allocated_bytes.all.current"));
    int64_t reserved = it_stat(0, "reserved_bytes.all.current");
    int64_t segments = it_stat(0, "num_device_alloc") - it_stat(0, "num_device_free");
    IT_CHECK(segments == it_stat(0, "segment.all.current"), "segments: %" PRId64 " allocated - freed, %" PRId64
             " current", segments, it_stat(0, "segment.all.current"));
    IT_CHECK((uint64_t)reserved == after.bytes_in_use, "reserved_bytes.all.current %" PRId64
             " but the driver holds %zu", reserved, after.bytes_in_use);
    /* Emptying the cache waits for frees still pending (fence mode) and returns every segment. */
    IT_CHECK(cudasnap_empty_cache(0) == 0, "cudasnap_empty_cache failed");
    IT_CHECK(it_stat(0, "active.all.current") == 0, "active.all.current = %" PRId64 " after emptying the cache",
             it_stat(0, "active.all.current"));
    IT_CHECK(it_stat(0, "reserved_bytes.all.current") == 0, "reserved_bytes.all.current = %" PRId64
             " after emptying the cache", it_stat(0, "reserved_bytes.all.current"));
    IT_CHECK(it_counters(&fake).bytes_in_use == 0, "the driver holds %zu bytes after emptying the cache",
             it_counters(&fake).bytes_in_use);
  }
  printf("checksum=%016" PRIx64 "\n", checksum);
  return 0;
}

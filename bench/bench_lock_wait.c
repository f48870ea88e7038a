/* SPDX-License-Identifier: Apache-2.0 */
/* What the lock's throughput costs a thread that comes late (common/cs_lock.h, issue 36): HOGS
 * threads take and let go of one cs_lock_t as fast as they can (a section of about 60 additions,
 * then 20 outside it), while the main thread takes it once a millisecond and times each acquire.
 * A waiter that reads the word seldom leaves the lock to the thread holding it, which is what
 * makes the allocator fast with threads; the price is paid here, by the late thread.
 *
 *   build-bench/bench/bench_lock_wait HOGS [ACQUIRES]
 *
 * Prints the latency of the main thread's acquires in microseconds: median, 90th and 99th
 * percentile, and the largest. ACQUIRES defaults to 200. */
#include <stdatomic.h>

#include "bench/bench_common.h"
#include "common/cs_lock.h"

enum { MAX_HOGS = 64, MAX_ACQUIRES = 100000 };

static cs_lock_t lock;
static atomic_bool stop;
static volatile unsigned long sink;

static void work(int n) {
  for (int i = 0; i < n; i++) sink += (unsigned long)i;
}

static void *hog(void *arg) {
  (void)arg;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    cs_lock_acquire(&lock);
    work(60);
    cs_lock_release(&lock);
    work(20);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int hogs = argc > 1 ? atoi(argv[1]) : 0;
  int acquires = argc > 2 ? atoi(argv[2]) : 200;
  if (argc < 2 || argc > 3 || hogs < 1 || hogs > MAX_HOGS || acquires < 1 || acquires > MAX_ACQUIRES) {
    fprintf(stderr, "usage: %s HOGS(1-%d) [ACQUIRES(1-%d)]\n", argv[0], MAX_HOGS, MAX_ACQUIRES);
    return 2;
  }
  double *latency_us = calloc((size_t)acquires, sizeof *latency_us);
  pthread_t threads[MAX_HOGS];
  if (!latency_us) return 1;
  cs_lock_init(&lock);
  for (int i = 0; i < hogs; i++)
    if (pthread_create(&threads[i], NULL, hog, NULL) != 0) return 1;
  const struct timespec ms = {0, 1000000};
  for (int k = 0; k < acquires; k++) {
    nanosleep(&ms, NULL);
    uint64_t t0 = cs_deadline_now_ns();
    cs_lock_acquire(&lock);
    uint64_t t1 = cs_deadline_now_ns();
    cs_lock_release(&lock);
    latency_us[k] = (double)(t1 - t0) / 1e3;
  }
  atomic_store(&stop, true);
  for (int i = 0; i < hogs; i++) pthread_join(threads[i], NULL);
  qsort(latency_us, (size_t)acquires, sizeof *latency_us, bench_cmp_double);
  size_t n = (size_t)acquires;
  printf("median %.1f p90 %.1f p99 %.1f max %.1f us\n", latency_us[n / 2], latency_us[n * 9 / 10],
         latency_us[n * 99 / 100], latency_us[n - 1]);
  free(latency_us);
  return 0;
}

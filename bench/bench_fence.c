/* SPDX-License-Identifier: Apache-2.0 */
/* Fence mode with many streams (issue 24, defect 5): THREADS threads allocate and free 4 KiB on
 * one allocator in fence mode, over the simulated device with STREAMS fence streams and a
 * synchronization that takes SYNC_US microseconds (a device still draining work). Past
 * CS_FENCE_MAX_STREAMS a free cannot fence its block and synchronizes instead; where that
 * synchronization happens (under the allocator's lock, or outside it) decides whether the other
 * threads wait for it.
 *   bench_fence THREADS STREAMS SYNC_US PAIRS
 * Prints ns per pair: the wall time of the whole run over the pairs of all threads. bench/fence.sh
 * builds it against two versions of allocator/ and runs them interleaved. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"

enum { MAX_THREADS = 64 };

static cs_allocator_t *alloc;
static long pairs_per_thread;
static size_t stream_count;
static long sync_ns;
static atomic_long syncs;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The simulated device's synchronize counts in a plain field; this one may run on several
 * threads at once (outside the allocator's lock), so it counts atomically. */
static int slow_sync(void *self) {
  (void)self;
  atomic_fetch_add(&syncs, 1);
  if (sync_ns > 0) {
    struct timespec ts = {.tv_sec = 0, .tv_nsec = sync_ns};
    nanosleep(&ts, NULL);
  }
  return 0;
}

static size_t many_streams(void *self, uintptr_t *streams, size_t cap) {
  (void)self;
  for (size_t i = 0; i < cap && i < stream_count; i++) streams[i] = 0x1000 * (i + 1);
  return stream_count;
}

static void *worker(void *arg) {
  (void)arg;
  for (long i = 0; i < pairs_per_thread; i++) {
    uintptr_t p;
    if (cs_allocator_malloc(alloc, 4096, 0, 0, &p) || cs_allocator_free(alloc, p)) abort();
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: bench_fence THREADS STREAMS SYNC_US PAIRS\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  stream_count = (size_t)atol(argv[2]);
  sync_ns = atol(argv[3]) * 1000;
  pairs_per_thread = atol(argv[4]);
  if (threads < 1 || threads > MAX_THREADS || pairs_per_thread < 1) return 2;

  cs_sim_device_t dev;
  cs_sim_device_init(&dev, (size_t)1 << 34);
  cs_backend_t sim = cs_sim_backend(&dev);
  cs_backend_ops_t ops = *sim.ops;
  ops.synchronize = slow_sync;
  ops.fence_streams = many_streams;
  cs_backend_t backend = {.ops = &ops, .self = &dev};
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  conf.free_mode = CS_FREE_FENCE;
  alloc = cs_allocator_create(&conf, &backend, NULL);
  if (!alloc) return 1;

  pthread_t t[MAX_THREADS];
  double t0 = now_ns();
  for (int i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, worker, NULL)) return 1;
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  double ns = now_ns() - t0;
  printf("%.1f\n", ns / ((double)pairs_per_thread * threads));
  cs_allocator_destroy(alloc);
  return 0;
}

/* Cached allocate+free pairs through the allocator API, over the simulated device (no driver
 * behind it, so the figure is cudasnap's own cost). Prints one line per figure: BENCH <name> <value> <unit>.
 *   build/bench/bench_allocator [pairs]
 * Each figure is the median of 9 runs. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"
#include "common/cs_error.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ns per pair: same size, or random sizes with 64 live blocks */
static double run(cs_allocator_t *a, long pairs, bool random_sizes) {
  enum { LIVE = 64 };
  uintptr_t live[LIVE] = {0};
  uint64_t seed = 88172645463325252u;
  double t0 = now_ns();
  for (long i = 0; i < pairs; i++) {
    uintptr_t p;
    if (!random_sizes) {
      if (cs_allocator_malloc(a, 4096, 0, 0, &p) || cs_allocator_free(a, p)) abort();
      continue;
    }
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    size_t slot = seed % LIVE;
    if (live[slot] && cs_allocator_free(a, live[slot])) abort();
    if (cs_allocator_malloc(a, (seed >> 20) % 262144 + 1, 0, 0, &live[slot])) abort();
  }
  double t = now_ns() - t0;
  for (int i = 0; i < LIVE; i++)
    if (live[i]) cs_allocator_free(a, live[i]);
  return t / (double)pairs;
}

int main(int argc, char **argv) {
  long pairs = argc > 1 ? atol(argv[1]) : 2000000;
  static const char *mode_names[] = {"sync", "fence", "stream"};
  for (int mode = CS_FREE_SYNC; mode <= CS_FREE_STREAM; mode++) {
    for (int random_sizes = 0; random_sizes <= 1; random_sizes++) {
      cs_alloc_conf_t conf;
      cs_alloc_conf_init(&conf);
      conf.free_mode = (cs_free_mode_t)mode;
      cs_sim_device_t dev;
      cs_sim_device_init(&dev, (size_t)80 << 30);
      cs_backend_t backend = cs_sim_backend(&dev);
      cs_allocator_t *a = cs_allocator_create(&conf, &backend, NULL);
      double samples[9];
      run(a, pairs / 10, random_sizes); /* warm up: segments and tables exist */
      for (int r = 0; r < 9; r++) samples[r] = run(a, pairs, random_sizes);
      qsort(samples, 9, sizeof samples[0], cmp_double);
      printf("BENCH allocator_pair_%s_%s %.1f ns\n", random_sizes ? "random64" : "same_size",
             mode_names[mode], samples[4]);
      cs_allocator_destroy(a);
    }
  }
  return 0;
}

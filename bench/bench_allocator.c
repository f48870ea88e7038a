/* SPDX-License-Identifier: Apache-2.0 */
/* Cached allocate+free pairs through the allocator API, over the simulated device (no driver
 * behind it, so the figure is cudasnap's own cost). Prints one line per figure: BENCH <name> <value> <unit>.
 *   build-bench/bench/bench_allocator [PAIRS [RUNS [FILTER]]]
 * PAIRS per timed run (default 2,000,000), RUNS timed runs per case (default 9, at most 64); FILTER
 * keeps only the cases whose name contains it (e.g. random64_stream, for a profiler).
 * The six cases (same size / random sizes with 64 live blocks, x sync / fence / stream free mode)
 * run interleaved, one run of each case per round, and each figure is the median of its runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"
#include "common/cs_error.h"

enum { MAX_RUNS = 64, CASES = 6, LIVE = 64 };

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct bench_case_s {
  char name[64];
  bool random_sizes;
  cs_sim_device_t dev;
  cs_allocator_t *a;
  uintptr_t live[LIVE];
  uint64_t seed;
  double samples[MAX_RUNS];
} bench_case_t;

/* ns per pair: same size, or random sizes with 64 live blocks (the sequence goes on across runs) */
static double run(bench_case_t *c, long pairs) {
  cs_allocator_t *a = c->a;
  uint64_t seed = c->seed;
  double t0 = now_ns();
  for (long i = 0; i < pairs; i++) {
    uintptr_t p;
    if (!c->random_sizes) {
      if (cs_allocator_malloc(a, 4096, 0, 0, &p) || cs_allocator_free(a, p)) abort();
      continue;
    }
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    size_t slot = seed % LIVE;
    if (c->live[slot] && cs_allocator_free(a, c->live[slot])) abort();
    if (cs_allocator_malloc(a, (seed >> 20) % 262144 + 1, 0, 0, &c->live[slot])) abort();
  }
  double t = now_ns() - t0;
  c->seed = seed;
  return t / (double)pairs;
}

int main(int argc, char **argv) {
  long pairs = argc > 1 ? atol(argv[1]) : 2000000;
  int runs = argc > 2 ? atoi(argv[2]) : 9;
  const char *filter = argc > 3 ? argv[3] : "";
  if (pairs < 1 || runs < 1 || runs > MAX_RUNS) {
    fprintf(stderr, "usage: %s [PAIRS [RUNS (1-%d) [FILTER]]]\n", argv[0], MAX_RUNS);
    return 2;
  }
  static const char *mode_names[] = {"sync", "fence", "stream"};
  static bench_case_t cases[CASES];
  int n = 0;
  for (int mode = CS_FREE_SYNC; mode <= CS_FREE_STREAM; mode++) {
    for (int random_sizes = 0; random_sizes <= 1; random_sizes++) {
      bench_case_t *c = &cases[n];
      snprintf(c->name, sizeof c->name, "allocator_pair_%s_%s", random_sizes ? "random64" : "same_size",
               mode_names[mode]);
      if (!strstr(c->name, filter)) continue;
      c->random_sizes = random_sizes;
      c->seed = 88172645463325252u;
      cs_alloc_conf_t conf;
      cs_alloc_conf_init(&conf);
      conf.free_mode = (cs_free_mode_t)mode;
      cs_sim_device_init(&c->dev, (size_t)80 << 30);
      cs_backend_t backend = cs_sim_backend(&c->dev);
      c->a = cs_allocator_create(&conf, &backend, NULL);
      if (!c->a) abort();
      run(c, pairs / 10); /* warm up: segments and tables exist */
      n++;
    }
  }
  for (int r = 0; r < runs; r++)
    for (int i = 0; i < n; i++) cases[i].samples[r] = run(&cases[i], pairs);
  for (int i = 0; i < n; i++) {
    bench_case_t *c = &cases[i];
    qsort(c->samples, (size_t)runs, sizeof c->samples[0], cmp_double);
    double median = runs % 2 ? c->samples[runs / 2] : (c->samples[runs / 2 - 1] + c->samples[runs / 2]) / 2;
    printf("BENCH %s %.1f ns\n", c->name, median);
    for (int s = 0; s < LIVE; s++)
      if (c->live[s]) cs_allocator_free(c->a, c->live[s]);
    cs_allocator_destroy(c->a);
  }
  return 0;
}

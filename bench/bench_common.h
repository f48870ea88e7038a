/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the hot-path benchmark programs (bench_hotpath.c: the driver API under LD_PRELOAD;
 * bench_cub.cpp: NVIDIA CUB's CachingDeviceAllocator over the runtime): the allocation patterns,
 * the timing loop, threads, and a deep call stack to allocate from. C11 and C++17.
 *
 * Patterns (one "pair" is one allocation and one free, in steady state):
 *   same      allocate 4096 bytes, free it;
 *   random64  64 slots; each step picks a slot with a seeded xorshift64, frees its block, and
 *             allocates 1..256 KiB there (the sequence of bench_allocator.c: the same seed gives
 *             the same sizes and slots in every program and every run).
 * The programs print one number: the median over `samples` timed loops of ns per pair; with
 * threads, the wall time of the whole run divided by the pairs of all threads (1e3 / that is the
 * total throughput in Mpairs/s). */
#ifndef CS_BENCH_COMMON_H
#define CS_BENCH_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BENCH_LIVE = 64, BENCH_SAME_SIZE = 4096, BENCH_MAX_SAMPLES = 64, BENCH_MAX_THREADS = 64 };

#define BENCH_SEED UINT64_C(88172645463325252)

typedef enum bench_pattern_e { BENCH_SAME = 0, BENCH_RANDOM64 = 1 } bench_pattern_t;

static inline double bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* BENCH_CLOCK=cpu: one thread's samples are timed by its own CPU time (CLOCK_THREAD_CPUTIME_ID)
 * instead of the wall clock: on a machine shared with other work, the time the thread waits
 * for a CPU is not the allocator's (issue 36). Threads' runs stay on the wall clock. */
static inline double bench_sample_now_ns(bool cpu) {
  if (!cpu) return bench_now_ns();
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline bool bench_cpu_clock(void) {
  const char *c = getenv("BENCH_CLOCK");
  return c && strcmp(c, "cpu") == 0;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of n values (sorts them). */
static inline double bench_median(double *v, size_t n) {
  qsort(v, n, sizeof v[0], bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline int bench_parse_pattern(const char *s, bench_pattern_t *out) {
  if (strcmp(s, "same") == 0) *out = BENCH_SAME;
  else if (strcmp(s, "random64") == 0) *out = BENCH_RANDOM64;
  else return -1;
  return 0;
}

/* The allocator under test: returns 0 on success. */
typedef struct bench_ops_s {
  int (*alloc)(uintptr_t *p, size_t n);
  int (*release)(uintptr_t p);
} bench_ops_t;

/* One thread's pattern state: kept across samples, so the random pattern runs in steady state. */
typedef struct bench_state_s {
  uint64_t seed;
  uintptr_t live[BENCH_LIVE];
} bench_state_t;

static inline void bench_state_init(bench_state_t *s, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->seed = seed;
}

static inline void bench_fail(const char *what, int rc) {
  fprintf(stderr, "bench: %s failed with status %d\n", what, rc);
  exit(1);
}

/* `pairs` allocate+free pairs of the pattern. */
static inline void bench_pairs(const bench_ops_t *ops, bench_pattern_t pattern, bench_state_t *s, long pairs) {
  int rc;
  if (pattern == BENCH_SAME) {
    for (long i = 0; i < pairs; i++) {
      uintptr_t p = 0;
      if ((rc = ops->alloc(&p, BENCH_SAME_SIZE)) != 0) bench_fail("allocation", rc);
      if ((rc = ops->release(p)) != 0) bench_fail("free", rc);
    }
    return;
  }
  uint64_t seed = s->seed;
  for (long i = 0; i < pairs; i++) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    size_t slot = (size_t)(seed % BENCH_LIVE);
    if (s->live[slot] && (rc = ops->release(s->live[slot])) != 0) bench_fail("free", rc);
    if ((rc = ops->alloc(&s->live[slot], (size_t)((seed >> 20) % 262144 + 1))) != 0) bench_fail("allocation", rc);
  }
  s->seed = seed;
}

static inline void bench_drain(const bench_ops_t *ops, bench_state_t *s) {
  for (int i = 0; i < BENCH_LIVE; i++) {
    if (s->live[i]) (void)ops->release(s->live[i]);
    s->live[i] = 0;
  }
}

/* ---- a deep stack: the allocations of a real program come from many frames down, so that a
 * 32-frame capture really unwinds 32 frames. Each level is a real frame: the call goes through a
 * volatile pointer (no inlining, no recursion-to-loop) and work follows it (no tail call). ---- */

typedef double (*bench_body_fn)(void *arg);
typedef double (*bench_descend_fn)(int depth, bench_body_fn body, void *arg);

double bench_descend_impl(int depth, bench_body_fn body, void *arg);
extern bench_descend_fn volatile bench_descend;
extern volatile int bench_descend_sink;

/* Defines the above; once per program. */
#define BENCH_DEFINE_DESCEND                                                                      \
  volatile int bench_descend_sink;                                                                \
  bench_descend_fn volatile bench_descend = bench_descend_impl;                                   \
  __attribute__((noinline)) double bench_descend_impl(int depth, bench_body_fn body, void *arg) { \
    if (depth <= 0) return body(arg);                                                             \
    double r = bench_descend(depth - 1, body, arg);                                               \
    bench_descend_sink = depth;                                                                   \
    return r;                                                                                     \
  }

/* ---- the run: warm-up, then `samples` timed loops (one thread), or one timed run per sample
 * with `threads` threads started together ---- */

typedef struct bench_config_s {
  const bench_ops_t *ops;
  bench_pattern_t pattern;
  long pairs;          /* per sample and per thread */
  int threads;
  int samples;
  int depth;           /* extra frames below the allocating loop */
  void (*thread_setup)(void); /* per thread, before the first allocation (e.g. cuCtxSetCurrent) */
  void (*sample_end)(void);   /* NULL, or inside each timed loop's end (e.g. wait for the GPU) */
} bench_config_t;

typedef struct bench_thread_s {
  const bench_config_t *cfg;
  pthread_t tid;
  int index;
  pthread_barrier_t *go;
  pthread_barrier_t *done;
  double sample_ns[BENCH_MAX_SAMPLES]; /* one thread: its own timings */
} bench_thread_t;

static inline double bench_thread_body(void *arg) {
  bench_thread_t *t = (bench_thread_t *)arg;
  const bench_config_t *cfg = t->cfg;
  bench_state_t s;
  bench_state_init(&s, BENCH_SEED + (uint64_t)t->index * UINT64_C(0x9E3779B97F4A7C15));
  if (cfg->thread_setup) cfg->thread_setup();
  /* warm-up: segments, tables, caches and the unwinder's per-thread state exist */
  bench_pairs(cfg->ops, cfg->pattern, &s, cfg->pairs / 4 + BENCH_LIVE);
  const bool cpu = cfg->threads == 1 && bench_cpu_clock();
  for (int r = 0; r < cfg->samples; r++) {
    if (cfg->threads > 1) pthread_barrier_wait(t->go);
    double t0 = bench_sample_now_ns(cpu);
    bench_pairs(cfg->ops, cfg->pattern, &s, cfg->pairs);
    if (cfg->sample_end && cfg->threads == 1) cfg->sample_end();
    t->sample_ns[r] = (bench_sample_now_ns(cpu) - t0) / (double)cfg->pairs;
    if (cfg->threads > 1) pthread_barrier_wait(t->done);
  }
  bench_drain(cfg->ops, &s);
  return 0;
}

static inline void *bench_thread_main(void *arg) {
  bench_thread_t *t = (bench_thread_t *)arg;
  (void)bench_descend(t->cfg->depth, bench_thread_body, t);
  return NULL;
}

/* Median ns per pair (one thread), or median over samples of wall ns / all threads' pairs. */
static inline double bench_run(const bench_config_t *cfg) {
  if (cfg->samples < 1 || cfg->samples > BENCH_MAX_SAMPLES || cfg->threads < 1 || cfg->threads > BENCH_MAX_THREADS ||
      cfg->pairs < 1) {
    fprintf(stderr, "bench: bad configuration\n");
    exit(2);
  }
  static bench_thread_t th[BENCH_MAX_THREADS];
  double v[BENCH_MAX_SAMPLES];
  if (cfg->threads == 1) {
    th[0].cfg = cfg;
    th[0].index = 0;
    bench_thread_main(&th[0]);
    for (int r = 0; r < cfg->samples; r++) v[r] = th[0].sample_ns[r];
    return bench_median(v, (size_t)cfg->samples);
  }
  /* The main thread coordinates: it releases all workers at once and times until the last one
   * is done (wall time, so waiting for a lock counts). */
  pthread_barrier_t go, done;
  pthread_barrier_init(&go, NULL, (unsigned)cfg->threads + 1);
  pthread_barrier_init(&done, NULL, (unsigned)cfg->threads + 1);
  for (int i = 0; i < cfg->threads; i++) {
    th[i].cfg = cfg;
    th[i].index = i;
    th[i].go = &go;
    th[i].done = &done;
    if (pthread_create(&th[i].tid, NULL, bench_thread_main, &th[i]) != 0) bench_fail("pthread_create", -1);
  }
  for (int r = 0; r < cfg->samples; r++) {
    pthread_barrier_wait(&go);
    double t0 = bench_now_ns();
    pthread_barrier_wait(&done);
    if (cfg->sample_end) cfg->sample_end();
    v[r] = (bench_now_ns() - t0) / ((double)cfg->pairs * cfg->threads);
  }
  for (int i = 0; i < cfg->threads; i++) pthread_join(th[i].tid, NULL);
  pthread_barrier_destroy(&go);
  pthread_barrier_destroy(&done);
  return bench_median(v, (size_t)cfg->samples);
}

/* argv: <same|random64> <pairs> <threads> <samples> <depth> */
static inline int bench_parse_args(int argc, char **argv, bench_config_t *cfg) {
  if (argc != 6 || bench_parse_pattern(argv[1], &cfg->pattern) != 0) {
    fprintf(stderr, "usage: %s same|random64 PAIRS THREADS SAMPLES DEPTH\n", argv[0]);
    return -1;
  }
  cfg->pairs = atol(argv[2]);
  cfg->threads = atoi(argv[3]);
  cfg->samples = atoi(argv[4]);
  cfg->depth = atoi(argv[5]);
  return 0;
}

#endif

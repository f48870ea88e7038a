/* SPDX-License-Identifier: Apache-2.0 */
/* The live record's costs (bench/README.md, "The live record"):
 *
 *   scrape N     `cudasnap metrics`' work for one scrape of N processes, each with one device and
 *                16 sites: list the records, copy each under its sequence lock, check its process,
 *                write the exposition. N sleeping children stand for the processes.
 *   walk N       the walk of an allocator holding N live blocks from 64 stacks under its lock, which
 *                publications did until issue 45; and what a publication holds the lock for now:
 *                the statistics and one page of counts by stack (best and longest of 1,000).
 *   count        an observer counting bytes per stack in a hash as blocks come and go, on every
 *                alloc and free; ns per pair with it and without (issue 35's estimate of counting;
 *                the allocator's own counts of issue 45 are measured by bench/compare_libs.sh).
 *
 * Prints BENCH lines (name value unit). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"
#include "cli/metrics_text.h"
#include "live/live_read.h"
#include "live/live_write.h"

static double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench_scrape(int n) {
  char dir[] = "/tmp/cudasnap-bench-live-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  pid_t *kids = calloc((size_t)n, sizeof *kids);
  cs_live_writer_t *w = calloc((size_t)n, sizeof *w);
  for (int i = 0; i < n; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      pause();
      _exit(0);
    }
  }
  usleep(200000); /* the children run */
  for (int i = 0; i < n; i++) {
    cs_live_header_t h;
    memset(&h, 0, sizeof h);
    h.pid = kids[i];
    h.uid = (uint32_t)geteuid();
    h.signal = SIGUSR1;
    h.start_ticks = cs_live_start_ticks((long)kids[i]);
    h.pid_ns = cs_live_pid_ns();
    h.rank = i;
    h.local_rank = i % 8;
    snprintf(h.job_id, sizeof h.job_id, "88123");
    snprintf(h.host, sizeof h.host, "node17");
    snprintf(h.exe, sizeof h.exe, "train.py");
    h.interval_ms = 1000;
    if (cs_live_writer_open(&w[i], dir, &h) != 0) return 1;
    cs_live_record_t *r = w[i].record;
    cs_live_writer_begin(&w[i]);
    r->header.device_count = 1;
    cs_live_device_t *d = &r->devices[0];
    d->device = 0;
    d->allocated_bytes = (uint64_t)(i + 1) << 30;
    d->reserved_bytes = d->allocated_bytes + (1u << 30);
    d->peak_allocated_bytes = d->reserved_bytes;
    d->driver_used_bytes = d->reserved_bytes;
    d->driver_known = 1;
    d->site_count = CS_LIVE_TOP_SITES;
    for (int s = 0; s < CS_LIVE_TOP_SITES; s++) {
      d->sites[s].bytes = (uint64_t)(CS_LIVE_TOP_SITES - s) << 24;
      d->sites[s].blocks = (uint64_t)s + 1;
      snprintf(d->sites[s].name, sizeof d->sites[s].name, "layer_%d_forward /home/user/model/blocks.py:%d", s, 100 + s);
    }
    cs_live_writer_end(&w[i]);
  }
  cs_live_filter_t f = {.all_users = false, .uid = getuid(), .pid = 0, .job_id = NULL};
  int rounds = 50;
  double best = 1e9, total = 0;
  size_t bytes = 0, seen = 0;
  for (int k = 0; k < rounds; k++) {
    double t0 = bench_now();
    cs_live_list_t list;
    if (cs_live_list(dir, &f, &list) != 0) return 1;
    char *text = NULL;
    FILE *mem = open_memstream(&text, &bytes);
    cs_metrics_write(mem, &list);
    fclose(mem);
    seen = list.count;
    cs_live_list_free(&list);
    free(text);
    double t = bench_now() - t0;
    total += t;
    if (t < best) best = t;
  }
  printf("BENCH live_scrape_%d_processes_seen %zu count\n", n, seen);
  printf("BENCH live_scrape_%d_ms_mean %.3f ms\n", n, total / rounds * 1e3);
  printf("BENCH live_scrape_%d_ms_best %.3f ms\n", n, best * 1e3);
  printf("BENCH live_scrape_%d_bytes %zu B\n", n, bytes);
  for (int i = 0; i < n; i++) {
    cs_live_writer_close(&w[i], true);
    kill(kids[i], SIGKILL);
    waitpid(kids[i], NULL, 0);
  }
  char user_dir[600];
  snprintf(user_dir, sizeof user_dir, "%s/%s%u", dir, CS_LIVE_PREFIX, (unsigned)geteuid());
  rmdir(user_dir);
  rmdir(dir);
  free(kids);
  free(w);
  return seen == (size_t)n ? 0 : 1;
}

/* The walk of live_gather.c: per stack id, bytes and blocks of the allocated blocks. */
typedef struct bench_stack_s {
  uint64_t bytes, blocks;
} bench_stack_t;

static void bench_count_block(void *ctx, const cs_segment_info_t *segment, const cs_block_info_t *block) {
  (void)segment;
  bench_stack_t *by_stack = ctx;
  if (block->state != CS_BLOCK_ALLOCATED) return;
  by_stack[block->stack_id & 63].bytes += block->requested;
  by_stack[block->stack_id & 63].blocks++;
}

static cs_allocator_t *bench_allocator(cs_sim_device_t *dev, const cs_allocator_observer_t *observer) {
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  conf.free_mode = CS_FREE_STREAM;
  cs_sim_device_init(dev, (size_t)256 << 30);
  cs_backend_t backend = cs_sim_backend(dev);
  return cs_allocator_create(&conf, &backend, observer);
}

static int bench_walk(int n) {
  cs_sim_device_t dev;
  cs_allocator_t *a = bench_allocator(&dev, NULL);
  uintptr_t *p = calloc((size_t)n, sizeof *p);
  for (int i = 0; i < n; i++)
    if (cs_allocator_malloc(a, 4096 + (size_t)(i % 7) * 512, 0, (uint32_t)(i % 64) + 1, &p[i]) != 0) return 1;
  bench_stack_t by_stack[64];
  double best = 1e9;
  for (int k = 0; k < 20; k++) {
    memset(by_stack, 0, sizeof by_stack);
    double t0 = bench_now();
    cs_allocator_lock(a);
    cs_stats_t stats;
    cs_allocator_get_stats_locked(a, &stats);
    cs_allocator_visit_locked(a, bench_count_block, by_stack);
    cs_allocator_unlock(a);
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  printf("BENCH live_walk_%d_blocks_us %.1f us\n", n, best * 1e6);
  /* what a publication holds the lock for since issue 45: the statistics and a page of counts */
  static cs_stack_live_t page[CS_STACK_LIVE_PAGE];
  double hold_best = 1e9, hold_worst = 0;
  for (int k = 0; k < 1000; k++) {
    double t0 = bench_now();
    cs_allocator_lock(a);
    cs_stats_t stats;
    cs_allocator_get_stats_locked(a, &stats);
    (void)cs_allocator_stack_live_locked(a, 0, page);
    cs_allocator_unlock(a);
    double t = bench_now() - t0;
    if (t < hold_best) hold_best = t;
    if (t > hold_worst) hold_worst = t;
  }
  if (page[1].blocks + page[64].blocks == 0) return 1; /* the counts are there */
  printf("BENCH live_page_hold_%d_blocks_us_best %.2f us\n", n, hold_best * 1e6);
  printf("BENCH live_page_hold_%d_blocks_us_max %.2f us\n", n, hold_worst * 1e6);
  for (int i = 0; i < n; i++) cs_allocator_free(a, p[i]);
  free(p);
  cs_allocator_destroy(a);
  return 0;
}

/* The alternative: counted as blocks come and go, by stack (a hash by stack id kept by the
 * observer, under the allocator's lock as observers run). */
typedef struct bench_counts_s {
  uint32_t key[4096];
  int64_t bytes[4096];
  uintptr_t addr_of[1]; /* unused */
} bench_counts_t;

static void bench_count_event(void *ctx, const cs_trace_event_t *e) {
  bench_counts_t *c = ctx;
  int64_t delta;
  if (e->action == CS_TRACE_ALLOC) delta = (int64_t)e->size;
  else if (e->action == CS_TRACE_FREE_REQUESTED) delta = -(int64_t)e->size;
  else return;
  uint32_t k = e->stack_id + 1;
  size_t j = (k * 2654435761u) & 4095;
  while (c->key[j] && c->key[j] != k) j = (j + 1) & 4095;
  c->key[j] = k;
  c->bytes[j] += delta;
}

static void bench_noop_event(void *ctx, const cs_trace_event_t *e) {
  (void)ctx;
  (void)e;
}

static double bench_pairs(cs_allocator_observer_t *obs) {
  cs_sim_device_t dev;
  cs_allocator_t *a = bench_allocator(&dev, obs);
  enum { PAIRS = 2000000 };
  uintptr_t p;
  for (int i = 0; i < 1000; i++) { /* warm the cache */
    cs_allocator_malloc(a, 4096, 0, 1, &p);
    cs_allocator_free(a, p);
  }
  double t0 = bench_now();
  for (int i = 0; i < PAIRS; i++) {
    cs_allocator_malloc(a, 4096, 0, (uint32_t)(i & 63) + 1, &p);
    cs_allocator_free(a, p);
  }
  double ns = (bench_now() - t0) / PAIRS * 1e9;
  cs_allocator_destroy(a);
  return ns;
}

static int bench_count(void) {
  static bench_counts_t counts;
  double with[7], without[7];
  for (int r = 0; r < 7; r++) { /* by turns: the machine's load varies */
    cs_allocator_observer_t noop = {.on_event = bench_noop_event, .ctx = NULL};
    cs_allocator_observer_t count = {.on_event = bench_count_event, .ctx = &counts};
    without[r] = bench_pairs(&noop);
    with[r] = bench_pairs(&count);
  }
  for (int i = 0; i < 7; i++) /* medians */
    for (int j = i + 1; j < 7; j++) {
      if (with[j] < with[i]) { double t = with[i]; with[i] = with[j]; with[j] = t; }
      if (without[j] < without[i]) { double t = without[i]; without[i] = without[j]; without[j] = t; }
    }
  printf("BENCH live_pair_without_counting_ns %.1f ns\n", without[3]);
  printf("BENCH live_pair_with_counting_ns %.1f ns\n", with[3]);
  return 0;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "all";
  int rc = 0;
  if (!strcmp(what, "all") || !strcmp(what, "scrape")) rc |= bench_scrape(64);
  if (!strcmp(what, "all") || !strcmp(what, "walk")) {
    rc |= bench_walk(1000);
    rc |= bench_walk(10000);
    rc |= bench_walk(100000);
    rc |= bench_walk(1000000);
  }
  if (!strcmp(what, "all") || !strcmp(what, "count")) rc |= bench_count();
  return rc;
}

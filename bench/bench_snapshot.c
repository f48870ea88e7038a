/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot writing and symbolization, driven directly (no preload, no driver):
 *
 *   bench_snapshot dump EVENTS RUNS DIR   history of EVENTS entries, written RUNS times as JSON and
 *                                         as pickle, interleaved (J P J P ...), into a file in DIR
 *                                         (removed after each run); DIR /dev/null writes there
 *                                         instead (figures named *_devnull: no file system)
 *   bench_snapshot symbolize PCS RUNS     PCS distinct PCs, half spread over libc's code and half
 *                                         over this program's, named by a fresh symbolizer
 *   bench_snapshot write EVENTS FILE      one JSON snapshot of the same workload, kept in FILE: input
 *                                         for other benchmarks (`cudasnap report` of 100,000 events)
 *
 * The dump is what process/dump_write.c does at a trigger: copy the state (cs_snap_state_*) from an
 * allocator over the simulated device and a ring of EVENTS entries, then symbolizer + emitter +
 * cs_snapshot_write into a file through an fd sink. The ring is filled by a mixed workload
 * (mostly small tensors, some large ones, 512 live) whose allocations carry stacks interned from a
 * fixed set of call sites: 400 distinct stacks of 12-32 frames (22 on average) that share their
 * outer frames, over 1,500 PCs of this program and libc, so the writer and the symbolizer see what
 * a training program gives them. The timed part is everything after the copy: symbolizer
 * creation, every distinct frame named once, the emitter, the writes and the final flush (the
 * copy, which runs under the allocators' locks, is reported on its own).
 *
 * Prints BENCH lines (medians over RUNS); notes go to stderr. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"
#include "bench/bench_common.h"
#include "common/cs_options.h"
#include "memviz/emit.h"
#include "record/intern.h"
#include "record/ring.h"
#include "memviz/sink.h"
#include "snapshot/snapshot.h"
#include "snapshot/symbolize.h"

static uint64_t bench_rng = UINT64_C(0x2545F4914F6CDD1D);

static uint64_t bench_next(void) {
  bench_rng ^= bench_rng << 13, bench_rng ^= bench_rng >> 7, bench_rng ^= bench_rng << 17;
  return bench_rng;
}

/* ---- code ranges: the executable segments of this program and of libc ---- */

typedef struct bench_range_s {
  uintptr_t lo, hi;
} bench_range_t;

typedef struct bench_ranges_s {
  bench_range_t self, libc;
} bench_ranges_t;

static int bench_find_ranges(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  bench_ranges_t *r = arg;
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  bench_range_t *out = NULL;
  if (name[0] == '\0' && r->self.hi == 0) out = &r->self; /* the program comes first */
  else if (strstr(name, "/libc.so")) out = &r->libc;
  if (!out) return 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    uintptr_t hi = lo + (uintptr_t)ph->p_memsz;
    if (hi - lo > out->hi - out->lo) *out = (bench_range_t){lo, hi}; /* the largest: .text */
  }
  return 0;
}

static bench_ranges_t bench_code_ranges(void) {
  bench_ranges_t r;
  memset(&r, 0, sizeof r);
  dl_iterate_phdr(bench_find_ranges, &r);
  if (r.self.hi == 0 || r.libc.hi == 0) {
    fprintf(stderr, "bench: cannot find the code of this program and libc\n");
    exit(1);
  }
  return r;
}

/* The i-th of n PCs spread evenly over a range, at an odd offset so none is a function start. */
static uintptr_t bench_spread(const bench_range_t *r, size_t i, size_t n) {
  uintptr_t span = r->hi - r->lo;
  return (r->lo + (uintptr_t)((double)span * ((double)i + 0.5) / (double)n)) | 1u;
}

/* ---- call sites ---- */

enum {
  BENCH_PC_POOL = 1500, BENCH_STACKS = 400, BENCH_ROOT = 6, BENCH_MIN_DEPTH = 12, BENCH_MAX_DEPTH = 32,
  BENCH_LIVE_BLOCKS = 512,
};

typedef struct bench_sites_s {
  uint32_t ids[BENCH_STACKS];
} bench_sites_t;

static void bench_make_sites(cs_intern_t *intern, const bench_ranges_t *r, bench_sites_t *sites) {
  static uintptr_t pool[BENCH_PC_POOL];
  for (size_t i = 0; i < BENCH_PC_POOL; i++) {
    /* two thirds in the program, one third in libc, in random order */
    const bench_range_t *range = i % 3 == 2 ? &r->libc : &r->self;
    pool[i] = bench_spread(range, (size_t)(bench_next() % 100000), 100000);
  }
  for (size_t s = 0; s < BENCH_STACKS; s++) {
    uintptr_t pcs[BENCH_MAX_DEPTH];
    size_t depth = BENCH_MIN_DEPTH + (size_t)(bench_next() % (BENCH_MAX_DEPTH - BENCH_MIN_DEPTH + 1));
    /* innermost first: frames near the allocation vary the most; the outermost BENCH_ROOT are
     * the program's main loop, the same in every stack */
    for (size_t i = 0; i < depth; i++) {
      size_t from_root = depth - 1 - i;
      pcs[i] = from_root < BENCH_ROOT ? pool[from_root] : pool[BENCH_ROOT + bench_next() % (BENCH_PC_POOL - BENCH_ROOT)];
    }
    sites->ids[s] = cs_intern_stack(intern, pcs, depth);
    if (sites->ids[s] == 0) {
      fprintf(stderr, "bench: stack interning failed\n");
      exit(1);
    }
  }
}

/* ---- the recorder: allocator events into the ring, as device/recorder.c does (device 0) ---- */

static void bench_record(void *ctx, const cs_trace_event_t *ev) { cs_snap_record_event(ctx, 0, ev); }

/* Mostly small tensors, some up to 1 MiB, a few large ones from a few size classes. */
static size_t bench_size(void) {
  uint64_t r = bench_next();
  unsigned cls = (unsigned)(r % 100);
  uint64_t j = r >> 8;
  if (cls < 60) return 1 + (size_t)(j % (64 << 10));
  if (cls < 85) return (64 << 10) + (size_t)(j % (960 << 10));
  static const size_t large[] = {(size_t)3 << 20, (size_t)6 << 20, (size_t)12 << 20, (size_t)40 << 20};
  return large[j % 4] - (size_t)((j >> 8) % (256 << 10));
}

/* Run the workload until the ring has wrapped once more than its capacity. */
static void bench_fill(cs_allocator_t *a, cs_ring_t *ring, const bench_sites_t *sites) {
  static uintptr_t live[BENCH_LIVE_BLOCKS];
  while (ring->pushed < ring->capacity + ring->capacity / 8) {
    size_t slot = (size_t)(bench_next() % BENCH_LIVE_BLOCKS);
    if (live[slot] && cs_allocator_free(a, live[slot]) != 0) bench_fail("free", -1);
    uint32_t stack = sites->ids[bench_next() % BENCH_STACKS];
    int rc = cs_allocator_malloc(a, bench_size(), 0, stack, &live[slot]);
    if (rc != 0) bench_fail("allocation", rc);
  }
}

/* ---- one dump ---- */

typedef struct bench_dump_result_s {
  double write_s;
  double copy_s;
  uint64_t bytes;
  size_t events;
} bench_dump_result_t;

/* keep: NULL to write into DIR and remove the file afterwards, or the path of a file to keep. */
static bench_dump_result_t bench_dump(cs_allocator_t *a, cs_ring_t *ring, cs_intern_t *intern, const char *dir,
                                      cs_emit_format_t format, char **argv, const char *keep) {
  bench_dump_result_t res;
  memset(&res, 0, sizeof res);
  cs_options_t opts;
  cs_options_init(&opts);
  opts.max_entries = ring->capacity;

  /* timed: what the library does under the allocators' locks */
  cs_snap_state_t state;
  if (cs_snap_state_init(&state, 1) != 0) bench_fail("cs_snap_state_init", -1);
  if (cs_snap_state_reserve_history(&state, ring->capacity) != 0) bench_fail("cs_snap_state_reserve_history", -1);
  double t0 = bench_now_ns();
  cs_allocator_lock(a);
  cs_snap_state_add_allocator(&state, 0, a);
  cs_snap_state_add_history(&state, ring);
  cs_allocator_unlock(a);
  double t1 = bench_now_ns();
  cs_snap_state_finish(&state);
  if (state.error) bench_fail("the snapshot copy", state.error);

  char path[4096];
  bool devnull = !keep && strcmp(dir, "/dev/null") == 0;
  if (keep) snprintf(path, sizeof path, "%s", keep);
  else if (devnull) snprintf(path, sizeof path, "/dev/null");
  else snprintf(path, sizeof path, "%s/bench-snapshot.%s", dir, format == CS_EMIT_PICKLE ? "pickle" : "json");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "bench: cannot create %s: %s\n", path, strerror(errno));
    exit(1);
  }
  static cs_fd_sink_t sink;
  cs_fd_sink_init(&sink, fd);
  cs_emitter_t *e = cs_emitter_create(format, cs_fd_sink(&sink), 2);
  if (!e) bench_fail("cs_emitter_create", -1);
  cs_symbolizer_t *sym = cs_symbolizer_create();
  if (!sym) bench_fail("cs_symbolizer_create", -1);
  const char *const *args = (const char *const *)argv;
  cs_snapshot_meta_t meta = {.version = CS_VERSION_STRING, .pid = (long)getpid(), .argv = args,
                             .host = "bench", .trigger = "api", .dump_number = 1, .time_us = 0,
                             .options = &opts, .alloc_conf_text = ""};
  int err = cs_snapshot_write(&state, intern, sym, &meta, e);
  int flushed = cs_fd_sink_flush(&sink);
  cs_symbolizer_destroy(sym);
  if (close(fd) != 0 && !err) err = errno;
  if (!err) err = flushed;
  double t2 = bench_now_ns();
  if (err) {
    fprintf(stderr, "bench: writing %s failed: %s\n", path, strerror(err));
    exit(1);
  }
  if (!devnull && !keep) unlink(path);
  res.copy_s = (t1 - t0) / 1e9;
  res.write_s = (t2 - t1) / 1e9;
  res.bytes = sink.total;
  res.events = state.entry_count;
  cs_snap_state_free(&state);
  return res;
}

static const char *bench_count_name(size_t n, char *buf, size_t len) {
  if (n % 1000000 == 0) snprintf(buf, len, "%zum", n / 1000000);
  else if (n % 1000 == 0) snprintf(buf, len, "%zuk", n / 1000);
  else snprintf(buf, len, "%zu", n);
  return buf;
}

static int bench_main_dump(size_t events, int runs, const char *dir, char **argv, const char *keep) {
  if (runs < 1 || runs > BENCH_MAX_SAMPLES || events == 0) return 2;
  cs_ring_t ring;
  if (cs_ring_init(&ring, events) != 0) bench_fail("cs_ring_init", -1);
  cs_intern_t *intern = cs_intern_create((size_t)1 << 18);
  if (!intern) bench_fail("cs_intern_create", -1);
  bench_sites_t sites;
  bench_ranges_t ranges = bench_code_ranges();
  bench_make_sites(intern, &ranges, &sites);

  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  cs_sim_device_t dev;
  cs_sim_device_init(&dev, (size_t)1 << 40);
  cs_backend_t backend = cs_sim_backend(&dev);
  cs_allocator_observer_t observer = {.on_event = bench_record, .ctx = &ring};
  cs_allocator_t *a = cs_allocator_create(&conf, &backend, &observer);
  if (!a) bench_fail("cs_allocator_create", -1);
  bench_fill(a, &ring, &sites);
  if (keep) {
    bench_dump_result_t res = bench_dump(a, &ring, intern, NULL, CS_EMIT_JSON, argv, keep);
    fprintf(stderr, "bench: wrote %s: %zu events, %llu bytes\n", keep, res.events, (unsigned long long)res.bytes);
    cs_allocator_destroy(a);
    cs_intern_destroy(intern);
    cs_ring_destroy(&ring);
    return res.events == events ? 0 : 1;
  }

  static const cs_emit_format_t formats[2] = {CS_EMIT_JSON, CS_EMIT_PICKLE};
  static const char *const names[2] = {"json", "pickle"};
  double rate[2][BENCH_MAX_SAMPLES], size[2][BENCH_MAX_SAMPLES], copy[BENCH_MAX_SAMPLES * 2];
  size_t got = 0;
  for (int r = 0; r < runs; r++) {
    for (int f = 0; f < 2; f++) {
      bench_dump_result_t res = bench_dump(a, &ring, intern, dir, formats[f], argv, NULL);
      got = res.events;
      rate[f][r] = (double)res.events / res.write_s;
      size[f][r] = (double)res.bytes / (double)res.events;
      copy[r * 2 + f] = res.copy_s * 1e3;
      fprintf(stderr, "bench: %s, %zu events: %.3f s, %.1f MiB\n", names[f], res.events, res.write_s,
              (double)res.bytes / (1 << 20));
    }
  }
  if (got != events) {
    fprintf(stderr, "bench: the snapshot held %zu events, expected %zu\n", got, events);
    return 1;
  }
  char count[40];
  bench_count_name(events, count, sizeof count);
  if (strcmp(dir, "/dev/null") == 0) strcat(count, "_devnull"); /* the writer alone, no file system */
  for (int f = 0; f < 2; f++) {
    printf("BENCH dump_%s_%s_events_per_s %.0f events/s\n", names[f], count, bench_median(rate[f], (size_t)runs));
    printf("BENCH dump_%s_%s_bytes_per_event %.1f B\n", names[f], count, bench_median(size[f], (size_t)runs));
  }
  printf("BENCH dump_state_copy_%s %.2f ms\n", count, bench_median(copy, (size_t)runs * 2));
  cs_allocator_destroy(a);
  cs_intern_destroy(intern);
  cs_ring_destroy(&ring);
  return 0;
}

/* ---- symbolization ---- */

static int bench_main_symbolize(size_t pcs, int runs) {
  if (runs < 1 || runs > BENCH_MAX_SAMPLES || pcs < 2) return 2;
  bench_ranges_t r = bench_code_ranges();
  uintptr_t *v = malloc(pcs * sizeof *v);
  if (!v) bench_fail("malloc", -1);
  size_t half = pcs / 2;
  for (size_t i = 0; i < pcs; i++)
    v[i] = i < half ? bench_spread(&r.libc, i, half) : bench_spread(&r.self, i - half, pcs - half);
  double ms[BENCH_MAX_SAMPLES];
  size_t named[2] = {0, 0}, with_line[2] = {0, 0}; /* [0] libc, [1] the program */
  for (int run = 0; run < runs; run++) {
    double t0 = bench_now_ns();
    cs_symbolizer_t *s = cs_symbolizer_create();
    if (!s) bench_fail("cs_symbolizer_create", -1);
    memset(named, 0, sizeof named);
    memset(with_line, 0, sizeof with_line);
    for (size_t i = 0; i < pcs; i++) {
      cs_frame_t f = cs_symbolize(s, v[i], 0);
      named[i >= half] += strcmp(f.name, "??") != 0;
      with_line[i >= half] += f.line > 0;
    }
    cs_symbolizer_destroy(s);
    ms[run] = (bench_now_ns() - t0) / 1e6;
  }
  fprintf(stderr, "bench: symbolized %zu PCs: libc %zu named, %zu with a line; this program (%zu KiB of code) %zu named, %zu with a line\n",
          pcs, named[0], with_line[0], (size_t)(r.self.hi - r.self.lo) >> 10, named[1], with_line[1]);
  char count[32];
  printf("BENCH symbolize_%s_pcs %.1f ms\n", bench_count_name(pcs, count, sizeof count),
         bench_median(ms, (size_t)runs));
  free(v);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "dump") == 0)
    return bench_main_dump((size_t)strtoull(argv[2], NULL, 10), atoi(argv[3]), argv[4], argv, NULL);
  if (argc == 4 && strcmp(argv[1], "write") == 0)
    return bench_main_dump((size_t)strtoull(argv[2], NULL, 10), 1, NULL, argv, argv[3]);
  if (argc == 4 && strcmp(argv[1], "symbolize") == 0)
    return bench_main_symbolize((size_t)strtoull(argv[2], NULL, 10), atoi(argv[3]));
  fprintf(stderr, "usage: %s dump EVENTS RUNS DIR | symbolize PCS RUNS | write EVENTS FILE\n", argv[0]);
  return 2;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* torch.cuda.memory_summary() text, byte for byte (torch/cuda/memory.py; layout in
 * snapshot-format.md section 5.5). No allocation: lines are formatted on the stack and copied into
 * the caller's buffer with snprintf's truncation contract. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/cs_assert.h"
#include "common/cs_compiler.h"
#include "stats/stats.h"

enum {
  CS_SUMMARY_WIDTH = 75, /* characters between the two '|' of every line */
  CS_SUMMARY_LINE_MAX = 256, /* a row with four 20-digit values is 131; never truncates */
};

/* ---------------------------------------------------------------------------------------------
 * Output buffer with snprintf semantics: count everything, store what fits, keep it NUL-terminated
 * ------------------------------------------------------------------------------------------- */

typedef struct cs_summary_out_s {
  char *buf;
  size_t len; /* capacity including the NUL; 0 = measure only */
  size_t pos; /* length of the whole text so far, stored or not */
} cs_summary_out_t;

static void cs_summary_put(cs_summary_out_t *o, const char *s, size_t n) {
  if (o->len > 0 && o->pos < o->len - 1) {
    size_t room = o->len - 1 - o->pos;
    memcpy(o->buf + o->pos, s, n < room ? n : room);
  }
  o->pos += n;
}

/* One output line: '|', the body (75 characters when every value fits its field), '|', '\n'. */
static void cs_summary_line(cs_summary_out_t *o, const char *body) {
  cs_summary_put(o, "|", 1);
  cs_summary_put(o, body, strlen(body));
  cs_summary_put(o, "|\n", 2);
}

static void cs_summary_rule(cs_summary_out_t *o, char c) {
  char body[CS_SUMMARY_WIDTH + 1];
  memset(body, c, CS_SUMMARY_WIDTH);
  body[CS_SUMMARY_WIDTH] = '\0';
  cs_summary_line(o, body);
}

/* ---------------------------------------------------------------------------------------------
 * Value formatters (memory_summary's nested _format_size and _format_count)
 * ------------------------------------------------------------------------------------------- */

/* Python's //: rounds toward minus infinity, so -1 // 1024 is -1, not 0. */
static int64_t cs_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}

/* Picks the unit from ref (the 'all' row's value of the same column) and scales value down to it
 * with floor division; returns the unit's index. PyTorch keeps ref as a float after the first
 * division (ref /= 1024); dividing a double by a power of two is exact, so (double)ref / 1024^k
 * compares against the threshold exactly as Python's float does, including the rounding of int64
 * values above 2^53. For counts (step 1000) only ref / 1000 is compared (three units), and where
 * that is near the threshold ref is far below 2^53, so (double)ref is exact there as well. */
static size_t cs_scale(int64_t *value, int64_t ref, int64_t step, double threshold, size_t n_units) {
  double pref = (double)ref;
  size_t u = 0;
  while (u + 1 < n_units && !(pref < threshold)) {
    u++;
    *value = cs_floor_div(*value, step);
    pref /= (double)step;
  }
  return u;
}

/* "{sz:6d} {prefix}": the value right-aligned in 6, a space, a 3-character unit. */
static void cs_format_size(char *out, size_t out_len, int64_t value, int64_t ref) {
  static const char *const units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t u = cs_scale(&value, ref, 1024, 768.0 * 1024.0, CS_ARRAY_SIZE(units));
  int n = snprintf(out, out_len, "%6" PRId64 " %s", value, units[u]);
  cs_assert(n > 0 && (size_t)n < out_len);
  (void)n;
}

/* "{cnt:7d} {prefix} ": the value right-aligned in 7, a space, a 1-character unit, a space. */
static void cs_format_count(char *out, size_t out_len, int64_t value, int64_t ref) {
  static const char *const units[] = {" ", "K", "M"};
  size_t u = cs_scale(&value, ref, 1000, 750.0 * 1000.0, CS_ARRAY_SIZE(units));
  int n = snprintf(out, out_len, "%7" PRId64 " %s ", value, units[u]);
  cs_assert(n > 0 && (size_t)n < out_len);
  (void)n;
}

typedef void cs_format_fn(char *out, size_t out_len, int64_t value, int64_t ref);

/* ---------------------------------------------------------------------------------------------
 * Rows and blocks
 * ------------------------------------------------------------------------------------------- */

/* " <label:<21> | cur | peak | alloc | freed ", each value formatted against its column's ref. */
static void cs_summary_row(cs_summary_out_t *o, const char *label, const cs_stat_t *s,
                           const cs_stat_t *ref, cs_format_fn *fmt) {
  char cur[48], peak[48], alloc[48], freed[48];
  fmt(cur, sizeof cur, s->current, ref->current);
  fmt(peak, sizeof peak, s->peak, ref->peak);
  fmt(alloc, sizeof alloc, s->allocated, ref->allocated);
  fmt(freed, sizeof freed, s->freed, ref->freed);
  char body[CS_SUMMARY_LINE_MAX];
  int n = snprintf(body, sizeof body, " %-21s | %s | %s | %s | %s ", label, cur, peak, alloc, freed);
  cs_assert(n > 0 && (size_t)n < sizeof body);
  (void)n;
  cs_summary_line(o, body);
}

/* The per-pool metrics in memory_summary's display order (not memory_stats() order). This is a
 * display table of PyTorch's labels, not a key list: the keys themselves come from stats.def. */
typedef struct cs_summary_metric_s {
  size_t offset; /* of the cs_stat_t[CS_STAT_POOLS] array inside cs_stats_t */
  const char *label;
  cs_format_fn *fmt;
} cs_summary_metric_t;

static const cs_summary_metric_t cs_summary_metrics[] = {
    {offsetof(cs_stats_t, allocated_bytes), "Allocated memory", cs_format_size},
    {offsetof(cs_stats_t, active_bytes), "Active memory", cs_format_size},
    {offsetof(cs_stats_t, requested_bytes), "Requested memory", cs_format_size},
    {offsetof(cs_stats_t, reserved_bytes), "GPU reserved memory", cs_format_size},
    {offsetof(cs_stats_t, inactive_split_bytes), "Non-releasable memory", cs_format_size},
    {offsetof(cs_stats_t, allocation), "Allocations", cs_format_count},
    {offsetof(cs_stats_t, active), "Active allocs", cs_format_count},
    {offsetof(cs_stats_t, segment), "GPU reserved segments", cs_format_count},
    {offsetof(cs_stats_t, inactive_split), "Non-releasable allocs", cs_format_count},
};

/* Single Stats at the end; each value is its own reference. */
static const cs_summary_metric_t cs_summary_oversize[] = {
    {offsetof(cs_stats_t, oversize_allocations), "Oversize allocations", cs_format_count},
    {offsetof(cs_stats_t, oversize_segments), "Oversize GPU segments", cs_format_count},
};

static const cs_stat_t *cs_summary_stat_at(const cs_stats_t *stats, size_t offset) {
  return (const cs_stat_t *)(const void *)((const char *)stats + offset);
}

/* ---------------------------------------------------------------------------------------------
 * memory_summary
 * ------------------------------------------------------------------------------------------- */

size_t cs_stats_summary(const cs_stats_t *stats, int device, bool abbreviated, char *buf, size_t len) {
  cs_assert(stats != NULL);
  cs_assert(buf != NULL || len == 0);
  cs_summary_out_t o = {.buf = buf, .len = len, .pos = 0};
  char body[CS_SUMMARY_LINE_MAX];
  int n;

  cs_summary_rule(&o, '=');
  /* " {_:16} PyTorch CUDA memory summary, device ID {device:<17d} " */
  n = snprintf(body, sizeof body, " %16s PyTorch CUDA memory summary, device ID %-17d ", "", device);
  cs_assert(n > 0 && (size_t)n < sizeof body);
  cs_summary_line(&o, body);
  cs_summary_rule(&o, '-');
  /* "  {_:9} CUDA OOMs: {num_ooms:<12d} | {_:6} cudaMalloc retries: {num_alloc_retries:<8d}  " */
  n = snprintf(body, sizeof body, "  %9s CUDA OOMs: %-12" PRId64 " | %6s cudaMalloc retries: %-8" PRId64 "  ",
               "", stats->num_ooms, "", stats->num_alloc_retries);
  cs_assert(n > 0 && (size_t)n < sizeof body);
  (void)n;
  cs_summary_line(&o, body);
  cs_summary_rule(&o, '=');
  cs_summary_line(&o, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");

  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_summary_metrics); i++) {
    const cs_summary_metric_t *m = &cs_summary_metrics[i];
    const cs_stat_t *pools = cs_summary_stat_at(stats, m->offset);
    const cs_stat_t *all = &pools[CS_STAT_ALL];
    cs_summary_rule(&o, '-');
    cs_summary_row(&o, m->label, all, all, m->fmt);
    if (!abbreviated) {
      cs_summary_row(&o, "      from large pool", &pools[CS_STAT_LARGE_POOL], all, m->fmt);
      cs_summary_row(&o, "      from small pool", &pools[CS_STAT_SMALL_POOL], all, m->fmt);
    }
  }

  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_summary_oversize); i++) {
    const cs_summary_metric_t *m = &cs_summary_oversize[i];
    const cs_stat_t *s = cs_summary_stat_at(stats, m->offset);
    cs_summary_rule(&o, '-');
    cs_summary_row(&o, m->label, s, s, m->fmt);
  }

  cs_summary_rule(&o, '=');

  if (len > 0) buf[o.pos < len ? o.pos : len - 1] = '\0';
  return o.pos;
}

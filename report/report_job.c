/* SPDX-License-Identifier: Apache-2.0 */
/* The job page's data (contract in report/report_job.h). */
#include "report/report_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/peak.h"
#include "analysis/rank_summary.h"
#include "analysis/snapview.h"
#include "memviz/emit.h"

typedef struct cs_job_point_s {
  int64_t t;
  uint64_t bytes;
} cs_job_point_t;

typedef struct cs_job_row_s {
  cs_rank_summary_t s;
  const char *file;
  cs_job_point_t *curve; /* down-sampled */
  size_t npoints;
  cs_mem_sink_t detail;  /* the single-file report's data */
} cs_job_row_t;

/* Every trace entry with a time, and the bytes live after it. */
typedef struct cs_job_walk_s {
  cs_job_point_t *all;
  size_t count, cap;
  bool failed;
} cs_job_walk_t;

static void cs_job_each(void *ctx, const cs_doc_t *doc, cs_val_t entry, uint64_t live) {
  cs_job_walk_t *w = ctx;
  int64_t t;
  if (w->failed || !cs_view_int_key(doc, entry, CS_KEY_TIME_US, &t)) return;
  if (w->count == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 4096;
    cs_job_point_t *p = realloc(w->all, cap * sizeof *p);
    if (p == NULL) {
      w->failed = true;
      return;
    }
    w->all = p;
    w->cap = cap;
  }
  w->all[w->count++] = (cs_job_point_t){.t = t, .bytes = live};
}

/* Down-sample in place to at most CS_JOB_CURVE_POINTS: time buckets of equal width, each kept as
 * its lowest and highest point in their order, so that the peak is drawn where it was. */
static size_t cs_job_downsample(cs_job_point_t *p, size_t n) {
  if (n <= CS_JOB_CURVE_POINTS) return n;
  int64_t t0 = p[0].t, span = p[n - 1].t - p[0].t;
  size_t buckets = CS_JOB_CURVE_POINTS / 2, kept = 0, i = 0;
  for (size_t b = 0; b < buckets && i < n; b++) {
    int64_t end = b + 1 == buckets ? INT64_MAX : t0 + (int64_t)((double)span * (double)(b + 1) / (double)buckets);
    size_t lo = i, hi = i;
    for (; i < n && (p[i].t < end || b + 1 == buckets); i++) {
      if (p[i].bytes < p[lo].bytes) lo = i;
      if (p[i].bytes > p[hi].bytes) hi = i;
    }
    if (i == lo && i == hi) continue; /* an empty bucket: nothing read */
    cs_job_point_t a = p[lo < hi ? lo : hi], c = p[lo < hi ? hi : lo];
    p[kept++] = a;
    if (lo != hi) p[kept++] = c;
  }
  return kept;
}

/* One snapshot into row. 0, or -1 without host memory. */
static int cs_job_row_of(const cs_doc_t *doc, const cs_report_source_t *src, int64_t rank_from_name, cs_job_row_t *row) {
  memset(row, 0, sizeof *row);
  row->file = src->path;
  cs_mem_sink_init(&row->detail);
  int rc = cs_rank_summary_of(doc, &row->s);
  if (rc == 0 && row->s.rank < 0) row->s.rank = rank_from_name;
  cs_job_walk_t w = {NULL, 0, 0, false};
  uint64_t start = 0;
  if (rc == 0 && cs_view_device_count(doc) > 0) rc = cs_peak_walk(doc, row->s.device, cs_job_each, &w, &start);
  if (rc == 0 && w.failed) rc = -1;
  row->curve = w.all;
  row->npoints = rc == 0 ? cs_job_downsample(w.all, w.count) : 0;
  if (rc == 0) {
    cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(&row->detail), 2);
    rc = e != NULL ? cs_report_data(doc, src, e) : -1;
    if ((e != NULL ? cs_emit_finish(e) : -1) != 0) rc = -1;
  }
  return rc;
}

static void cs_job_row_free(cs_job_row_t *r) {
  cs_rank_summary_free(&r->s);
  free(r->curve);
  cs_mem_sink_free(&r->detail);
}

/* One row per process, as `ranks` has it: snapshots with the same host and pid are one process,
 * shown by its latest (time_us, then dump_number), OOM if any of them says so. Returns the rows
 * kept, at the front. */
static int cs_job_by_process(cs_job_row_t *rows, int n) {
  int kept = 0;
  for (int i = 0; i < n; i++) {
    cs_job_row_t *r = &rows[i], *same = NULL;
    for (int k = 0; k < kept && same == NULL; k++)
      if (cs_rank_summary_same_process(&r->s, &rows[k].s)) same = &rows[k];
    if (same == NULL) {
      if (kept != i) rows[kept] = *r;
      kept++;
      continue;
    }
    cs_rank_summary_share_oom(&same->s, &r->s);
    if (cs_rank_summary_later(&r->s, &same->s)) {
      cs_job_row_t t = *same;
      *same = *r;
      *r = t;
    }
    cs_job_row_free(r);
  }
  return kept;
}

static int cs_job_cmp(const void *x, const void *y) {
  const cs_job_row_t *a = x, *b = y;
  uint64_t pa = cs_rank_summary_peak(&a->s), pb = cs_rank_summary_peak(&b->s);
  if (pa != pb) return pa > pb ? -1 : 1;
  if (a->s.rank != b->s.rank) return a->s.rank < b->s.rank ? -1 : 1;
  return strcmp(a->file, b->file);
}

static void cs_job_kv_int(cs_emitter_t *e, const char *key, int64_t v) {
  cs_emit_key(e, key);
  if (v < 0) cs_emit_none(e);
  else cs_emit_int(e, v);
}

static void cs_job_kv_str(cs_emitter_t *e, const char *key, const char *v) {
  cs_emit_key(e, key);
  if (v == NULL) cs_emit_none(e);
  else cs_emit_str(e, v);
}

static void cs_job_write_row(cs_emitter_t *e, const cs_job_row_t *r) {
  cs_emit_dict_begin(e);
  cs_job_kv_int(e, "rank", r->s.rank);
  cs_job_kv_str(e, "host", r->s.host);
  cs_job_kv_int(e, "pid", r->s.pid);
  cs_job_kv_str(e, "trigger", r->s.trigger);
  cs_job_kv_int(e, "peak_allocated", (int64_t)r->s.peak_allocated);
  cs_job_kv_int(e, "peak_reserved", (int64_t)r->s.peak_reserved);
  cs_job_kv_int(e, "peak_passthrough", (int64_t)r->s.peak_passthrough);
  cs_job_kv_str(e, "phase", r->s.phase);
  cs_emit_key(e, "oom");
  cs_emit_bool(e, r->s.oom);
  cs_emit_kv_int(e, "oom_bytes", (int64_t)r->s.oom_bytes); /* the size the last OOM asked, 0: unknown */
  cs_job_kv_str(e, "top_site", r->s.nsites > 0 ? r->s.sites[0].site : NULL);
  cs_job_kv_str(e, "file", r->file);
  cs_emit_key(e, "curve");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < r->npoints; i++) {
    cs_emit_list_begin(e);
    cs_emit_int(e, r->curve[i].t);
    cs_emit_int(e, (int64_t)r->curve[i].bytes);
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);
  cs_emit_dict_end(e);
}

/* {"title", "job": {...}, then the caller adds "details". Without the closing brace. */
static int cs_job_write_head(cs_job_row_t *rows, int n, cs_mem_sink_t *data) {
  int64_t t0 = -1, t1 = -1;
  uint64_t ymax = 0;
  for (int i = 0; i < n; i++) {
    for (size_t k = 0; k < rows[i].npoints; k++) {
      if (t0 < 0 || rows[i].curve[k].t < t0) t0 = rows[i].curve[k].t;
      if (rows[i].curve[k].t > t1) t1 = rows[i].curve[k].t;
      if (rows[i].curve[k].bytes > ymax) ymax = rows[i].curve[k].bytes;
    }
  }
  cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(data), 2);
  if (e == NULL) return -1;
  char title[64];
  snprintf(title, sizeof title, "a job of %d processes", n);
  cs_emit_dict_begin(e);
  cs_job_kv_str(e, "title", title);
  cs_emit_key(e, "job");
  cs_emit_dict_begin(e);
  cs_job_kv_int(e, "t0", t0);
  cs_job_kv_int(e, "t1", t1);
  cs_job_kv_int(e, "ymax", (int64_t)ymax);
  cs_emit_key(e, "ranks");
  cs_emit_list_begin(e);
  for (int i = 0; i < n; i++) cs_job_write_row(e, &rows[i]);
  cs_emit_list_end(e);
  cs_emit_dict_end(e);
  cs_emit_dict_end(e);
  if (cs_emit_finish(e) != 0) return -1;
  while (data->len > 0 && data->data[data->len - 1] != '}') data->len--; /* the final newline */
  if (data->len == 0) return -1;
  data->len--; /* the root's closing brace: "details" follows */
  return 0;
}

static void cs_job_append(cs_mem_sink_t *data, const char *bytes, size_t len) {
  cs_sink_t sink = cs_mem_sink(data);
  if (data->error == 0) sink.write(sink.ctx, bytes, len);
}

struct cs_job_page_s {
  cs_job_row_t *rows;
  size_t count, capacity;
};

cs_job_page_t *cs_job_page_create(size_t files) {
  cs_job_page_t *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->rows = calloc(files > 0 ? files : 1, sizeof *p->rows);
  if (p->rows == NULL) {
    free(p);
    return NULL;
  }
  p->capacity = files;
  return p;
}

int cs_job_page_add(cs_job_page_t *p, const cs_doc_t *doc, const cs_report_source_t *src, int64_t rank_from_name) {
  if (p->count == p->capacity) return -1;
  cs_job_row_t *row = &p->rows[p->count];
  int rc = cs_job_row_of(doc, src, rank_from_name, row);
  if (rc != 0) {
    cs_job_row_free(row);
    return -1;
  }
  p->count++;
  return 0;
}

int cs_job_page_write(cs_job_page_t *p, cs_mem_sink_t *data) {
  cs_mem_sink_init(data);
  int n = cs_job_by_process(p->rows, (int)p->count);
  p->count = (size_t)n;
  qsort(p->rows, (size_t)n, sizeof *p->rows, cs_job_cmp);
  int rc = cs_job_write_head(p->rows, n, data);
  cs_job_append(data, ",\"details\":[", 12);
  for (int i = 0; rc == 0 && i < n; i++) {
    if (i > 0) cs_job_append(data, ",", 1);
    cs_job_append(data, p->rows[i].detail.data, p->rows[i].detail.len);
  }
  cs_job_append(data, "]}", 2);
  return rc == 0 && data->error == 0 ? 0 : -1;
}

void cs_job_page_free(cs_job_page_t *p) {
  if (p == NULL) return;
  for (size_t i = 0; i < p->count; i++) cs_job_row_free(&p->rows[i]);
  free(p->rows);
  free(p);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap ranks`: the job as a table or as one JSON object (contract in cli/ranks_print.h). */
#include "cli/ranks_print.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/lower_bound.h"
#include "common/cs_compiler.h"
#include "common/cs_format.h"
#include "common/cs_text.h"
#include "memviz/emit.h"
#include "memviz/sink.h"

/* ---- the table ------------------------------------------------------------------------------- */

enum { CS_RANKS_COLS = 10, CS_RANKS_CELL = 64 };

static const char *const cs_ranks_heads[CS_RANKS_COLS] = {
    "RANK", "HOST", "PID", "TRIGGER", "PEAK_ALLOC", "PEAK_RESERVED", "PASSTHROUGH", "PHASE", "OOM", "TOP_SITE"};

static void cs_ranks_int_cell(int64_t v, char *cell) {
  if (v < 0) snprintf(cell, CS_RANKS_CELL, "?");
  else snprintf(cell, CS_RANKS_CELL, "%lld", (long long)v);
}

/* The cells of a row; the top site, last and unpadded, is printed whole. */
static void cs_ranks_cells(const cs_ranks_row_t *row, char cells[CS_RANKS_COLS - 1][CS_RANKS_CELL]) {
  const cs_rank_summary_t *s = &row->s;
  cs_ranks_int_cell(s->rank, cells[0]);
  snprintf(cells[1], CS_RANKS_CELL, "%s", s->host ? s->host : "?");
  cs_ranks_int_cell(s->pid, cells[2]);
  snprintf(cells[3], CS_RANKS_CELL, "%s", s->trigger ? s->trigger : "?");
  cs_format_size(s->peak_allocated, cells[4], CS_RANKS_CELL);
  cs_format_size(s->peak_reserved, cells[5], CS_RANKS_CELL);
  cs_format_size(s->peak_passthrough, cells[6], CS_RANKS_CELL);
  snprintf(cells[7], CS_RANKS_CELL, "%s", s->phase ? s->phase : "-");
  if (s->oom && s->oom_bytes) cs_format_size(s->oom_bytes, cells[8], CS_RANKS_CELL); /* the size asked */
  else snprintf(cells[8], CS_RANKS_CELL, "%s", s->oom ? "yes" : "no");
  for (int c = 0; c < CS_RANKS_COLS - 1; c++) cs_text_label(cells[c]); /* host, phase: a program's */
}

static const char *cs_ranks_top_site(const cs_rank_summary_t *s) { return s->nsites ? s->sites[0].site : "-"; }

void cs_ranks_print_table(const cs_ranks_job_t *job, size_t top, size_t sites) {
  size_t rows = job->count < top ? job->count : top;
  size_t width[CS_RANKS_COLS - 1];
  for (int c = 0; c < CS_RANKS_COLS - 1; c++) width[c] = strlen(cs_ranks_heads[c]);
  char cells[CS_RANKS_COLS - 1][CS_RANKS_CELL];
  for (size_t i = 0; i < rows; i++) {
    cs_ranks_cells(&job->rows[i], cells);
    for (int c = 0; c < CS_RANKS_COLS - 1; c++)
      if (strlen(cells[c]) > width[c]) width[c] = strlen(cells[c]);
  }
  for (int c = 0; c < CS_RANKS_COLS - 1; c++) printf("%-*s  ", (int)width[c], cs_ranks_heads[c]);
  printf("%s\n", cs_ranks_heads[CS_RANKS_COLS - 1]);
  for (size_t i = 0; i < rows; i++) {
    cs_ranks_cells(&job->rows[i], cells);
    for (int c = 0; c < CS_RANKS_COLS - 1; c++) {
      bool number = c == 0 || c == 2 || c == 4 || c == 5 || c == 6; /* right-aligned */
      printf(number ? "%*s  " : "%-*s  ", (int)width[c], cells[c]);
    }
    cs_text_fput(stdout, cs_ranks_top_site(&job->rows[i].s));
    putchar('\n');
  }
  if (rows < job->count) printf("(%zu more row%s: --top)\n", job->count - rows, cs_plural(job->count - rows));
  for (size_t i = 0; i < job->count; i++) {
    const cs_ranks_row_t *r = &job->rows[i];
    if (r->s.dropped_events == 0) continue;
    char rank[CS_RANKS_CELL], text[512];
    cs_ranks_int_cell(r->s.rank, rank);
    cs_lower_bound_text(r->s.dropped_events, r->s.kept_entries, text, sizeof text);
    printf("note: rank %s (%s): %s\n", rank, r->file, text);
  }
  if (job->count < 2) return;
  const cs_ranks_row_t *hi = &job->rows[0], *med = &job->rows[cs_ranks_median(job)];
  char hi_rank[CS_RANKS_CELL], med_rank[CS_RANKS_CELL], hi_bytes[64], med_bytes[64];
  cs_ranks_int_cell(hi->s.rank, hi_rank);
  cs_ranks_int_cell(med->s.rank, med_rank);
  uint64_t hi_peak = cs_rank_summary_peak(&hi->s), med_peak = cs_rank_summary_peak(&med->s);
  cs_format_size(hi_peak, hi_bytes, sizeof hi_bytes);
  cs_format_size(med_peak, med_bytes, sizeof med_bytes);
  if (med_peak > 0)
    printf("\nspread: highest / median peak = %.2fx (rank %s %s / rank %s %s)\n", (double)hi_peak / (double)med_peak,
           hi_rank, hi_bytes, med_rank, med_bytes);
  else
    printf("\nspread: highest / median peak = - (rank %s %s / rank %s 0 B)\n", hi_rank, hi_bytes, med_rank);
  cs_ranks_diff_t diff[2 * CS_RANK_SITES];
  size_t n = cs_ranks_differing(job, diff, sites < CS_ARRAY_SIZE(diff) ? sites : CS_ARRAY_SIZE(diff));
  printf("sites that differ most at the peak, rank %s vs rank %s:\n", hi_rank, med_rank);
  if (n == 0) printf("  (none)\n");
  for (size_t i = 0; i < n; i++) {
    char d[64], a[64], b[64];
    bool more = diff[i].highest >= diff[i].median;
    cs_format_size(more ? diff[i].highest - diff[i].median : diff[i].median - diff[i].highest, d, sizeof d);
    cs_format_size(diff[i].highest, a, sizeof a);
    cs_format_size(diff[i].median, b, sizeof b);
    printf("  %c%s  ", more ? '+' : '-', d);
    cs_text_fput(stdout, diff[i].site);
    printf("  (%s vs %s)\n", a, b);
  }
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void cs_ranks_json_int(cs_emitter_t *e, const char *key, int64_t v) {
  cs_emit_key(e, key);
  if (v < 0) cs_emit_none(e);
  else cs_emit_int(e, v);
}

static void cs_ranks_json_str(cs_emitter_t *e, const char *key, const char *v) {
  cs_emit_key(e, key);
  if (v == NULL) cs_emit_none(e);
  else cs_emit_str(e, v);
}

static void cs_ranks_json_row(cs_emitter_t *e, const cs_ranks_row_t *row) {
  const cs_rank_summary_t *s = &row->s;
  cs_emit_dict_begin(e);
  cs_ranks_json_int(e, "rank", s->rank);
  cs_ranks_json_int(e, "local_rank", s->local_rank);
  cs_ranks_json_int(e, "world_size", s->world_size);
  cs_ranks_json_str(e, "job_id", s->job_id);
  cs_ranks_json_str(e, "host", s->host);
  cs_ranks_json_int(e, "pid", s->pid);
  cs_ranks_json_str(e, "trigger", s->trigger);
  cs_ranks_json_int(e, "peak_allocated", (int64_t)s->peak_allocated);
  cs_ranks_json_int(e, "peak_reserved", (int64_t)s->peak_reserved);
  cs_ranks_json_int(e, "peak_passthrough", (int64_t)s->peak_passthrough);
  cs_ranks_json_str(e, "phase", s->phase);
  cs_emit_key(e, "oom");
  cs_emit_bool(e, s->oom);
  cs_ranks_json_int(e, "oom_bytes", s->oom_bytes ? (int64_t)s->oom_bytes : -1);
  cs_ranks_json_int(e, "dropped_events", (int64_t)s->dropped_events);
  cs_ranks_json_str(e, "top_site", s->nsites ? s->sites[0].site : NULL);
  cs_ranks_json_int(e, "top_site_bytes", s->nsites ? (int64_t)s->sites[0].bytes : -1);
  cs_ranks_json_int(e, "device", s->device);
  cs_ranks_json_int(e, "snapshots", (int64_t)row->snapshots);
  cs_ranks_json_str(e, "file", row->file);
  cs_emit_dict_end(e);
}

static void cs_ranks_json_job(cs_emitter_t *e, const cs_ranks_job_t *job, size_t top, size_t sites) {
  cs_emit_dict_begin(e);
  cs_emit_key(e, "ranks");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < job->count && i < top; i++) cs_ranks_json_row(e, &job->rows[i]);
  cs_emit_list_end(e);
  const cs_ranks_row_t *hi = job->count ? &job->rows[0] : NULL;
  const cs_ranks_row_t *med = job->count ? &job->rows[cs_ranks_median(job)] : NULL;
  cs_emit_key(e, "spread");
  if (hi && cs_rank_summary_peak(&med->s) > 0)
    cs_emit_float(e, (double)cs_rank_summary_peak(&hi->s) / (double)cs_rank_summary_peak(&med->s));
  else cs_emit_none(e);
  cs_ranks_json_int(e, "highest_rank", hi ? hi->s.rank : -1);
  cs_ranks_json_int(e, "median_rank", med ? med->s.rank : -1);
  cs_emit_key(e, "differing_sites");
  cs_emit_list_begin(e);
  cs_ranks_diff_t diff[2 * CS_RANK_SITES];
  size_t n = cs_ranks_differing(job, diff, sites < CS_ARRAY_SIZE(diff) ? sites : CS_ARRAY_SIZE(diff));
  for (size_t i = 0; i < n; i++) {
    cs_emit_dict_begin(e);
    cs_ranks_json_str(e, "site", diff[i].site);
    cs_ranks_json_int(e, "bytes_highest", (int64_t)diff[i].highest);
    cs_ranks_json_int(e, "bytes_median", (int64_t)diff[i].median);
    cs_emit_dict_end(e);
  }
  cs_emit_list_end(e);
  cs_emit_dict_end(e);
}

int cs_ranks_print_json(const cs_ranks_job_t *job, size_t top, size_t sites) {
  fflush(stdout);
  static cs_fd_sink_t sink;
  cs_fd_sink_init(&sink, STDOUT_FILENO);
  cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_fd_sink(&sink), 2);
  if (e == NULL) return ENOMEM;
  cs_ranks_json_job(e, job, top, sites);
  int err = cs_emit_finish(e);
  int flushed = cs_fd_sink_flush(&sink);
  return err != 0 ? err : flushed;
}

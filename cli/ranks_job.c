/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap ranks`' job: its rows and how they compare (contract in cli/ranks_job.h). */
#include "cli/ranks_job.h"

#include <stdlib.h>
#include <string.h>

/* ---- rows ------------------------------------------------------------------------------------ */

void cs_ranks_job_free(cs_ranks_job_t *job) {
  for (size_t i = 0; i < job->count; i++) {
    cs_rank_summary_free(&job->rows[i].s);
    free(job->rows[i].file);
  }
  free(job->rows);
}

/* The row of the same process (same host and pid: cudasnap's files only), or NULL. */
static cs_ranks_row_t *cs_ranks_find(cs_ranks_job_t *job, const cs_rank_summary_t *s) {
  for (size_t i = 0; i < job->count; i++)
    if (cs_rank_summary_same_process(s, &job->rows[i].s)) return &job->rows[i];
  return NULL;
}

int cs_ranks_job_add(cs_ranks_job_t *job, cs_rank_summary_t *s, const char *path) {
  cs_ranks_row_t *row = cs_ranks_find(job, s);
  char *file = strdup(path);
  if (file == NULL) return -1;
  if (row != NULL) {
    cs_rank_summary_share_oom(&row->s, s); /* an earlier snapshot's OOM stays the process's */
    if (cs_rank_summary_later(s, &row->s)) {
      cs_rank_summary_free(&row->s);
      free(row->file);
      row->s = *s;
      row->file = file;
    } else {
      cs_rank_summary_free(s);
      free(file);
    }
    row->snapshots++;
    return 0;
  }
  if (job->count == job->capacity) {
    size_t cap = job->capacity ? job->capacity * 2 : 64;
    cs_ranks_row_t *rows = realloc(job->rows, cap * sizeof *rows);
    if (rows == NULL) {
      free(file);
      return -1;
    }
    job->rows = rows;
    job->capacity = cap;
  }
  job->rows[job->count++] = (cs_ranks_row_t){.s = *s, .file = file, .snapshots = 1};
  return 0;
}

static int cs_ranks_cmp(const void *x, const void *y) {
  const cs_ranks_row_t *a = x, *b = y;
  uint64_t pa = cs_rank_summary_peak(&a->s), pb = cs_rank_summary_peak(&b->s);
  if (pa != pb) return pa > pb ? -1 : 1;
  if (a->s.rank != b->s.rank) return a->s.rank < b->s.rank ? -1 : 1;
  return strcmp(a->file, b->file);
}

void cs_ranks_job_sort(cs_ranks_job_t *job) { qsort(job->rows, job->count, sizeof *job->rows, cs_ranks_cmp); }

/* ---- the differing sites --------------------------------------------------------------------- */

static uint64_t cs_ranks_site_bytes(const cs_rank_summary_t *s, const char *site) {
  for (size_t i = 0; i < s->nsites; i++)
    if (strcmp(s->sites[i].site, site) == 0) return s->sites[i].bytes;
  return 0;
}

static int cs_ranks_diff_cmp(const void *x, const void *y) {
  const cs_ranks_diff_t *a = x, *b = y;
  uint64_t da = a->highest > a->median ? a->highest - a->median : a->median - a->highest;
  uint64_t db = b->highest > b->median ? b->highest - b->median : b->median - b->highest;
  if (da != db) return da > db ? -1 : 1;
  return strcmp(a->site, b->site);
}

size_t cs_ranks_differing(const cs_ranks_job_t *job, cs_ranks_diff_t *out, size_t max) {
  if (job->count < 2) return 0;
  const cs_rank_summary_t *hi = &job->rows[0].s, *med = &job->rows[cs_ranks_median(job)].s;
  cs_ranks_diff_t all[2 * CS_RANK_SITES];
  size_t n = 0;
  for (size_t i = 0; i < hi->nsites; i++)
    all[n++] = (cs_ranks_diff_t){hi->sites[i].site, hi->sites[i].bytes, cs_ranks_site_bytes(med, hi->sites[i].site)};
  for (size_t i = 0; i < med->nsites; i++)
    if (cs_ranks_site_bytes(hi, med->sites[i].site) == 0 && med->sites[i].bytes > 0)
      all[n++] = (cs_ranks_diff_t){med->sites[i].site, 0, med->sites[i].bytes};
  qsort(all, n, sizeof *all, cs_ranks_diff_cmp);
  size_t kept = 0;
  for (size_t i = 0; i < n && kept < max; i++)
    if (all[i].highest != all[i].median) out[kept++] = all[i];
  return kept;
}

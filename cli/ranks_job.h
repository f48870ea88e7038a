/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap ranks`' job: one row per process, made from the summaries of its files (ranks.c reads
 * them), and what the rows are compared by: the median row and the sites that differ most at the
 * peak (ranks_print.c prints them). No file is read here, nothing is printed. */
#ifndef CS_CLI_RANKS_JOB_H
#define CS_CLI_RANKS_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/rank_summary.h"

/* One process: the summary of its latest snapshot, OOM if any of its snapshots says so. */
typedef struct cs_ranks_row_s {
  cs_rank_summary_t s;
  char *file;         /* the latest snapshot's path */
  size_t snapshots;   /* of this process */
} cs_ranks_row_t;

typedef struct cs_ranks_job_s {
  cs_ranks_row_t *rows; /* sorted by peak allocated bytes, highest first (cs_ranks_job_sort) */
  size_t count, capacity;
} cs_ranks_job_t;

/* Take s (owned from now on) as a snapshot of its process, read from path: a new row, or the
 * latest of its process's row. 0, or -1 without host memory (s is the caller's again). */
int cs_ranks_job_add(cs_ranks_job_t *job, cs_rank_summary_t *s, const char *path);

/* Sort the rows: peak allocated bytes, highest first; then rank, then file. */
void cs_ranks_job_sort(cs_ranks_job_t *job);

void cs_ranks_job_free(cs_ranks_job_t *job);

/* The row the spread and the differing sites compare the highest with: the lower median of the
 * peaks (for 8 ranks, the 5th highest). pre: count > 0. */
static inline size_t cs_ranks_median(const cs_ranks_job_t *job) { return job->count / 2; }

/* A site's bytes in each of two rows. */
typedef struct cs_ranks_diff_s {
  const char *site;
  uint64_t highest, median;
} cs_ranks_diff_t;

/* The sites whose bytes at the peak differ most between the highest row and the median one,
 * largest difference first, at most max (those that differ at all). Returns how many. pre: sorted. */
size_t cs_ranks_differing(const cs_ranks_job_t *job, cs_ranks_diff_t *out, size_t max);

#endif

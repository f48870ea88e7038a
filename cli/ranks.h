/* `cudasnap ranks`: the processes of a job side by side (docs/ranks.md). ranks.c reads the files,
 * one at a time, into one row per process; ranks_print.c writes the table or the JSON object. */
#ifndef CS_CLI_RANKS_H
#define CS_CLI_RANKS_H

#include <stdbool.h>
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
  cs_ranks_row_t *rows; /* sorted by peak allocated bytes, highest first */
  size_t count, capacity;
} cs_ranks_job_t;

/* The row the spread and the differing sites compare the highest with: the lower median of the
 * peaks (for 8 ranks, the 5th highest). pre: count > 0. */
static inline size_t cs_ranks_median(const cs_ranks_job_t *job) { return job->count / 2; }

/* A site's bytes in each of two rows. */
typedef struct cs_ranks_diff_s {
  const char *site;
  uint64_t highest, median;
} cs_ranks_diff_t;

/* The sites whose bytes at the peak differ most between the highest row and the median one,
 * largest difference first, at most max (those that differ at all). Returns how many. */
size_t cs_ranks_differing(const cs_ranks_job_t *job, cs_ranks_diff_t *out, size_t max);

/* Print the job (rows up to `top`, differing sites up to `sites`); 0 or an errno. */
void cs_ranks_print_table(const cs_ranks_job_t *job, size_t top, size_t sites);
int cs_ranks_print_json(const cs_ranks_job_t *job, size_t top, size_t sites);

/* The rank in a file's name: "rank" followed by digits (memory_snapshot-rank3.pickle, rank_3.json),
 * else digits just before the extension after '_' or '-' (snapshot_3.pickle); -1 when neither. */
int64_t cs_ranks_from_name(const char *path);

#endif

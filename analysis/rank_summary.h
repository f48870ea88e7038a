/* SPDX-License-Identifier: Apache-2.0 */
/* What `cudasnap ranks` needs from one snapshot of one process of a job (docs/ranks.md): who
 * wrote it (cudasnap.job, or nothing for PyTorch's own files), its peak, the phase open then, OOMs,
 * and the allocation sites live at the peak, most bytes first.
 *
 * It owns its strings (copied out of the model), so that a job's rows outlive the model of each
 * file: files are read one at a time, and only these rows are kept. */
#ifndef CS_ANALYSIS_RANK_SUMMARY_H
#define CS_ANALYSIS_RANK_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"

/* Sites kept per process: enough for the differences that matter between two ranks, bounded so
 * that a thousand ranks stay a few MB. */
enum { CS_RANK_SITES = 32 };

typedef struct cs_rank_site_s {
  char *site;     /* "function file:line", or "(no stack)" */
  uint64_t bytes; /* requested bytes live at the peak */
} cs_rank_site_t;

typedef struct cs_rank_summary_s {
  int64_t rank, local_rank, world_size; /* -1: unknown */
  char *job_id;                         /* NULL: unknown */
  char *host;                           /* NULL: unknown */
  int64_t pid;                          /* -1: unknown (PyTorch's files) */
  char *trigger;                        /* NULL: unknown */
  int64_t time_us, dump_number;         /* -1: unknown; which snapshot of a process is the latest */
  int device;                           /* the device of the peak */
  uint64_t peak_allocated;              /* requested bytes of the cache's blocks live at the trace's peak
                                           (analysis/peak.h: of the cache's and memory passed through) */
  uint64_t peak_passthrough;            /* bytes of memory passed through live then */
  uint64_t peak_reserved;               /* memory_stats' peak, else the trace's segments' peak */
  char *phase;                          /* "OUTER > INNER" open at the peak; NULL: none or unknown */
  bool oom;                             /* trigger oom, num_ooms > 0, or an oom trace entry */
  uint64_t oom_bytes;                   /* the size the last OOM asked (analysis/oom.h); 0: unknown */
  uint64_t dropped_events;              /* > 0: the live figures are lower bounds (analysis/lower_bound.h) */
  uint64_t kept_entries;                /* the history size then, 0: unknown */
  cs_rank_site_t sites[CS_RANK_SITES];  /* at the peak, most bytes first */
  size_t nsites;
} cs_rank_summary_t;

/* The peak's live bytes: the cache's and memory passed through (what rows are sorted by). */
static inline uint64_t cs_rank_summary_peak(const cs_rank_summary_t *s) {
  return s->peak_allocated + s->peak_passthrough;
}

/* Summarize doc (a model that passed cs_load_snapshot). The device whose peak is highest speaks
 * for the process. Returns 0, or -1 without host memory (*out is then freed). */
int cs_rank_summary_of(const cs_doc_t *doc, cs_rank_summary_t *out);

/* The same from a snapshot's head alone (reader/head.h: a doc whose root holds the one pair
 * `cudasnap_summary`, snapshot/snap_summary.h), where the library wrote the numbers from the same
 * replay. Returns 0, 1 when the head cannot stand for the file (another version, or the library
 * had no memory for the replay: read the file whole), or -1 without host memory. */
int cs_rank_summary_of_head(const cs_doc_t *head, cs_rank_summary_t *out);

/* Several snapshots of one process (a dump, then the exit) make one row, in `ranks` and in the
 * report's job page alike; these are the rules for it. */

/* Are a and b snapshots of the same process: the same host and pid (cudasnap's files only)? */
bool cs_rank_summary_same_process(const cs_rank_summary_t *a, const cs_rank_summary_t *b);

/* Was a taken after b: by time_us, then dump_number? The later one speaks for the process. */
bool cs_rank_summary_later(const cs_rank_summary_t *a, const cs_rank_summary_t *b);

/* Before one of two snapshots of a process is dropped: each takes the other's OOM, so that the one
 * kept says the process had one if either does, and the size asked, its own first. */
void cs_rank_summary_share_oom(cs_rank_summary_t *a, cs_rank_summary_t *b);

/* An empty summary: every number unknown, no strings. */
void cs_rank_summary_init(cs_rank_summary_t *s);
void cs_rank_summary_free(cs_rank_summary_t *s);

#endif

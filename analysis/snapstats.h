/* SPDX-License-Identifier: Apache-2.0 */
/* A device's torch.cuda.memory_stats() counters from a snapshot, for the memory_summary table
 * (cs_stats_summary).
 *
 * cudasnap snapshots carry them all: cudasnap.memory_stats[device] is the flat dict of the 122
 * keys. PyTorch's own snapshots carry none, so for them the current values are computed from the
 * segments, and what only the allocator's history knows (peaks, totals, OOMs, retries) is
 * marked unknown in the table's text. */
#ifndef CS_ANALYSIS_SNAPSTATS_H
#define CS_ANALYSIS_SNAPSTATS_H

#include <stddef.h>

#include "model/doc.h"
#include "stats/stats.h"

/* Fill *out from cudasnap.memory_stats[device]. Returns how many of the CS_STATS_KEY_COUNT keys
 * were there as integers (the others read 0), or -1 when the snapshot has no such dict. */
int cs_snapstats_from_cudasnap(const cs_doc_t *doc, int device, cs_stats_t *out);

/* Fill *out with what the segments of `device` show now: every stat's `current` (bytes and
 * counts, per pool by segment_type), and the oversize counts when allocator_settings has a
 * max_split_size. Peaks, totals and the num_* counters are 0. Segments of memory passed through
 * the cache (a cudasnap.kind other than "cached") are not counted: they are not the allocator's. */
void cs_snapstats_from_segments(const cs_doc_t *doc, int device, cs_stats_t *out);

/* In a memory_summary text made from cs_snapstats_from_segments, replace what is unknown (the
 * Peak Usage, Tot Alloc and Tot Freed columns, the OOM and retry counts) with "?". The layout
 * (snapshot-format.md section 5.5) keeps every line at its width. */
void cs_snapstats_mark_unknown(char *text);

/* The torch.cuda.memory_summary() table of `device`, as `summary` prints it: from the cudasnap
 * statistics when the snapshot has them, otherwise from the segments with the unknown values
 * marked. *found gets what cs_snapstats_from_cudasnap returned (-1: no statistics). Returns the
 * text (free it), or NULL without host memory. */
char *cs_snapstats_table(const cs_doc_t *doc, int device, int *found);

#endif

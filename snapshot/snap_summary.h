/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot's head: `cudasnap_summary`, the first top-level key of every snapshot, what
 * `cudasnap ranks` needs from one process (docs/ranks.md, "The head"): who wrote it, why, its
 * peak and the sites live then. A reader stops after it (reader/head.h), so the time of `ranks`
 * does not grow with the number of events of each file.
 *
 * It is computed here, from the state the writer copies anyway, by the replay the tool would do
 * on the file (analysis/peak.h, analysis/rank_summary.h): the blocks live before the history
 * began, then the history forward to the highest point of requested bytes live, per device; the
 * device that peaked highest speaks for the process. Sites are named by the site rule
 * (memviz/site_rule.h) from the symbolized frames, as the tool names them in the file. The two
 * agree byte for byte (tests/cli/ranks_test.sh compares `ranks` with and without the head). */
#ifndef CS_SNAPSHOT_SNAP_SUMMARY_H
#define CS_SNAPSHOT_SNAP_SUMMARY_H

#include "memviz/emit.h"
#include "record/intern.h"
#include "snapshot/snap_state.h"
#include "snapshot/symbolize.h"

/* The key, and the sites kept (as analysis/rank_summary.h keeps them). */
#define CS_SNAP_SUMMARY_KEY "cudasnap_summary"
/* Version 2: peak_allocated is the cache's, peak_passthrough the memory passed through then. */
enum { CS_SNAP_SUMMARY_SITES = 32, CS_SNAP_SUMMARY_VERSION = 2 };

/* Write the summary dict (the key is the caller's). Without host memory for the replay, the
 * dict says so ("complete": false) and a reader falls back to the whole file. */
void cs_snap_write_summary(cs_emitter_t *e, const cs_snap_state_t *s, const cs_intern_t *intern,
                           cs_symbolizer_t *sym, const cs_snapshot_meta_t *meta);

#endif

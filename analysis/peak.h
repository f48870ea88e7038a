/* SPDX-License-Identifier: Apache-2.0 */
/* The moment a device's allocated bytes peaked during its trace, and the blocks live then.
 *
 * The trace is replayed forward from its start: `alloc` makes a block live, `free_completed` (or a
 * legacy `free`) ends it; `free_requested` does not, since the block stays active until its free
 * completes. Bytes are requested bytes, the sizes trace entries carry. Blocks live before the
 * trace began count from the start: those freed in the trace before any alloc at their address,
 * and the active blocks of the final state whose address the trace never touches (the viewer's
 * "initially allocated" and pre-existing blocks). */
#ifndef CS_ANALYSIS_PEAK_H
#define CS_ANALYSIS_PEAK_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/live_map.h"
#include "analysis/sites.h"
#include "model/doc.h"

typedef struct cs_peak_s {
  uint64_t bytes; /* live at the peak: the cache's blocks and memory passed through */
  uint64_t passthrough; /* of which memory passed through (the kinds the trace names: analysis/kinds.h) */
  size_t after;   /* trace entries applied when the peak was first reached; 0 = at the start */
  size_t events;  /* entries in the device's trace */
} cs_peak_t;

/* Find the peak of `device` and add the blocks live at it to `sites`. Returns 0, or -1 without
 * host memory. */
int cs_peak_find(const cs_doc_t *doc, int device, cs_peak_t *peak, cs_sites_t *sites);

/* ------------------------------------------------------------------------------------------------
 * The replay itself, one entry at a time, for callers that need every step (the report's
 * timeline). cs_peak_find is these two.
 * ---------------------------------------------------------------------------------------------- */

/* Fill the empty map `live` with the blocks live before the first entry of the device's trace.
 * Returns 0, or -1 without host memory. */
int cs_peak_initial(const cs_doc_t *doc, int device, cs_live_map_t *live);

/* What one trace entry did to the live blocks: a block that ended (freed, or replaced by an alloc
 * at its address) and a block that began. */
typedef struct cs_peak_change_s {
  bool ended, began;
  cs_live_t ended_block; /* when ended: the block as it was live */
  cs_live_t began_block; /* when began */
} cs_peak_change_t;

/* Apply one trace entry to live; *change (may be NULL) says what it did. Returns 0, or -1 without
 * host memory. */
int cs_peak_apply(const cs_doc_t *doc, cs_val_t entry, cs_live_map_t *live, cs_peak_change_t *change);

/* Add to `sites` the blocks live after the first `after` entries of the device's trace. Returns 0,
 * or -1 without host memory. */
int cs_peak_live_at(const cs_doc_t *doc, int device, size_t after, cs_sites_t *sites);

/* The whole replay, telling `each` every trace entry and the live bytes after it, in order;
 * *start_bytes gets the bytes live before the first. Returns 0, or -1 without host memory. */
typedef void (*cs_peak_each_fn)(void *ctx, const cs_doc_t *doc, cs_val_t entry, uint64_t live_bytes);
int cs_peak_walk(const cs_doc_t *doc, int device, cs_peak_each_fn each, void *ctx, uint64_t *start_bytes);

/* The same with the live blocks themselves (and so the bytes passed through among them): `each` is
 * told the blocks live before the first entry (entry CS_VAL_ABSENT), then after each entry. */
typedef void (*cs_peak_each_live_fn)(void *ctx, const cs_doc_t *doc, cs_val_t entry, const cs_live_map_t *live);
int cs_peak_walk_live(const cs_doc_t *doc, int device, cs_peak_each_live_fn each, void *ctx);

#endif

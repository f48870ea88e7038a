/* SPDX-License-Identifier: Apache-2.0 */
/* The blocks live at one moment of a trace replay: address -> (bytes, frames). Open addressing
 * with linear probing and backward-shift deletion, so a long trace of allocs and frees leaves no
 * tombstones behind. */
#ifndef CS_ANALYSIS_LIVE_MAP_H
#define CS_ANALYSIS_LIVE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"

typedef struct cs_live_s {
  int64_t addr;
  uint64_t bytes;
  cs_val_t frames;  /* the allocation's stack; CS_VAL_ABSENT when none was recorded */
  const char *kind; /* the kind of memory passed through it is (analysis/kinds.h); NULL: the cache's */
  bool used;
} cs_live_t;

typedef struct cs_live_map_s {
  cs_live_t *slots;
  size_t nslots;  /* a power of two, kept above twice count */
  size_t count;
  uint64_t bytes; /* the sum over the live blocks */
  uint64_t passthrough_bytes; /* of which memory passed through (kind not NULL) */
} cs_live_map_t;

void cs_live_map_init(cs_live_map_t *m);
void cs_live_map_free(cs_live_map_t *m);

/* *dst (not initialized) becomes a copy of src, slot for slot. Returns 0, or -1 without host
 * memory (*dst is then empty). */
int cs_live_map_copy(cs_live_map_t *dst, const cs_live_map_t *src);

/* Make addr live with `bytes` of `kind` (replacing what was live there). Returns 0, or -1 without
 * host memory. */
int cs_live_map_put(cs_live_map_t *m, int64_t addr, uint64_t bytes, cs_val_t frames, const char *kind);

/* addr is no longer live; false when it was not. */
bool cs_live_map_remove(cs_live_map_t *m, int64_t addr);

/* The entry for addr, or NULL. */
const cs_live_t *cs_live_map_get(const cs_live_map_t *m, int64_t addr);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* A map from block address to the block live there (its requested bytes and stack id, which for
 * memory passed through carries its kind: record/recfile.h, snap_entry.h's cs_snap_entry_kind), for the
 * replay of a history inside the writer (snapshot/snap_summary.h). Open addressing with linear probing
 * and backward-shift deletion, so that removals leave no tombstones to slow a long replay down;
 * it grows by doubling and never shrinks. Address 0 is kept apart (0 marks an empty slot). */
#ifndef CS_SNAPSHOT_ADDR_MAP_H
#define CS_SNAPSHOT_ADDR_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cs_addr_block_s {
  uint64_t addr;     /* 0: an empty slot */
  uint64_t bytes;
  uint32_t stack_id;
} cs_addr_block_t;

typedef struct cs_addr_map_s {
  cs_addr_block_t *slots;
  size_t nslots;  /* 0 or a power of two, kept above twice count */
  size_t count;   /* slots in use (not counting address 0) */
  bool has_zero;
  cs_addr_block_t zero;
  uint64_t bytes; /* the sum of the blocks' bytes */
  uint64_t passthrough_bytes; /* of which blocks of memory passed through (a kind in the stack id) */
} cs_addr_map_t;

void cs_addr_map_init(cs_addr_map_t *m);
void cs_addr_map_free(cs_addr_map_t *m);

/* A copy of src into the empty map dst. 0, or -1 without host memory. */
int cs_addr_map_copy(cs_addr_map_t *dst, const cs_addr_map_t *src);

/* The block at addr, or NULL. */
const cs_addr_block_t *cs_addr_map_get(const cs_addr_map_t *m, uint64_t addr);

/* Put a block at addr, replacing the one there. 0, or -1 without host memory. */
int cs_addr_map_put(cs_addr_map_t *m, uint64_t addr, uint64_t bytes, uint32_t stack_id);

/* Remove the block at addr, if any. */
void cs_addr_map_remove(cs_addr_map_t *m, uint64_t addr);

/* Call each for every block, in no particular order. */
void cs_addr_map_each(const cs_addr_map_t *m, void (*each)(void *ctx, const cs_addr_block_t *b), void *ctx);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* cs_block_map_t: device address -> block, for the blocks a program holds (free() looks them up).
 *
 * A chained hash table whose chains run through the blocks themselves (u.held.next_live, used only
 * while a block is ALLOCATED; it shares storage with next_pending), so the table is one pointer per
 * bucket and the map costs 8 to 16
 * bytes per held block (open addressing at load 1/2 cost 17 to 21; bench/README.md, host memory).
 * The table doubles when it holds as many blocks as buckets, so chains stay about one block long;
 * growing is the only allocation, amortized O(1) per insert. Not thread-safe: the owning
 * allocator's lock protects it. */
#ifndef CS_BLOCK_MAP_H
#define CS_BLOCK_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "allocator/block.h"

typedef struct cs_block_map_s {
  cs_block_t **buckets; /* capacity chains, NULL = empty; a block's key is its addr */
  size_t capacity;      /* a power of two, or 0 before the first insert */
  size_t count;
} cs_block_map_t;

void cs_block_map_init(cs_block_map_t *map);
void cs_block_map_destroy(cs_block_map_t *map);

/* Make room for `count` entries, so that inserts up to that count cannot fail. 0, or
 * -CS_EHOSTMEM (the map is unchanged). */
int cs_block_map_reserve(cs_block_map_t *map, size_t count);

/* 0, or -CS_EHOSTMEM when the table could not grow (the map is unchanged).
 * pre: no block with the same addr is present. */
int cs_block_map_insert(cs_block_map_t *map, cs_block_t *block);

cs_block_t *cs_block_map_find(const cs_block_map_t *map, uintptr_t addr);

/* Remove and return the block at addr, or NULL if there is none. */
cs_block_t *cs_block_map_remove(cs_block_map_t *map, uintptr_t addr);

/* Forget every entry, keeping the table. */
void cs_block_map_clear(cs_block_map_t *map);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* cs_free_set_t: a pool's FREE blocks, ordered by (stream, size, address).
 *
 * An intrusive red-black tree over cs_block_t.u.free.link, with the colour in the block's flag
 * bits. It replaces libbsd's RB_* macros for two reasons: its node is 24 bytes (libbsd's is 32,
 * with an int colour), which leaves room for the GC age base in the same union; and its descents
 * pick the child by index from a branch-free comparison, so a search through blocks of random
 * sizes does not mispredict a branch at every level (bench/README.md, "Random sizes").
 *
 * Blocks are unique by address, so no two keys are equal. Not thread-safe: the owning allocator's
 * lock protects it. Nothing here allocates. */
#ifndef CS_FREE_SET_H
#define CS_FREE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocator/block.h"

typedef struct cs_free_set_s {
  cs_block_t *root;
} cs_free_set_t;

/* Strict order of the set: (stream, size, address), without branches. */
static inline bool cs_free_set_less(const cs_block_t *x, const cs_block_t *y) {
  size_t xs = cs_block_size(x), ys = cs_block_size(y);
  bool size_less = (xs < ys) | ((xs == ys) & (x->addr < y->addr));
  return (x->stream < y->stream) | ((x->stream == y->stream) & size_less);
}

static inline void cs_free_set_init(cs_free_set_t *set) { set->root = NULL; }

static inline bool cs_free_set_empty(const cs_free_set_t *set) { return set->root == NULL; }

/* pre: b is in no set; its key is set. */
void cs_free_set_insert(cs_free_set_t *set, cs_block_t *b);

/* pre: b is in this set. */
void cs_free_set_remove(cs_free_set_t *set, cs_block_t *b);

/* fresh takes old's place in the tree (its links and colour), and old leaves the set. Constant
 * time. pre: old is in this set; fresh is in none, and its key sorts where old's did (between
 * old's neighbours in the set). */
void cs_free_set_replace(cs_free_set_t *set, cs_block_t *old, cs_block_t *fresh);

/* The first block not less than (stream, size, address 0): the best fit. When pred is not NULL it
 * receives the block just before that position (the last one less than the key), or NULL. */
cs_block_t *cs_free_set_lower_bound(const cs_free_set_t *set, uintptr_t stream, size_t size,
                                    cs_block_t **pred);

cs_block_t *cs_free_set_first(const cs_free_set_t *set);
cs_block_t *cs_free_set_last(const cs_free_set_t *set);
cs_block_t *cs_free_set_next(const cs_block_t *b);
cs_block_t *cs_free_set_prev(const cs_block_t *b);

/* Test seam (tests/unit/test_free_set.c): the tree's own invariants (order, parent links, no red
 * node with a red child, equal black height on every path). Returns the number of blocks, or -1
 * if an invariant is broken. O(n). */
long cs_free_set_check(const cs_free_set_t *set);

#endif

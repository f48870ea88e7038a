/* SPDX-License-Identifier: Apache-2.0 */
/* Blocks and segments of the caching allocator.
 *
 * A segment is one device allocation obtained from the backend. Its blocks tile it exactly, in
 * address order, linked through prev/next; every block of a segment has the segment's stream and
 * pool. A block is in exactly one of three states:
 *
 *   FREE       in its pool's free set, reusable (snapshot state "inactive");
 *   ALLOCATED  handed to the program, in the live map ("active_allocated");
 *   PENDING    freed by the program but not yet reusable: waiting for a fence, a synchronization
 *              or the end of a stream capture ("active_pending_free").
 *
 * Only FREE blocks merge with their neighbours, and merging never crosses segments.
 *
 * Layout. A program may hold millions of blocks, so the struct is kept small (80 bytes): what only
 * a FREE block needs (its free-set links, its GC age base) shares a union with what only a held
 * (ALLOCATED or PENDING) block needs, and the state, pool and tree colour live in the low bits of
 * the size, which is always a multiple of 512. Read and write them through the accessors below. */
#ifndef CS_BLOCK_H
#define CS_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cs_assert.h"

typedef struct cs_block_s cs_block_t;
typedef struct cs_segment_s cs_segment_t;
typedef struct cs_fence_s cs_fence_t;

typedef enum cs_block_state_e {
  CS_BLOCK_FREE = 0,
  CS_BLOCK_ALLOCATED = 1,
  CS_BLOCK_PENDING = 2,
} cs_block_state_t;

/* The low bits of size_and_flags. Sizes are multiples of CS_MIN_BLOCK_SIZE (512). */
enum {
  CS_BLOCK_STATE_BITS = 0x3, /* cs_block_state_t */
  CS_BLOCK_SMALL_BIT = 0x4,  /* small pool (else large) */
  CS_BLOCK_RED_BIT = 0x8,    /* free-set colour (free_set.c); meaningless unless FREE */
  CS_BLOCK_FLAG_BITS = 0x1ff,
};

/* Node of a pool's free set, an intrusive red-black tree (free_set.h). */
typedef struct cs_free_link_s {
  cs_block_t *child[2];    /* [0] lower keys, [1] higher keys */
  cs_block_t *parent;      /* NULL at the root */
} cs_free_link_t;

struct cs_block_s {
  uintptr_t addr;          /* device address */
  uintptr_t stream;        /* the segment's stream; first key of the free set */
  cs_block_t *prev;        /* lower neighbour in the segment, NULL at the segment's start */
  cs_block_t *next;        /* higher neighbour, NULL at the segment's end */
  cs_segment_t *segment;
  uint64_t size_and_flags; /* bytes (a multiple of 512) | CS_BLOCK_* flag bits */
  union {
    struct {               /* FREE */
      cs_free_link_t link; /* node in the pool's free set */
      uint64_t gc_base;    /* pool look-up count when the block became free (its age base) */
    } free;
    struct {               /* ALLOCATED or PENDING */
      size_t requested;    /* bytes the program asked for */
      union {
        cs_block_t *next_pending; /* PENDING (and spare blocks): FIFO of blocks waiting to become free */
        cs_block_t *next_live;    /* ALLOCATED: the next block of its bucket in the live map */
      };
      cs_fence_t *fence;   /* PENDING: events to wait for; NULL = parked or syncing */
      uint32_t stack_id;   /* interned allocation stack, 0 = none */
    } held;
  } u;
};

/* The layout the accessors and the union rely on: 80 bytes (bench/README.md, host memory). */
_Static_assert(sizeof(cs_block_t) == 80, "cs_block_t grew: check bench_memory's bytes per allocation");

struct cs_segment_s {
  uintptr_t addr;
  size_t size;             /* bytes obtained from the backend */
  uintptr_t stream;
  cs_block_t *first;       /* lowest block; the blocks tile [addr, addr + size) */
  cs_segment_t *prev;      /* all segments of the allocator, newest first */
  cs_segment_t *next;
  uint32_t stack_id;       /* stack of the allocation that created the segment */
  bool small;
};

static inline size_t cs_block_size(const cs_block_t *b) {
  return (size_t)(b->size_and_flags & ~(uint64_t)CS_BLOCK_FLAG_BITS);
}

static inline void cs_block_set_size(cs_block_t *b, size_t size) {
  cs_assert((size & CS_BLOCK_FLAG_BITS) == 0);
  b->size_and_flags = (uint64_t)size | (b->size_and_flags & CS_BLOCK_FLAG_BITS);
}

static inline cs_block_state_t cs_block_state(const cs_block_t *b) {
  return (cs_block_state_t)(b->size_and_flags & CS_BLOCK_STATE_BITS);
}

static inline void cs_block_set_state(cs_block_t *b, cs_block_state_t state) {
  b->size_and_flags = (b->size_and_flags & ~(uint64_t)CS_BLOCK_STATE_BITS) | (uint64_t)state;
}

static inline bool cs_block_small(const cs_block_t *b) {
  return (b->size_and_flags & CS_BLOCK_SMALL_BIT) != 0;
}

static inline void cs_block_set_small(cs_block_t *b, bool small) {
  b->size_and_flags = (b->size_and_flags & ~(uint64_t)CS_BLOCK_SMALL_BIT) |
                      (small ? (uint64_t)CS_BLOCK_SMALL_BIT : 0);
}

/* What a held block reports; a FREE block has no request and no stack. */
static inline size_t cs_block_requested(const cs_block_t *b) {
  return cs_block_state(b) == CS_BLOCK_FREE ? 0 : b->u.held.requested;
}

static inline uint32_t cs_block_stack_id(const cs_block_t *b) {
  return cs_block_state(b) == CS_BLOCK_FREE ? 0 : b->u.held.stack_id;
}

static inline bool cs_block_is_split(const cs_block_t *b) { return b->prev != NULL || b->next != NULL; }

#endif

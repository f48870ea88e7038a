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
 * Only FREE blocks merge with their neighbours, and merging never crosses segments. */
#ifndef CS_BLOCK_H
#define CS_BLOCK_H

#include <bsd/sys/tree.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cs_block_s cs_block_t;
typedef struct cs_segment_s cs_segment_t;
typedef struct cs_fence_s cs_fence_t;

typedef enum cs_block_state_e {
  CS_BLOCK_FREE = 0,
  CS_BLOCK_ALLOCATED = 1,
  CS_BLOCK_PENDING = 2,
} cs_block_state_t;

struct cs_block_s {
  uintptr_t addr;          /* device address */
  size_t size;             /* bytes, a multiple of 512 */
  size_t requested;        /* bytes the program asked for; valid while ALLOCATED or PENDING */
  uintptr_t stream;        /* the segment's stream; first key of the free set */
  cs_block_t *prev;        /* lower neighbour in the segment, NULL at the segment's start */
  cs_block_t *next;        /* higher neighbour, NULL at the segment's end */
  cs_segment_t *segment;
  union {
    RB_ENTRY(cs_block_s) free_link; /* FREE: node in the pool's free set */
    struct {
      cs_block_t *next_pending;     /* PENDING: FIFO of blocks waiting to become free */
      cs_fence_t *fence;            /* PENDING: events to wait for; NULL = parked or syncing */
    } pending;
  } u;
  uint64_t gc_base;        /* pool look-up count when the block became free (its age base) */
  uint32_t stack_id;       /* interned allocation stack, 0 = none */
  uint8_t state;           /* cs_block_state_t */
  bool small;              /* small pool (else large) */
};

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

static inline bool cs_block_is_split(const cs_block_t *b) { return b->prev != NULL || b->next != NULL; }

#endif

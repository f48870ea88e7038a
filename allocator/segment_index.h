/* SPDX-License-Identifier: Apache-2.0 */
/* cs_segment_index_t: an allocator's segments sorted by address, for the question "which segment
 * holds this address?". The driver hooks ask it on every cuMemFreeAsync and on frees of memory
 * cudasnap did not hand out (interpose/hooks_driver.c), where a walk of the segment list cost
 * O(segments) under the allocator's lock. A sorted array: found by binary search, changed by a
 * move of the entries after the one added or removed, which happens only when a segment is
 * obtained from or given back to the driver (a driver call costs far more).
 *
 * Not thread-safe: the owning allocator's lock protects it. Only cs_segment_index_reserve
 * allocates, so a caller reserves before it changes any state. */
#ifndef CS_SEGMENT_INDEX_H
#define CS_SEGMENT_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "allocator/block.h"

typedef struct cs_segment_index_s {
  cs_segment_t **by_addr; /* ascending s->addr */
  size_t count;
  size_t capacity;
} cs_segment_index_t;

static inline void cs_segment_index_init(cs_segment_index_t *x) { *x = (cs_segment_index_t){0}; }
void cs_segment_index_destroy(cs_segment_index_t *x);

/* Room for n segments. Returns 0 or -CS_EHOSTMEM (the index unchanged). */
int cs_segment_index_reserve(cs_segment_index_t *x, size_t n);

/* pre: room for one more (cs_segment_index_reserve); s overlaps no segment of the index. */
void cs_segment_index_add(cs_segment_index_t *x, cs_segment_t *s);

/* pre: s is in the index. */
void cs_segment_index_remove(cs_segment_index_t *x, const cs_segment_t *s);

/* The segment with s->addr <= addr < s->addr + s->size, or NULL. O(log segments). */
cs_segment_t *cs_segment_index_find(const cs_segment_index_t *x, uintptr_t addr);

#endif

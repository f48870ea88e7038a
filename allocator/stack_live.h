/* SPDX-License-Identifier: Apache-2.0 */
/* cs_stack_live_table_t: the live blocks of an allocator and the bytes the program asked for in
 * them, per allocation stack id, counted as blocks are handed out and given back (issue 45).
 *
 * The live record publishes live bytes per site once a second. Walking the blocks for them held
 * the allocator's lock for a time that grows with the blocks (248 us at 100,000, about 2.5 ms at
 * 1,000,000: every allocating thread waits); with counts kept here, a publication copies them a
 * page at a time, each copy under the lock as short whatever the number of blocks.
 *
 * Stack ids are dense, from 1 (record/intern.h; 0 is "no stack"), so the counts are an array by
 * id, in pages of CS_STACK_LIVE_PAGE ids made when an id of theirs first comes, and never moved or
 * freed until the allocator goes. Making a page is the only allocation: at most once per
 * CS_STACK_LIVE_PAGE new stacks, in cs_stack_live_reserve, before a malloc changes anything.
 * Counting is two additions, under the lock the malloc or free holds anyway. Not thread-safe: the
 * owning allocator's lock protects it. */
#ifndef CS_STACK_LIVE_H
#define CS_STACK_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "common/cs_compiler.h"

/* One stack id's ALLOCATED blocks (not those pending free) and their requested bytes. */
typedef struct cs_stack_live_s {
  uint64_t bytes;
  uint64_t blocks;
} cs_stack_live_t;

/* Ids per page: a page is 16 KiB, copied in a few microseconds. */
enum { CS_STACK_LIVE_PAGE = 1024 };

typedef struct cs_stack_live_table_s {
  cs_stack_live_t **pages; /* page p counts ids [p * CS_STACK_LIVE_PAGE, (p + 1) * ...); NULL: none yet */
  size_t page_count;       /* slots in pages: ids from page_count * CS_STACK_LIVE_PAGE on have none */
} cs_stack_live_table_t;

void cs_stack_live_init(cs_stack_live_table_t *t);
void cs_stack_live_destroy(cs_stack_live_table_t *t);

/* The slow half of cs_stack_live_reserve: makes stack_id's page (and room for its slot). */
int cs_stack_live_make_page(cs_stack_live_table_t *t, uint32_t stack_id);

/* Room for stack_id's counts, so that cs_stack_live_add cannot fail: 0, or -CS_EHOSTMEM (the table
 * is unchanged). */
static inline int cs_stack_live_reserve(cs_stack_live_table_t *t, uint32_t stack_id) {
  size_t p = stack_id / CS_STACK_LIVE_PAGE;
  if (CS_LIKELY(p < t->page_count && t->pages[p])) return 0;
  return cs_stack_live_make_page(t, stack_id);
}

static inline cs_stack_live_t *cs_stack_live_at(const cs_stack_live_table_t *t, uint32_t stack_id) {
  return &t->pages[stack_id / CS_STACK_LIVE_PAGE][stack_id % CS_STACK_LIVE_PAGE];
}

/* A block of stack_id was handed out. pre: cs_stack_live_reserve(t, stack_id) returned 0. */
static inline void cs_stack_live_add(cs_stack_live_table_t *t, uint32_t stack_id, size_t requested) {
  cs_stack_live_t *c = cs_stack_live_at(t, stack_id);
  c->bytes += requested;
  c->blocks++;
}

/* A block of stack_id, counted by cs_stack_live_add, was given back. */
static inline void cs_stack_live_remove(cs_stack_live_table_t *t, uint32_t stack_id, size_t requested) {
  cs_stack_live_t *c = cs_stack_live_at(t, stack_id);
  c->bytes -= requested;
  c->blocks--;
}

/* Copy page `page`'s counts into out (zeros for a page not made). Returns page_count. */
size_t cs_stack_live_copy_page(const cs_stack_live_table_t *t, size_t page, cs_stack_live_t out[CS_STACK_LIVE_PAGE]);

#endif

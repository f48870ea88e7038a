/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the allocator tests: whole-state invariants checked through the public walk, and the
 * scaffolding for one allocator over one fake device. */
#ifndef CS_TEST_ALLOC_CHECK_H
#define CS_TEST_ALLOC_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "allocator/allocator.h"
#include "allocator/internal.h" /* the free sets, checked directly */
#include "allocator/size_class.h"
#include "tests/fakes/fake_backend.h"

typedef struct alloc_walk_s {
  uintptr_t seg_addr;
  size_t seg_size;
  uintptr_t expect_next;    /* where the next block of the current segment must start */
  int prev_state;           /* state of the previous block in the segment, -1 at a segment start */
  size_t segments, reserved, allocated_blocks, allocated_bytes, active_bytes, free_blocks, free_bytes;
  size_t split_free_blocks, split_free_bytes;
  size_t blocks_in_segment;
  bool ok;
} alloc_walk_t;

static inline void alloc_walk_close_segment(alloc_walk_t *w) {
  if (w->seg_size && w->expect_next != w->seg_addr + w->seg_size) w->ok = false;
}

static inline void alloc_walk_visit(void *ctx, const cs_segment_info_t *s, const cs_block_info_t *b) {
  alloc_walk_t *w = ctx;
  if (s->addr != w->seg_addr) { /* a new segment starts */
    alloc_walk_close_segment(w);
    w->seg_addr = s->addr;
    w->seg_size = s->size;
    w->expect_next = s->addr;
    w->prev_state = -1;
    w->segments++;
    w->reserved += s->size;
  }
  if (b->addr != w->expect_next || b->size == 0 || b->size % 512 != 0) w->ok = false;
  /* two free neighbours would have been merged */
  if (b->state == CS_BLOCK_FREE && w->prev_state == CS_BLOCK_FREE) w->ok = false;
  w->expect_next = b->addr + b->size;
  w->prev_state = (int)b->state;
  if (b->state == CS_BLOCK_ALLOCATED) {
    w->allocated_blocks++;
    w->allocated_bytes += b->size;
  }
  if (b->state != CS_BLOCK_FREE) w->active_bytes += b->size;
  if (b->state == CS_BLOCK_FREE) {
    w->free_blocks++;
    w->free_bytes += b->size;
    if (b->size != s->size) {
      w->split_free_blocks++;
      w->split_free_bytes += b->size;
    }
  }
}

/* The ALLOCATED blocks and requested bytes by stack id that a walk finds, to compare with the
 * counts the allocator keeps (allocator/stack_live.h). */
typedef struct alloc_stack_walk_s {
  cs_stack_live_t *counts; /* ids of them */
  size_t ids;
  bool ok;
} alloc_stack_walk_t;

static inline void alloc_stack_walk_visit(void *ctx, const cs_segment_info_t *s, const cs_block_info_t *b) {
  (void)s;
  alloc_stack_walk_t *w = ctx;
  if (b->state != CS_BLOCK_ALLOCATED) return;
  if (b->stack_id >= w->ids) { /* a live block whose id has no page */
    w->ok = false;
    return;
  }
  w->counts[b->stack_id].bytes += b->requested;
  w->counts[b->stack_id].blocks++;
}

/* Each stack id's counts are what the walk finds, page by page, in one hold of the lock. */
static inline void assert_stack_live_agrees(cs_allocator_t *a) {
  static cs_stack_live_t page[CS_STACK_LIVE_PAGE];
  cs_allocator_lock(a);
  size_t pages = cs_allocator_stack_live_locked(a, 0, page);
  if (pages == 0) pages = 1; /* no page made: the walk must find no live block (page 0 reads zeros) */
  alloc_stack_walk_t w = {.counts = calloc(pages * CS_STACK_LIVE_PAGE, sizeof *w.counts),
                          .ids = pages * CS_STACK_LIVE_PAGE, .ok = true};
  if (w.counts) {
    cs_allocator_visit_locked(a, alloc_stack_walk_visit, &w);
    for (size_t p = 0; p < pages; p++) {
      cs_allocator_stack_live_locked(a, p, page);
      if (memcmp(page, w.counts + p * CS_STACK_LIVE_PAGE, sizeof page) != 0) w.ok = false;
    }
  }
  cs_allocator_unlock(a);
  assert_non_null(w.counts);
  free(w.counts);
  assert_true(w.ok);
}

/* The blocks tile every segment, free neighbours are merged, the pools' free sets are valid trees
 * holding exactly the free blocks, the statistics agree with the state they describe, and so do
 * the counts by stack. */
static inline void assert_allocator_consistent(cs_allocator_t *a) {
  assert_stack_live_agrees(a);
  alloc_walk_t w = {.ok = true, .prev_state = -1};
  cs_allocator_visit(a, alloc_walk_visit, &w);
  alloc_walk_close_segment(&w);
  assert_true(w.ok);
  cs_allocator_lock(a);
  long small_free = cs_free_set_check(&a->small.free), large_free = cs_free_set_check(&a->large.free);
  cs_allocator_unlock(a);
  assert_true(small_free >= 0 && large_free >= 0);
  assert_int_equal((size_t)(small_free + large_free), w.free_blocks);
  cs_stats_t st;
  cs_allocator_get_stats(a, &st);
  assert_int_equal(st.segment[CS_STAT_ALL].current, (int64_t)w.segments);
  assert_int_equal(st.reserved_bytes[CS_STAT_ALL].current, (int64_t)w.reserved);
  assert_int_equal(st.allocation[CS_STAT_ALL].current, (int64_t)w.allocated_blocks);
  assert_int_equal(st.allocated_bytes[CS_STAT_ALL].current, (int64_t)w.allocated_bytes);
  assert_int_equal(st.active_bytes[CS_STAT_ALL].current, (int64_t)w.active_bytes);
  assert_int_equal(st.inactive_split[CS_STAT_ALL].current, (int64_t)w.split_free_blocks);
  assert_int_equal(st.inactive_split_bytes[CS_STAT_ALL].current, (int64_t)w.split_free_bytes);
  for (int i = 0; i < CS_STAT_POOLS; i++) {
    assert_true(st.segment[i].current >= 0);
    assert_true(st.allocated_bytes[i].peak >= st.allocated_bytes[i].current);
  }
}

/* One allocator over one fake device, for a test. */
typedef struct alloc_fixture_s {
  fake_backend_t fb;
  cs_alloc_conf_t conf;
  cs_allocator_t *a;
} alloc_fixture_t;

static inline alloc_fixture_t *fixture_new(size_t capacity) {
  alloc_fixture_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  fake_backend_init(&f->fb, capacity);
  cs_alloc_conf_init(&f->conf);
  return f;
}

static inline void fixture_start(alloc_fixture_t *f, const cs_allocator_observer_t *observer) {
  cs_backend_t backend = fake_backend_as_backend(&f->fb);
  f->a = cs_allocator_create(&f->conf, &backend, observer);
  assert_non_null(f->a);
}

static inline void fixture_free(alloc_fixture_t *f) {
  if (f->a) assert_allocator_consistent(f->a);
  assert_int_equal(f->fb.violations, 0);
  cs_allocator_destroy(f->a);
  free(f);
}

static inline uintptr_t must_alloc(cs_allocator_t *a, size_t size) {
  uintptr_t p = 0;
  assert_int_equal(cs_allocator_malloc(a, size, 0, 0, &p), 0);
  assert_true(p != 0);
  return p;
}

static inline cs_stats_t stats_of(cs_allocator_t *a) {
  cs_stats_t st;
  cs_allocator_get_stats(a, &st);
  return st;
}

#endif

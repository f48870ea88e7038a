/* SPDX-License-Identifier: Apache-2.0 */
/* Pools, segments, split and merge: the core of PyTorch's algorithm (snapshot-format.md 6.3-6.5),
 * with statistics updated at exactly PyTorch's points (section 5.3). */
#include <stdlib.h>
#include <string.h>

#include "allocator/internal.h"
#include "common/cs_assert.h"
#include "common/cs_error.h"

/* ------------------------------------------------------------------------------------------------
 * Free sets
 * ----------------------------------------------------------------------------------------------*/

void cs_pool_init(cs_pool_t *pool, bool small) {
  cs_free_set_init(&pool->free);
  pool->lookups = 0;
  pool->small = small;
}

void cs_pool_insert(cs_allocator_t *a, cs_block_t *b) {
  cs_pool_t *pool = cs_pool_of(a, b);
  cs_block_set_state(b, CS_BLOCK_FREE);
  b->u.free.gc_base = pool->lookups;
  cs_free_set_insert(&pool->free, b);
}

void cs_pool_remove(cs_allocator_t *a, cs_block_t *b) {
  cs_assert(cs_block_state(b) == CS_BLOCK_FREE);
  cs_free_set_remove(&cs_pool_of(a, b)->free, b);
}

/* Helpers for release.c, which walks the free sets. */
cs_block_t *cs_pool_first(cs_pool_t *pool) { return cs_free_set_first(&pool->free); }
cs_block_t *cs_pool_last(cs_pool_t *pool) { return cs_free_set_last(&pool->free); }
cs_block_t *cs_pool_next(cs_block_t *b) { return cs_free_set_next(b); }
cs_block_t *cs_pool_prev(cs_block_t *b) { return cs_free_set_prev(b); }
cs_block_t *cs_pool_lower_bound(cs_pool_t *pool, uintptr_t stream, size_t size) {
  return cs_free_set_lower_bound(&pool->free, stream, size, NULL);
}

/* ------------------------------------------------------------------------------------------------
 * Block structs: recycled through a free list, refilled a slab at a time. Callers reserve before
 * changing any state, so nothing fails half-way through.
 * ----------------------------------------------------------------------------------------------*/

enum { CS_BLOCKS_PER_SLAB = 128 };

typedef struct cs_block_slab_s {
  struct cs_block_slab_s *next;
  cs_block_t blocks[CS_BLOCKS_PER_SLAB];
} cs_block_slab_t;

static CS_COLD int cs_block_refill(cs_allocator_t *a) {
  cs_block_slab_t *slab = malloc(sizeof *slab);
  if (!slab) return -CS_EHOSTMEM;
  slab->next = a->slabs;
  a->slabs = slab;
  for (size_t i = 0; i < CS_BLOCKS_PER_SLAB; i++) cs_block_give(a, &slab->blocks[i]);
  return 0;
}

int cs_block_reserve(cs_allocator_t *a, size_t n) {
  while (a->spare_count < n) {
    int err = cs_block_refill(a);
    if (err) return err;
  }
  return 0;
}

cs_block_t *cs_block_take(cs_allocator_t *a) {
  cs_block_t *b = a->spare_blocks;
  cs_assert(b != NULL);
  a->spare_blocks = b->u.held.next_pending;
  a->spare_count--;
  memset(b, 0, sizeof *b);
  return b;
}

void cs_block_give(cs_allocator_t *a, cs_block_t *b) {
  b->u.held.next_pending = a->spare_blocks;
  a->spare_blocks = b;
  a->spare_count++;
}

void cs_block_slabs_free(cs_allocator_t *a) {
  cs_block_slab_t *slab = a->slabs;
  while (slab) {
    cs_block_slab_t *next = slab->next;
    free(slab);
    slab = next;
  }
  a->slabs = NULL;
  a->spare_blocks = NULL;
  a->spare_count = 0;
}

/* ------------------------------------------------------------------------------------------------
 * Finding a cached block (PyTorch's get_free_block)
 * ----------------------------------------------------------------------------------------------*/

static inline bool cs_gc_enabled(const cs_allocator_t *a) {
  return a->conf.garbage_collection_threshold > 0.0;
}

/* The best fit for r, left in the free set (cs_pool_alloc_cached_block takes it out), or NULL.
 * *pred receives the block before it in the set. */
cs_block_t *cs_pool_get_free_block(cs_allocator_t *a, const cs_request_t *r, cs_block_t **pred) {
  cs_pool_t *pool = r->pool;
  if (cs_gc_enabled(a)) pool->lookups++;
  cs_block_t *b = cs_free_set_lower_bound(&pool->free, r->stream, r->size, pred);
  if (!b || b->stream != r->stream) return NULL;
  size_t max_split = a->conf.max_split_size;
  size_t b_size = cs_block_size(b);
  size_t excess = b_size - r->size;
  /* Do not carve a small request out of an oversize block, nor hand a large request a block
   * that is much larger than it (PyTorch's two rules). */
  if (r->size < max_split && b_size >= max_split) return NULL;
  if (r->size >= max_split && excess >= a->conf.max_non_split_rounding) return NULL;
  /* IPC-safe large pool: whole segments only, within a bounded slack. */
  if (!pool->small && !a->conf.split_large &&
      excess > cs_whole_segment_slack(r->size, a->conf.max_non_split_rounding))
    return NULL;
  /* ipc_small: small blocks are whole segments too. */
  if (pool->small && a->conf.ipc_small && excess > cs_small_segment_slack(r->size)) return NULL;
  return b;
}

/* ------------------------------------------------------------------------------------------------
 * New segments (PyTorch's alloc_block) and their release (release_block)
 * ----------------------------------------------------------------------------------------------*/

static void cs_segment_link(cs_allocator_t *a, cs_segment_t *s) {
  s->prev = NULL;
  s->next = a->segments;
  if (a->segments) a->segments->prev = s;
  a->segments = s;
  cs_segment_index_add(&a->segment_index, s);
}

static void cs_segment_unlink(cs_allocator_t *a, cs_segment_t *s) {
  if (s->prev) s->prev->next = s->next;
  else a->segments = s->next;
  if (s->next) s->next->prev = s->prev;
  cs_segment_index_remove(&a->segment_index, s);
}

/* Returns 0 with *out a fresh block spanning the new segment (not in any set), -CS_ENOMEM, or the
 * backend's status. pre: a block struct is reserved. */
int cs_pool_alloc_segment(cs_allocator_t *a, const cs_request_t *r, bool is_retry, cs_block_t **out) {
  if (is_retry) a->stats.num_alloc_retries++;
  if (cs_segment_index_reserve(&a->segment_index, a->segment_index.count + 1) != 0) return -CS_EHOSTMEM;
  cs_segment_t *s = malloc(sizeof *s);
  if (!s) return -CS_EHOSTMEM;
  uintptr_t addr = 0;
  int rc = a->backend.ops->segment_alloc(a->backend.self, r->segment_size, &addr);
  if (rc) {
    free(s);
    return rc;
  }
  bool small = r->pool->small;
  *s = (cs_segment_t){.addr = addr, .size = r->segment_size, .stream = r->stream,
                      .stack_id = r->stack_id, .small = small};
  cs_block_t *b = cs_block_take(a);
  b->addr = addr;
  cs_block_set_size(b, r->segment_size);
  b->stream = r->stream;
  b->segment = s;
  cs_block_set_small(b, small);
  s->first = b;
  cs_segment_link(a, s);

  int64_t size = (int64_t)r->segment_size;
  cs_stat_array_increase(a->stats.segment, small, 1);
  cs_stat_array_increase(a->stats.reserved_bytes, small, size);
  if (r->segment_size >= a->conf.max_split_size) cs_stat_increase(&a->stats.oversize_segments, 1);
  a->stats.num_device_alloc++;
  cs_emit(a, CS_TRACE_SEGMENT_ALLOC, addr, r->segment_size, r->stream, r->stack_id);
  *out = b;
  return 0;
}

/* Give a whole-segment free block back to the backend and forget it, as `how` says. Returns 0 or
 * the backend's status; with CS_RELEASE_TO_BACKEND a failure changes nothing, and the trace says
 * so. pre: b is FREE and not split. */
int cs_pool_release_segment(cs_allocator_t *a, cs_block_t *b, cs_segment_release_t how) {
  cs_assert(cs_block_state(b) == CS_BLOCK_FREE && !cs_block_is_split(b));
  cs_segment_t *s = b->segment;
  /* Reported before the release: once released, the driver may hand the address to anyone. */
  cs_emit(a, CS_TRACE_SEGMENT_FREE, s->addr, s->size, s->stream, s->stack_id);
  int rc = 0;
  if (how != CS_RELEASE_FORGET) rc = a->backend.ops->segment_free(a->backend.self, s->addr, s->size);
  if (rc && how == CS_RELEASE_TO_BACKEND) {
    /* The segment is still ours (a sticky error: cuMemFree returns it and frees nothing). Take
     * the report back, so that the trace replays to what is cached; the statistics never
     * changed. */
    cs_emit(a, CS_TRACE_SEGMENT_ALLOC, s->addr, s->size, s->stream, s->stack_id);
    return rc;
  }
  cs_pool_remove(a, b);
  cs_stat_array_decrease(a->stats.segment, s->small, 1);
  cs_stat_array_decrease(a->stats.reserved_bytes, s->small, (int64_t)s->size);
  if (s->size >= a->conf.max_split_size) cs_stat_decrease(&a->stats.oversize_segments, 1);
  a->stats.num_device_free++;
  /* under the lock; read without it by a free in sync mode (allocator.c) */
  atomic_store_explicit(&a->releases, atomic_load_explicit(&a->releases, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  cs_segment_unlink(a, s);
  free(s);
  cs_block_give(a, b);
  return rc;
}

/* ------------------------------------------------------------------------------------------------
 * Handing out a block (alloc_found_block)
 * ----------------------------------------------------------------------------------------------*/

static bool cs_should_split(const cs_allocator_t *a, const cs_block_t *b, size_t size) {
  return cs_splits_rest(cs_block_small(b), size, cs_block_size(b) - size, &a->conf);
}

/* Split off the front of b for the request; b keeps its struct and becomes the remainder, moved up
 * by r->size. Returns the front, linked into the segment but in no set. If b was in the free set
 * (in_set, pred its predecessor there), it stays there: where the shorter remainder still sorts
 * after pred it keeps its place in the tree, the common case when a large free block is carved
 * up, and is otherwise removed and inserted again. pre: a block struct is reserved. */
static cs_block_t *cs_split_front(cs_allocator_t *a, const cs_request_t *r, cs_block_t *b,
                                  bool in_set, const cs_block_t *pred) {
  cs_block_t *front = cs_block_take(a);
  front->addr = b->addr;
  cs_block_set_size(front, r->size);
  front->stream = b->stream;
  front->segment = b->segment;
  cs_block_set_small(front, cs_block_small(b));
  front->prev = b->prev;
  if (front->prev) front->prev->next = front;
  else front->segment->first = front;
  front->next = b;
  b->prev = front;

  cs_block_t rest_key = {.addr = b->addr + r->size, .stream = b->stream,
                         .size_and_flags = cs_block_size(b) - r->size};
  bool keeps_place = in_set && (!pred || cs_free_set_less(pred, &rest_key));
  if (in_set && !keeps_place) cs_pool_remove(a, b);
  b->addr = rest_key.addr;
  cs_block_set_size(b, rest_key.size_and_flags);
  if (keeps_place) b->u.free.gc_base = cs_pool_of(a, b)->lookups; /* as if inserted anew */
  else cs_pool_insert(a, b);
  return front;
}

/* Hand out b, or its front part after a split; returns the block handed out. PyTorch's
 * alloc_found_block. pre: b is in the free set exactly when in_set (pred: its predecessor there);
 * a block struct is reserved; the live map has room. */
static cs_block_t *cs_alloc_block(cs_allocator_t *a, const cs_request_t *r, cs_block_t *b,
                                  bool in_set, const cs_block_t *pred) {
  bool small = cs_block_small(b);
  bool already_split = cs_block_is_split(b);
  if (cs_should_split(a, b, r->size)) {
    cs_block_t *rest = b;
    b = cs_split_front(a, r, rest, in_set, pred);
    if (already_split) {
      cs_stat_array_decrease(a->stats.inactive_split_bytes, small, (int64_t)r->size);
    } else {
      cs_stat_array_increase(a->stats.inactive_split_bytes, small, (int64_t)cs_block_size(rest));
      cs_stat_array_increase(a->stats.inactive_split, small, 1);
    }
  } else {
    if (in_set) cs_pool_remove(a, b);
    if (already_split) {
      cs_stat_array_decrease(a->stats.inactive_split_bytes, small, (int64_t)cs_block_size(b));
      cs_stat_array_decrease(a->stats.inactive_split, small, 1);
    }
  }
  cs_block_set_state(b, CS_BLOCK_ALLOCATED);
  b->u.held.requested = r->requested;
  b->u.held.stack_id = r->stack_id;
  int rc = cs_block_map_insert(&a->live, b);
  cs_assert(rc == 0); /* room was reserved */
  (void)rc;
  cs_stack_live_add(&a->stack_live, r->stack_id, r->requested); /* its page was reserved too */

  int64_t size = (int64_t)cs_block_size(b);
  cs_stat_array_increase(a->stats.allocation, small, 1);
  cs_stat_array_increase(a->stats.allocated_bytes, small, size);
  cs_stat_array_increase(a->stats.active, small, 1);
  cs_stat_array_increase(a->stats.active_bytes, small, size);
  cs_stat_array_increase(a->stats.requested_bytes, small, (int64_t)r->requested);
  if (cs_block_size(b) >= a->conf.max_split_size) cs_stat_increase(&a->stats.oversize_allocations, 1);
  cs_emit(a, CS_TRACE_ALLOC, b->addr, r->requested, b->stream, r->stack_id);
  return b;
}

cs_block_t *cs_pool_alloc_cached_block(cs_allocator_t *a, const cs_request_t *r, cs_block_t *b,
                                       const cs_block_t *pred) {
  return cs_alloc_block(a, r, b, true, pred);
}

cs_block_t *cs_pool_alloc_found_block(cs_allocator_t *a, const cs_request_t *r, cs_block_t *b) {
  return cs_alloc_block(a, r, b, false, NULL);
}

/* ------------------------------------------------------------------------------------------------
 * Freeing: the request (free) and the completion (free_block)
 * ----------------------------------------------------------------------------------------------*/

/* The program gave the block back; it is PENDING until cs_pool_free_block. pre: b was removed
 * from the live map. */
void cs_pool_free_request(cs_allocator_t *a, cs_block_t *b) {
  cs_assert(cs_block_state(b) == CS_BLOCK_ALLOCATED);
  cs_block_set_state(b, CS_BLOCK_PENDING);
  b->u.held.next_pending = NULL;
  b->u.held.fence = NULL;
  bool small = cs_block_small(b);
  size_t size = cs_block_size(b);
  cs_stat_array_decrease(a->stats.allocation, small, 1);
  cs_stat_array_decrease(a->stats.allocated_bytes, small, (int64_t)size);
  cs_stack_live_remove(&a->stack_live, b->u.held.stack_id, b->u.held.requested);
  cs_emit(a, CS_TRACE_FREE_REQUESTED, b->addr, b->u.held.requested, b->stream, b->u.held.stack_id);
  if (size >= a->conf.max_split_size) cs_stat_decrease(&a->stats.oversize_allocations, 1);
}

/* Merge src, a free neighbour, into dst: dst takes its bytes and its links in the segment; src's
 * struct and its place in the free set are left to the caller. Returns the bytes taken over. */
static size_t cs_merge(cs_block_t *dst, const cs_block_t *src) {
  if (dst->prev == src) { /* [src dst] */
    dst->addr = src->addr;
    dst->prev = src->prev;
    if (dst->prev) dst->prev->next = dst;
    else dst->segment->first = dst;
  } else { /* [dst src] */
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
  }
  size_t taken = cs_block_size(src);
  cs_block_set_size(dst, cs_block_size(dst) + taken);
  return taken;
}

/* b, just merged with place, goes into the free set: in place's position when b still sorts
 * there, which saves a removal and an insertion (the common case when a block is freed next to
 * the rest of its segment, the same-size pattern of bench/README.md); else as a new key. b is
 * larger than place and of the same stream, so it sorts after place's predecessor: only the
 * successor can be passed. place's struct goes back to the spares. */
static void cs_pool_insert_merged(cs_allocator_t *a, cs_block_t *b, cs_block_t *place) {
  cs_pool_t *pool = cs_pool_of(a, b);
  const cs_block_t *successor = cs_free_set_next(place);
  if (!successor || cs_free_set_less(b, successor)) {
    cs_block_set_state(b, CS_BLOCK_FREE);
    b->u.free.gc_base = pool->lookups;
    cs_free_set_replace(&pool->free, place, b);
  } else {
    cs_pool_remove(a, place);
    cs_pool_insert(a, b);
  }
  cs_block_give(a, place);
}

/* The block becomes reusable: merge with free neighbours and return it to its pool. The
 * inactive_split statistics get one net change each, as PyTorch applies them. */
static void cs_pool_complete_free(cs_allocator_t *a, cs_block_t *b, bool now) {
  cs_assert(cs_block_state(b) == CS_BLOCK_PENDING);
  int64_t requested = (int64_t)b->u.held.requested;
  cs_trace_event_t completed = {.action = CS_TRACE_FREE_COMPLETED, .addr = b->addr,
                                .size = b->u.held.requested, .stream = b->stream,
                                .stack_id = b->u.held.stack_id, .completes_now = now};
  cs_emit_event(a, &completed);
  int64_t original_size = (int64_t)cs_block_size(b);
  int64_t net_blocks = 0;
  int64_t net_bytes = 0;
  cs_block_t *neighbours[2] = {b->prev, b->next};
  cs_block_t *place = NULL; /* the first neighbour merged, still in the free set */
  for (int i = 0; i < 2; i++) {
    cs_block_t *src = neighbours[i];
    if (!src || cs_block_state(src) != CS_BLOCK_FREE) continue;
    net_blocks -= 1;
    net_bytes -= (int64_t)cs_merge(b, src);
    if (!place) {
      place = src; /* stays in the free set until b takes its place or its key */
    } else {
      cs_pool_remove(a, src);
      cs_block_give(a, src);
    }
  }
  if (place) cs_pool_insert_merged(a, b, place);
  else cs_pool_insert(a, b);
  if (cs_block_is_split(b)) {
    net_blocks += 1;
    net_bytes += (int64_t)cs_block_size(b);
  }
  bool small = cs_block_small(b);
  cs_stat_array_update(a->stats.inactive_split, small, net_blocks);
  cs_stat_array_update(a->stats.inactive_split_bytes, small, net_bytes);
  cs_stat_array_decrease(a->stats.active, small, 1);
  cs_stat_array_decrease(a->stats.active_bytes, small, original_size);
  cs_stat_array_decrease(a->stats.requested_bytes, small, requested);
}

void cs_pool_free_block(cs_allocator_t *a, cs_block_t *b) { cs_pool_complete_free(a, b, false); }

void cs_pool_free_block_now(cs_allocator_t *a, cs_block_t *b) { cs_pool_complete_free(a, b, true); }

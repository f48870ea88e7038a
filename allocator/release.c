/* SPDX-License-Identifier: Apache-2.0 */
/* Giving cached memory back to the device: empty_cache, the targeted release before a retry,
 * garbage collection, and the out-of-memory report (snapshot-format.md sections 6.3 and 6.6). */
#include "allocator/internal.h"
#include "common/cs_assert.h"
#include "common/cs_error.h"

/* Release every whole-segment free block of a pool. A block the backend refuses to free stays
 * cached, so metadata never loses memory that is still allocated. Returns 0 or the first refusal. */
static int cs_release_pool(cs_allocator_t *a, cs_pool_t *pool) {
  int first_error = 0;
  cs_block_t *b = cs_pool_first(pool);
  while (b) {
    cs_block_t *next = cs_pool_next(b);
    if (!cs_block_is_split(b)) {
      int rc = cs_pool_release_segment(a, b, CS_RELEASE_TO_BACKEND);
      if (rc && !first_error) first_error = rc;
    }
    b = next;
  }
  return first_error;
}

/* PyTorch's release_cached_blocks, whose synchronize_and_free_events the caller has done with
 * the lock let go (allocator.c, cs_wait_device); counted here, whether or not anything was
 * waiting, as PyTorch counts it. Returns 0 or the backend's first refusal (the segments it
 * refused stay cached). pre: no capture is underway. */
int cs_release_cached(cs_allocator_t *a) {
  a->stats.num_sync_all_streams++;
  cs_fence_reap(a);
  int large = cs_release_pool(a, &a->large);
  int small = cs_release_pool(a, &a->small);
  return large ? large : small;
}

/* PyTorch's release_available_cached_blocks: with max_split_size set, free the smallest oversize
 * block of the request's stream that is large enough, or else oversize blocks from the largest
 * down until enough is freed. Returns whether enough was released. */
bool cs_release_available(cs_allocator_t *a, const cs_request_t *r) {
  size_t max_split = a->conf.max_split_size;
  if (max_split == SIZE_MAX) return false;
  size_t target = r->size < max_split ? max_split : r->size;
  cs_pool_t *pool = r->pool;
  cs_block_t *b = cs_pool_lower_bound(pool, r->stream, target);
  if (b && b->stream == r->stream) {
    if (cs_block_is_split(b)) return false;
    return cs_pool_release_segment(a, b, CS_RELEASE_TO_BACKEND) == 0;
  }
  /* No single block is large enough: back up to the largest block of the stream. */
  b = b ? cs_pool_prev(b) : cs_pool_last(pool);
  size_t released = 0;
  while (b && released < target && cs_block_size(b) >= max_split && b->stream == r->stream) {
    cs_block_t *prev = cs_pool_prev(b);
    size_t size = cs_block_size(b);
    if (!cs_block_is_split(b) && cs_pool_release_segment(a, b, CS_RELEASE_TO_BACKEND) == 0) released += size;
    b = prev;
  }
  return released >= target;
}

/* Reserved bytes above which garbage collection starts. PyTorch applies the threshold to the
 * memory fraction set by set_per_process_memory_fraction; cudasnap has no such call, so it applies
 * it to the device's total memory, which is what the fraction defaults to. */
static size_t cs_gc_limit(cs_allocator_t *a) {
  if (a->gc_limit == 0) {
    size_t free_bytes = 0, total = 0;
    if (a->backend.ops->mem_info(a->backend.self, &free_bytes, &total) != 0 || total == 0)
      return SIZE_MAX;
    a->gc_limit = (size_t)(a->conf.garbage_collection_threshold * (double)total);
  }
  return a->gc_limit;
}

/* PyTorch's garbage_collect_cached_blocks: while reserved memory exceeds the limit, free unsplit
 * large-pool blocks whose age (look-ups since they became free) is at least the average age.
 * Does not synchronize. */
void cs_release_garbage(cs_allocator_t *a) {
  if (a->conf.garbage_collection_threshold <= 0.0) return;
  size_t limit = cs_gc_limit(a);
  size_t reserved = (size_t)a->stats.reserved_bytes[CS_STAT_ALL].current;
  if (reserved <= limit) return;
  size_t target = reserved - limit;
  cs_pool_t *pool = &a->large;

  double total_age = 0;
  size_t freeable = 0;
  for (cs_block_t *b = cs_pool_first(pool); b; b = cs_pool_next(b)) {
    if (cs_block_is_split(b)) continue;
    total_age += (double)(pool->lookups - b->u.free.gc_base);
    freeable++;
  }
  size_t reclaimed = 0;
  bool freed_any = true;
  while (reclaimed < target && freed_any && freeable > 0) {
    double age_threshold = total_age / (double)freeable;
    freed_any = false;
    cs_block_t *b = cs_pool_first(pool);
    while (b) {
      cs_block_t *next = cs_pool_next(b);
      double age = (double)(pool->lookups - b->u.free.gc_base);
      size_t size = cs_block_size(b);
      if (!cs_block_is_split(b) && age >= age_threshold &&
          cs_pool_release_segment(a, b, CS_RELEASE_TO_BACKEND) == 0) {
        freed_any = true;
        reclaimed += size;
        total_age -= age;
        freeable--;
      }
      b = next;
    }
  }
}

void cs_release_cache_figures(cs_allocator_t *a, cs_cache_figures_t *out) {
  *out = (cs_cache_figures_t){.reserved = (uint64_t)a->stats.reserved_bytes[CS_STAT_ALL].current,
                              .allocated = (uint64_t)a->stats.active_bytes[CS_STAT_ALL].current};
  cs_pool_t *pools[] = {&a->small, &a->large};
  for (size_t p = 0; p < sizeof pools / sizeof *pools; p++) {
    for (cs_block_t *b = cs_pool_first(pools[p]); b; b = cs_pool_next(b)) {
      uint64_t size = cs_block_size(b);
      if (size > out->largest_free) out->largest_free = size;
      if (pools[p]->small) out->small_free += size;
    }
  }
}

/* Count and report an allocation that cannot be satisfied; returns -CS_ENOMEM. */
int cs_release_report_oom(cs_allocator_t *a, size_t requested, uintptr_t stream, uint32_t stack_id) {
  size_t free_bytes = 0, total = 0;
  (void)a->backend.ops->mem_info(a->backend.self, &free_bytes, &total);
  a->stats.num_ooms++;
  if (a->observer.on_event) {
    cs_oom_note_t note = {.device_total = total};
    cs_release_cache_figures(a, &note.cache);
    cs_trace_event_t ev = {.action = CS_TRACE_OOM, .size = requested, .stream = stream,
                           .device_free = free_bytes, .stack_id = stack_id, .addr = (uintptr_t)&note};
    a->observer.on_event(a->observer.ctx, &ev);
  }
  return -CS_ENOMEM;
}

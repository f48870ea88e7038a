/* SPDX-License-Identifier: Apache-2.0 */
/* The caching allocator's public entry points: locking, the malloc and free flows, and the
 * record-only pass-through. The algorithm itself lives in pool.c, fence.c and release.c. */
#include "allocator/allocator.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "allocator/internal.h"
#include "common/cs_assert.h"
#include "common/cs_compiler.h"
#include "common/cs_deadline.h"
#include "common/cs_error.h"
#include "common/cs_lock.h"

/* Blocks a malloc may need: one for a new segment, one for the front of a split. */
enum { CS_BLOCKS_PER_MALLOC = 2 };

/* ------------------------------------------------------------------------------------------------
 * Life cycle
 * ----------------------------------------------------------------------------------------------*/

cs_allocator_t *cs_allocator_create(const cs_alloc_conf_t *conf, const cs_backend_t *backend,
                                    const cs_allocator_observer_t *observer) {
  cs_allocator_t *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  cs_lock_init(&a->lock);
  a->conf = *conf;
  a->backend = *backend;
  if (observer) a->observer = *observer;
  cs_pool_init(&a->small, true);
  cs_pool_init(&a->large, false);
  cs_block_map_init(&a->live);
  cs_stack_live_init(&a->stack_live);
  cs_segment_index_init(&a->segment_index);
  cs_stats_init(&a->stats, cs_alloc_conf_max_split_stat(conf));
  return a;
}

void cs_allocator_destroy(cs_allocator_t *a) {
  if (!a) return;
  cs_allocator_drop_all(a, false);
  cs_block_map_destroy(&a->live);
  cs_stack_live_destroy(&a->stack_live);
  cs_segment_index_destroy(&a->segment_index);
  cs_block_slabs_free(a);
  cs_lock_destroy(&a->lock);
  free(a);
}

/* ------------------------------------------------------------------------------------------------
 * malloc
 * ----------------------------------------------------------------------------------------------*/

/* Everything a malloc may need, obtained before anything changes, so no later step can fail. */
static int cs_prepare(cs_allocator_t *a, uint32_t stack_id) {
  int err = cs_block_reserve(a, CS_BLOCKS_PER_MALLOC);
  if (!err) err = cs_block_map_reserve(&a->live, a->live.count + 1);
  return err ? err : cs_stack_live_reserve(&a->stack_live, stack_id);
}

/* Wait for the device with the lock let go (the wait can be long, and other threads must go on
 * allocating meanwhile; a thread stuck in it must not keep the lock from the process's ending),
 * then free the deferred blocks the wait covered. Blocks freed meanwhile may stay pending.
 * pre and post: the lock held, no capture underway at entry. */
static void cs_wait_device(cs_allocator_t *a) {
  cs_fence_process(a); /* parked blocks get their events, which the wait then covers */
  uint64_t covered = a->unsynced_pushed;
  cs_lock_release(&a->lock);
  (void)a->backend.ops->synchronize(a->backend.self);
  cs_lock_acquire(&a->lock);
  cs_fence_synced(a, covered);
  if (!cs_alloc_is_capturing(a)) cs_fence_reap(a);
}

/* Release the cache, then retry (PyTorch's malloc, steps 6-7). pre: no block waits for the device
 * unless the caller waited for it (cs_wait_device). */
static int cs_new_block_released(cs_allocator_t *a, const cs_request_t *r, cs_block_t **out) {
  (void)cs_release_cached(a); /* what it could not release stays cached, and the retry says */
  int rc = cs_pool_alloc_segment(a, r, true, out);
  if (rc == -CS_ENOMEM) rc = cs_release_report_oom(a, r->requested, r->stream, r->stack_id);
  return rc;
}

/* No cached block fits: obtain a new segment, releasing cached memory step by step on failure
 * (PyTorch's malloc, step 6). Returns -CS_EAGAIN where the cache is to be released while blocks
 * still wait for the device: the caller waits for it without the lock, then goes on with
 * cs_new_block_released. */
static int cs_new_block(cs_allocator_t *a, const cs_request_t *r, bool capturing, cs_block_t **out) {
  cs_release_garbage(a);
  int rc = cs_pool_alloc_segment(a, r, false, out);
  if (rc == -CS_ENOMEM && cs_release_available(a, r)) rc = cs_pool_alloc_segment(a, r, false, out);
  if (rc == -CS_ENOMEM && !capturing) return cs_fence_pending(a) ? -CS_EAGAIN : cs_new_block_released(a, r, out);
  if (rc == -CS_ENOMEM) rc = cs_release_report_oom(a, r->requested, r->stream, r->stack_id);
  return rc;
}

static int cs_cached_malloc(cs_allocator_t *a, cs_request_t *r, uintptr_t *addr) {
  bool capturing = cs_alloc_is_capturing(a);
  if (!capturing) cs_fence_process(a);
  r->size = cs_round_size(r->requested, a->conf.roundup_power2_divisions);
  bool small = cs_size_is_small(r->size);
  r->pool = small ? &a->small : &a->large;
  r->segment_size = cs_segment_size(r->size, a->conf.split_large, a->conf.ipc_small);

  cs_block_t *pred;
  cs_block_t *b = cs_pool_get_free_block(a, r, &pred);
  if (b) {
    *addr = cs_pool_alloc_cached_block(a, r, b, pred)->addr;
    return 0;
  }
  int rc = cs_new_block(a, r, capturing, &b);
  if (rc) return rc;
  *addr = cs_pool_alloc_found_block(a, r, b)->addr;
  return 0;
}

/* cs_cached_malloc stopped short of releasing the cache (-CS_EAGAIN): wait, then release and retry. */
static int cs_cached_malloc_after_wait(cs_allocator_t *a, const cs_request_t *r, uintptr_t *addr) {
  cs_wait_device(a);
  int rc = cs_prepare(a, r->stack_id); /* other threads may have used what was reserved */
  if (rc) return rc;
  cs_block_t *b;
  /* a capture begun meanwhile forbids releasing (cuMemFree) */
  if (cs_alloc_is_capturing(a)) rc = cs_release_report_oom(a, r->requested, r->stream, r->stack_id);
  else rc = cs_new_block_released(a, r, &b);
  if (rc) return rc;
  *addr = cs_pool_alloc_found_block(a, r, b)->addr;
  return 0;
}

/* Record only (CUDASNAP_CACHE=0): one segment per allocation, released at free, so the device
 * sees exactly the program's own calls while statistics and trace still see everything. */
static int cs_passthrough_malloc(cs_allocator_t *a, cs_request_t *r, uintptr_t *addr) {
  r->size = cs_round_up(r->requested, CS_MIN_BLOCK_SIZE);
  r->pool = cs_size_is_small(r->size) ? &a->small : &a->large;
  r->segment_size = r->size;
  cs_block_t *b;
  int rc = cs_pool_alloc_segment(a, r, false, &b);
  if (rc == -CS_ENOMEM) rc = cs_release_report_oom(a, r->requested, r->stream, r->stack_id);
  if (rc) return rc;
  *addr = cs_pool_alloc_found_block(a, r, b)->addr;
  return 0;
}

/* ---- the thread's last block (sync free mode) ----
 *
 * Sync mode waits for the device before a free takes its block, but only for an address this
 * allocator handed out (cs_allocator_free), which costs a lookup under the lock, taken and let go
 * once more per free. A thread mostly frees the block it allocated last: that block's address is
 * kept per thread, with the allocator and its count of segments released at the time. While no
 * segment has been released since, the address still lies in one of the allocator's segments,
 * where no memory of anyone else's can be, so a free of it may wait without the lookup. A block
 * freed meanwhile by another thread makes the free find nothing after the wait: it answers as
 * before, having waited once more. The three words are read and written by their own thread only
 * (a signal handler's hook in between at worst costs a lookup or a wait, never a result). */
typedef struct cs_last_block_s {
  const cs_allocator_t *allocator;
  uintptr_t addr;
  uint64_t releases;
} cs_last_block_t;
static CS_TLS cs_last_block_t cs_last_block;

static inline bool cs_last_block_is(const cs_allocator_t *a, uintptr_t addr) {
  return cs_last_block.addr == addr && cs_last_block.allocator == a &&
         cs_last_block.releases == atomic_load_explicit(&a->releases, memory_order_relaxed);
}

int cs_allocator_malloc(cs_allocator_t *a, size_t size, uintptr_t stream, uint32_t stack_id,
                        uintptr_t *addr) {
  if (size == 0) return -CS_EINVAL;
  cs_request_t r = {.requested = size, .stream = stream, .stack_id = stack_id};
  cs_lock_acquire(&a->lock);
  int rc = cs_prepare(a, stack_id);
  if (rc == 0) {
    if (size >= CS_MAX_REQUEST) rc = cs_release_report_oom(a, size, stream, stack_id);
    else if (a->conf.cache) {
      rc = cs_cached_malloc(a, &r, addr);
      if (rc == -CS_EAGAIN) rc = cs_cached_malloc_after_wait(a, &r, addr);
    }
    else rc = cs_passthrough_malloc(a, &r, addr);
  }
  if (rc == 0) cs_last_block = (cs_last_block_t){.allocator = a, .addr = *addr,
                                                 .releases = atomic_load_explicit(&a->releases, memory_order_relaxed)};
  cs_lock_release(&a->lock);
  return rc;
}

/* ------------------------------------------------------------------------------------------------
 * free
 * ----------------------------------------------------------------------------------------------*/

static int cs_passthrough_free(cs_allocator_t *a, cs_block_t *b) {
  cs_pool_free_block_now(a, b);
  return cs_pool_release_segment(a, b, CS_RELEASE_TO_BACKEND);
}

/* Fence mode could not fence the block just freed (too many streams): synchronize as sync mode
 * does, outside the lock, then free it and every unfenced block queued before it. A capture begun
 * meanwhile forbids the synchronization; the blocks then wait for the next one (another such
 * free's, the release before an out-of-memory retry, or the context's teardown). */
static void cs_fence_fallback(cs_allocator_t *a, uint64_t covered) {
  if (cs_alloc_is_capturing(a)) return;
  (void)a->backend.ops->synchronize(a->backend.self);
  cs_lock_acquire(&a->lock);
  cs_fence_synced(a, covered);
  cs_lock_release(&a->lock);
}

int cs_allocator_free(cs_allocator_t *a, uintptr_t addr) {
  int sync_status = 0;
  /* Sync mode waits before taking the block, with the lock let go: the wait can be long (running
   * kernels), and other threads must go on allocating meanwhile. Only for an address this
   * allocator handed out: the driver's free of stream-ordered or pool memory waits for nothing. */
  if (a->conf.cache && a->conf.free_mode == CS_FREE_SYNC && !cs_alloc_is_capturing(a)) {
    if (cs_last_block_is(a, addr)) cs_last_block.addr = 0;
    else if (!cs_allocator_owns(a, addr)) return -CS_EINVAL;
    sync_status = a->backend.ops->synchronize(a->backend.self);
  }

  cs_lock_acquire(&a->lock);
  cs_block_t *b = cs_block_map_remove(&a->live, addr); /* NULL: freed by another thread meanwhile */
  int rc = -CS_EINVAL;
  bool unfenced = false;
  if (b) {
    cs_pool_free_request(a, b);
    if (!a->conf.cache) rc = cs_passthrough_free(a, b);
    else {
      rc = sync_status > 0 ? sync_status : 0;
      if (a->conf.free_mode == CS_FREE_STREAM) cs_pool_free_block_now(a, b);
      else if (cs_alloc_is_capturing(a)) cs_fence_park(a, b);
      else if (a->conf.free_mode == CS_FREE_SYNC) cs_pool_free_block_now(a, b);
      else unfenced = !cs_fence_block(a, b);
    }
  }
  uint64_t covered = a->unsynced_pushed;
  cs_lock_release(&a->lock);
  if (unfenced) cs_fence_fallback(a, covered);
  return rc;
}

bool cs_allocator_owns(cs_allocator_t *a, uintptr_t addr) {
  cs_lock_acquire(&a->lock);
  bool owned = cs_block_map_find(&a->live, addr) != NULL;
  cs_lock_release(&a->lock);
  return owned;
}

/* ------------------------------------------------------------------------------------------------
 * Cache control and state
 * ----------------------------------------------------------------------------------------------*/

int cs_allocator_empty_cache(cs_allocator_t *a) {
  cs_lock_acquire(&a->lock);
  if (!cs_alloc_is_capturing(a) && cs_fence_pending(a)) cs_wait_device(a);
  int rc = cs_alloc_is_capturing(a) ? 0 : cs_release_cached(a);
  cs_lock_release(&a->lock);
  return rc;
}

/* Whole segments that hold no live block: what an empty_cache gives back to the device (pending
 * blocks included, since it waits for them first). Free fragments of a segment that still holds a
 * live block are not counted: no allocation of the driver's could use them. */
static size_t cs_releasable_locked(const cs_allocator_t *a) {
  size_t bytes = 0;
  for (const cs_segment_t *s = a->segments; s; s = s->next) {
    const cs_block_t *b = s->first;
    while (b && cs_block_state(b) != CS_BLOCK_ALLOCATED) b = b->next;
    if (!b) bytes += s->size;
  }
  return bytes;
}

size_t cs_allocator_releasable_bytes(cs_allocator_t *a) {
  cs_lock_acquire(&a->lock);
  size_t bytes = cs_releasable_locked(a);
  cs_lock_release(&a->lock);
  return bytes;
}

/* The segment holding addr, or NULL. pre: the lock is held. */
static const cs_segment_t *cs_segment_at_locked(const cs_allocator_t *a, uintptr_t addr) {
  return cs_segment_index_find(&a->segment_index, addr);
}

bool cs_allocator_find_segment(cs_allocator_t *a, uintptr_t addr, uintptr_t *base) {
  cs_lock_acquire(&a->lock);
  const cs_segment_t *s = cs_segment_at_locked(a, addr);
  if (s && base) *base = s->addr;
  cs_lock_release(&a->lock);
  return s != NULL;
}

bool cs_allocator_find_block(cs_allocator_t *a, uintptr_t addr, uintptr_t *segment, uintptr_t *block) {
  cs_lock_acquire(&a->lock);
  const cs_segment_t *s = cs_segment_at_locked(a, addr);
  const cs_block_t *b = s ? s->first : NULL;
  while (b && !(b->addr <= addr && addr < b->addr + cs_block_size(b))) b = b->next;
  if (s) *segment = s->addr;
  if (s) *block = b ? b->addr : s->addr;
  cs_lock_release(&a->lock);
  return s != NULL;
}

int cs_allocator_mem_info(cs_allocator_t *a, bool adjusted, size_t *free_bytes, size_t *total_bytes) {
  cs_lock_acquire(&a->lock);
  int rc = a->backend.ops->mem_info(a->backend.self, free_bytes, total_bytes);
  size_t cached = cs_releasable_locked(a);
  cs_lock_release(&a->lock);
  if (rc == 0 && adjusted && *free_bytes <= *total_bytes) {
    size_t room = *total_bytes - *free_bytes;
    *free_bytes += cached < room ? cached : room;
  }
  return rc;
}

/* Free every block the program still holds, as if it had called free, then release every
 * segment, to the backend only while the context exists. */
void cs_allocator_drop_all(cs_allocator_t *a, bool context_alive) {
  cs_lock_acquire(&a->lock);
  cs_fence_drop_all(a, context_alive);
  for (cs_segment_t *s = a->segments; s; s = s->next) {
    for (cs_block_t *b = s->first; b; b = b->next) {
      if (cs_block_state(b) != CS_BLOCK_ALLOCATED) continue;
      cs_block_map_remove(&a->live, b->addr);
      cs_pool_free_request(a, b);
      cs_pool_free_block(a, b); /* may merge neighbours into b; b stays valid */
    }
  }
  while (a->segments) {
    cs_block_t *whole = a->segments->first;
    cs_assert(cs_block_state(whole) == CS_BLOCK_FREE && !cs_block_is_split(whole));
    /* reported released once, whatever the backend says: the context is going */
    (void)cs_pool_release_segment(a, whole, context_alive ? CS_RELEASE_OR_FORGET : CS_RELEASE_FORGET);
  }
  cs_assert(a->live.count == 0);
  a->gc_limit = 0;
  cs_lock_release(&a->lock);
}

void cs_allocator_prefork(cs_allocator_t *a) { cs_lock_acquire(&a->lock); }

void cs_allocator_postfork(cs_allocator_t *a, bool child) {
  if (child) cs_lock_init(&a->lock);
  else cs_lock_release(&a->lock);
}

void cs_allocator_get_stats(cs_allocator_t *a, cs_stats_t *out) {
  cs_lock_acquire(&a->lock);
  *out = a->stats;
  cs_lock_release(&a->lock);
}

void cs_allocator_cache_figures(cs_allocator_t *a, cs_cache_figures_t *out) {
  cs_lock_acquire(&a->lock);
  cs_release_cache_figures(a, out);
  cs_lock_release(&a->lock);
}

void cs_allocator_reset_peak_stats(cs_allocator_t *a) {
  cs_lock_acquire(&a->lock);
  cs_stats_reset_peak(&a->stats);
  cs_lock_release(&a->lock);
}

void cs_allocator_reset_accumulated_stats(cs_allocator_t *a) {
  cs_lock_acquire(&a->lock);
  cs_stats_reset_accumulated(&a->stats);
  cs_lock_release(&a->lock);
}

void cs_allocator_lock(cs_allocator_t *a) { cs_lock_acquire(&a->lock); }
void cs_allocator_unlock(cs_allocator_t *a) { cs_lock_release(&a->lock); }
bool cs_allocator_trylock(cs_allocator_t *a) { return cs_lock_try(&a->lock); }

bool cs_allocator_lock_by(cs_allocator_t *a, uint64_t deadline_ns) {
  for (;;) {
    if (cs_lock_try(&a->lock)) return true;
    if (cs_deadline_now_ns() >= deadline_ns) return false;
    cs_deadline_pause();
  }
}

void cs_allocator_get_stats_locked(cs_allocator_t *a, cs_stats_t *out) { *out = a->stats; }

size_t cs_allocator_stack_live_locked(cs_allocator_t *a, size_t page, cs_stack_live_t out[CS_STACK_LIVE_PAGE]) {
  return cs_stack_live_copy_page(&a->stack_live, page, out);
}

void cs_allocator_visit_locked(cs_allocator_t *a, cs_allocator_visit_fn visit, void *ctx) {
  for (cs_segment_t *s = a->segments; s; s = s->next) {
    cs_segment_info_t seg = {.addr = s->addr, .size = s->size, .stream = s->stream,
                             .small = s->small, .stack_id = s->stack_id};
    for (cs_block_t *b = s->first; b; b = b->next) {
      cs_block_info_t blk = {.addr = b->addr, .size = cs_block_size(b),
                             .requested = cs_block_requested(b), .state = cs_block_state(b),
                             .stack_id = cs_block_stack_id(b)};
      visit(ctx, &seg, &blk);
    }
  }
}

void cs_allocator_visit(cs_allocator_t *a, cs_allocator_visit_fn visit, void *ctx) {
  cs_lock_acquire(&a->lock);
  cs_allocator_visit_locked(a, visit, ctx);
  cs_lock_release(&a->lock);
}

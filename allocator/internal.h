/* SPDX-License-Identifier: Apache-2.0 */
/* Internal state of the caching allocator, shared by its .c files. Not for other layers.
 *
 * Locking: every field below `lock` is protected by it. Functions named cs_pool_*, cs_fence_* and
 * cs_release_* expect the lock held. */
#ifndef CS_ALLOCATOR_INTERNAL_H
#define CS_ALLOCATOR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "allocator/allocator.h"
#include "allocator/block.h"
#include "allocator/block_map.h"
#include "allocator/free_set.h"
#include "allocator/segment_index.h"
#include "allocator/size_class.h"
#include "allocator/stack_live.h"
#include "common/cs_lock.h"

/* Free blocks of one size class (small or large), ordered by (stream, size, address): a best fit
 * is the first block not less than (stream, request, 0). */
typedef struct cs_pool_s {
  cs_free_set_t free;
  uint64_t lookups; /* free-block look-ups while GC is on: the clock for block ages */
  bool small;
} cs_pool_t;

/* A FIFO of blocks linked through u.held.next_pending. */
typedef struct cs_block_queue_s {
  cs_block_t *head;
  cs_block_t *tail;
} cs_block_queue_t;

/* Idle backend events, reused across fences. */
typedef struct cs_event_cache_s {
  uintptr_t *events;
  size_t count;
  size_t capacity;
} cs_event_cache_t;

/* One allocation request on its way through malloc. */
typedef struct cs_request_s {
  size_t requested;     /* bytes asked for */
  size_t size;          /* rounded block size */
  size_t segment_size;  /* bytes to obtain from the backend if no cached block fits */
  uintptr_t stream;
  uint32_t stack_id;
  cs_pool_t *pool;
} cs_request_t;

struct cs_allocator_s {
  cs_lock_t lock;
  cs_alloc_conf_t conf;
  cs_backend_t backend;
  cs_allocator_observer_t observer;

  cs_pool_t small;
  cs_pool_t large;
  cs_block_map_t live;        /* ALLOCATED blocks by address */
  cs_stack_live_table_t stack_live; /* the same, counted by stack id (the live record's sites) */
  cs_segment_t *segments;     /* every segment, newest first */
  cs_segment_index_t segment_index; /* the same, by address */
  cs_block_queue_t fenced;    /* PENDING blocks waiting for their fence, in free order */
  cs_block_queue_t parked;    /* PENDING blocks freed during a capture, not yet fenced */
  cs_block_queue_t unsynced;  /* PENDING blocks that could not be fenced: free after a sync */
  uint64_t unsynced_pushed;   /* blocks ever queued in unsynced (a synchronization's ticket) */
  uint64_t unsynced_popped;   /* blocks ever freed from unsynced */
  cs_event_cache_t idle_events;
  cs_stats_t stats;
  size_t gc_limit;            /* reserved bytes above which GC runs; 0 = not computed yet */

  _Atomic uint64_t releases;  /* segments released or forgotten (allocator.c: the thread's last block) */

  cs_block_t *spare_blocks;   /* recycled block structs, linked through u.held.next_pending */
  size_t spare_count;
  void *slabs;                /* every slab of block structs, for destroy */
};

/* ---- helpers shared by the allocator's files ---- */

static inline bool cs_alloc_is_capturing(cs_allocator_t *a) {
  return a->backend.ops->is_capturing(a->backend.self);
}

static inline cs_pool_t *cs_pool_of(cs_allocator_t *a, const cs_block_t *b) {
  return cs_block_small(b) ? &a->small : &a->large;
}

/* Events go to the observer from the part that makes them (pool.c), under the lock, so that
 * the parts never call back up into allocator.c. */
static inline void cs_emit_event(cs_allocator_t *a, const cs_trace_event_t *event) {
  if (a->observer.on_event) a->observer.on_event(a->observer.ctx, event);
}

static inline void cs_emit(cs_allocator_t *a, cs_trace_action_t action, uintptr_t addr,
                           size_t size, uintptr_t stream, uint32_t stack_id) {
  cs_trace_event_t ev = {.action = action, .addr = addr, .size = size, .stream = stream,
                         .stack_id = stack_id};
  cs_emit_event(a, &ev);
}

/* block structs (pool.c) */
int cs_block_reserve(cs_allocator_t *a, size_t n);
cs_block_t *cs_block_take(cs_allocator_t *a);
void cs_block_give(cs_allocator_t *a, cs_block_t *b);
void cs_block_slabs_free(cs_allocator_t *a);

/* pools (pool.c) */
void cs_pool_init(cs_pool_t *pool, bool small);
void cs_pool_insert(cs_allocator_t *a, cs_block_t *b);
void cs_pool_remove(cs_allocator_t *a, cs_block_t *b);
cs_block_t *cs_pool_get_free_block(cs_allocator_t *a, const cs_request_t *r, cs_block_t **pred);
int cs_pool_alloc_segment(cs_allocator_t *a, const cs_request_t *r, bool is_retry, cs_block_t **out);
/* How cs_pool_release_segment lets a segment go. */
typedef enum cs_segment_release_e {
  CS_RELEASE_TO_BACKEND,   /* the backend frees it; if it refuses, the segment stays cached */
  CS_RELEASE_OR_FORGET,    /* the backend frees it; if it refuses, it is forgotten all the same
                              (the context is about to go, and takes it along) */
  CS_RELEASE_FORGET,       /* no backend call: the context is gone */
} cs_segment_release_t;
int cs_pool_release_segment(cs_allocator_t *a, cs_block_t *b, cs_segment_release_t how);
cs_block_t *cs_pool_alloc_cached_block(cs_allocator_t *a, const cs_request_t *r, cs_block_t *b,
                                       const cs_block_t *pred);
cs_block_t *cs_pool_alloc_found_block(cs_allocator_t *a, const cs_request_t *r, cs_block_t *b);
void cs_pool_free_request(cs_allocator_t *a, cs_block_t *b);
void cs_pool_free_block(cs_allocator_t *a, cs_block_t *b);
/* The same, in the call that requested the free (its free_completed says so). */
void cs_pool_free_block_now(cs_allocator_t *a, cs_block_t *b);
cs_block_t *cs_pool_first(cs_pool_t *pool);
cs_block_t *cs_pool_last(cs_pool_t *pool);
cs_block_t *cs_pool_next(cs_block_t *b);
cs_block_t *cs_pool_prev(cs_block_t *b);
cs_block_t *cs_pool_lower_bound(cs_pool_t *pool, uintptr_t stream, size_t size);

/* deferred frees (fence.c) */
/* Fences b, or queues it in `unsynced` and returns false: the caller then synchronizes once it
 * has let go of the lock and calls cs_fence_synced with the unsynced_pushed it saw. */
bool cs_fence_block(cs_allocator_t *a, cs_block_t *b);
void cs_fence_synced(cs_allocator_t *a, uint64_t covered);
void cs_fence_park(cs_allocator_t *a, cs_block_t *b);
void cs_fence_process(cs_allocator_t *a);
void cs_fence_reap(cs_allocator_t *a);
/* Are blocks waiting for the device (fenced, parked or unsynced)? */
bool cs_fence_pending(const cs_allocator_t *a);
void cs_fence_drop_all(cs_allocator_t *a, bool context_alive);

/* releasing memory (release.c) */
/* pre: the device was waited for since the last free (cs_fence_pending false, or the caller
 * synchronized and freed what that covered): blocks still pending stay. */
int cs_release_cached(cs_allocator_t *a);
bool cs_release_available(cs_allocator_t *a, const cs_request_t *r);
void cs_release_garbage(cs_allocator_t *a);
int cs_release_report_oom(cs_allocator_t *a, size_t requested, uintptr_t stream, uint32_t stack_id);
/* The cache's figures for an OOM's answer. pre: lock held. */
void cs_release_cache_figures(cs_allocator_t *a, cs_cache_figures_t *out);

#endif

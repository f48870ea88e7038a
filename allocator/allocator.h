/* SPDX-License-Identifier: Apache-2.0 */
/* cs_allocator_t: the caching allocator of one device context.
 *
 * PyTorch's CUDACachingAllocator algorithm (snapshot-format.md section 6) with cudasnap's
 * policies (docs/design.md section 3): small requests (<= 1 MiB) are carved from 2 MiB segments;
 * large requests get a segment of their own that is reused only whole (IPC-safe default) or, with
 * split_large, PyTorch's full large pool; best fit on (stream, size, address); split and merge;
 * max_split_size; roundup_power2_divisions; garbage_collection_threshold; on failure release the
 * cache and retry, then report out of memory. Statistics follow torch.cuda.memory_stats().
 *
 * Free modes decide when a freed block becomes reusable:
 *   sync    after the synchronization cudaFree would have done; its error is returned by free;
 *   fence   once events recorded at free time on every fence stream have completed;
 *   stream  at once (PyTorch semantics: reuse is ordered on the block's own stream).
 * While any stream capture is underway the allocator never synchronizes, records or queries an
 * event: freed blocks are parked until the capture ends, then fenced.
 *
 * Thread-safety: every function may be called from any thread; one mutex per allocator. Observer
 * callbacks run with that mutex held. No function performs I/O. The only allocations are block
 * and table growth, amortized O(1) per call. */
#ifndef CS_ALLOCATOR_H
#define CS_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocator/backend.h"
#include "allocator/block.h"
#include "allocator/stack_live.h"
#include "common/cs_alloc_conf.h"
#include "stats/stats.h"

typedef struct cs_allocator_s cs_allocator_t;

/* Trace events, named after the memory_viz actions they become. */
typedef enum cs_trace_action_e {
  CS_TRACE_ALLOC = 0,          /* a block was handed out */
  CS_TRACE_FREE_REQUESTED = 1, /* the program freed it */
  CS_TRACE_FREE_COMPLETED = 2, /* it became reusable */
  CS_TRACE_SEGMENT_ALLOC = 3,  /* a device segment was obtained */
  CS_TRACE_SEGMENT_FREE = 4,   /* a device segment was released (reported before the release;
                                  followed at once by a SEGMENT_ALLOC of the same segment when the
                                  backend refused to free it and it stays cached) */
  CS_TRACE_OOM = 5,            /* an allocation failed; device_free holds the free bytes */
} cs_trace_action_t;

/* The cache at an out-of-memory answer (CS_TRACE_OOM), what that answer is built from later,
 * when the blocks of the moment are gone (docs/snapshots.md, "The out-of-memory answer"). */
typedef struct cs_cache_figures_s {
  uint64_t reserved;     /* bytes of the segments */
  uint64_t allocated;    /* bytes of the blocks that are not free (handed out, or freed and waiting
                            for the device): active_bytes */
  uint64_t largest_free; /* the largest free block */
  uint64_t small_free;   /* free bytes of the small pool (2 MiB segments shared by requests of at
                            most 1 MiB) */
} cs_cache_figures_t;

/* What an OOM event carries besides the answer (CS_TRACE_OOM only). */
typedef struct cs_oom_note_s {
  cs_cache_figures_t cache; /* the cache as it answered */
  size_t device_total;      /* the device's total bytes (0: the driver did not say) */
} cs_oom_note_t;

typedef struct cs_trace_event_s {
  cs_trace_action_t action;
  uintptr_t addr;     /* block or segment address; for OOM, the address of its cs_oom_note_t (0:
                         none), so that the events built on the hot path stay the size they were */
  size_t size;        /* requested bytes for block events, segment bytes for segment events,
                         the request for OOM */
  uintptr_t stream;
  size_t device_free; /* OOM only */
  uint32_t stack_id;  /* the allocation's stack (block and segment events), else the caller's */
  bool completes_now; /* FREE_COMPLETED only: in the very call that requested the free (sync and
                         stream modes, record-only), so at the request's moment */
} cs_trace_event_t;

/* Receives every trace event in state order. Called with the allocator's lock held: it must be
 * quick, must not block and must not call back into this allocator. */
typedef struct cs_allocator_observer_s {
  void (*on_event)(void *ctx, const cs_trace_event_t *event);
  void *ctx;
} cs_allocator_observer_t;

/* Create an allocator for one device context. conf and backend are copied; backend->self must
 * outlive the allocator. observer may be NULL. Returns NULL when host memory is exhausted. */
cs_allocator_t *cs_allocator_create(const cs_alloc_conf_t *conf, const cs_backend_t *backend,
                                    const cs_allocator_observer_t *observer);

/* Forget everything without calling the backend (the context is gone), then free the allocator. */
void cs_allocator_destroy(cs_allocator_t *a);

/* Allocate `size` bytes for use on `stream`. stack_id is the caller's interned stack (0 = none).
 * Returns 0 and *addr, -CS_EINVAL for size 0, -CS_ENOMEM when the device is out of memory after
 * releasing the cache, -CS_EHOSTMEM when cudasnap's metadata could not grow, or the backend's
 * positive status for any other backend failure. */
int cs_allocator_malloc(cs_allocator_t *a, size_t size, uintptr_t stream, uint32_t stack_id,
                        uintptr_t *addr);

/* Free a block returned by cs_allocator_malloc. Returns 0, -CS_EINVAL when addr is not a block
 * this allocator handed out and still holds (never allocated, or freed already: nothing changes),
 * or in sync mode the positive status of the synchronization (the block is freed all the same,
 * as the error belongs to earlier work). */
int cs_allocator_free(cs_allocator_t *a, uintptr_t addr);

/* Is addr the start of a block this allocator has handed out and not yet had freed? */
bool cs_allocator_owns(cs_allocator_t *a, uintptr_t addr);

/* torch.cuda.empty_cache(): wait for pending frees, then release every cached segment that holds
 * no live block. Returns 0 or the backend's first refusal: a segment the backend refuses to free
 * stays cached (its segment_free event is followed by a segment_alloc that takes it back). Does
 * nothing while a capture is underway. */
int cs_allocator_empty_cache(cs_allocator_t *a);

/* Bytes of the segments that hold no live block (free or waiting for the device): what
 * cs_allocator_empty_cache would give back, and so what cuMemGetInfo adds to the device's free
 * bytes. Free fragments of a segment that still holds a live block are not counted: no other
 * allocation could get them. O(blocks): for queries, not the hot path. */
size_t cs_allocator_releasable_bytes(cs_allocator_t *a);

/* Is addr inside one of this allocator's segments (whatever the state of its block)? Sets *base to
 * the segment's start. O(segments): for error paths and IPC checks, not the hot path. */
bool cs_allocator_find_segment(cs_allocator_t *a, uintptr_t addr, uintptr_t *base);

/* cs_allocator_find_segment, also giving the start of the block (in any state) that holds addr. */
bool cs_allocator_find_block(cs_allocator_t *a, uintptr_t addr, uintptr_t *segment, uintptr_t *block);

/* The device's free and total bytes from the backend; with `adjusted`, cs_allocator_releasable_bytes
 * is counted as free (never above total). Returns 0 or the backend's status. */
int cs_allocator_mem_info(cs_allocator_t *a, bool adjusted, size_t *free_bytes, size_t *total_bytes);

/* The context is about to be reset or destroyed, or is gone. Drop every block and segment,
 * reporting live blocks as freed and each segment as released once, so statistics and trace stay
 * consistent; if context_alive, each segment is given to the backend first (a refusal is ignored:
 * the context takes the memory along). The allocator stays usable. */
void cs_allocator_drop_all(cs_allocator_t *a, bool context_alive);

/* fork: take the lock before, release it after in the parent, and make it usable in the child
 * (where the thread that held it may not exist). */
void cs_allocator_prefork(cs_allocator_t *a);
void cs_allocator_postfork(cs_allocator_t *a, bool child);

/* Copies and resets of the statistics (memory_stats, reset_peak_memory_stats,
 * reset_accumulated_memory_stats). */
void cs_allocator_get_stats(cs_allocator_t *a, cs_stats_t *out);

/* The cache's figures now (an OOM's, for an answer the program got past the cache). Takes the
 * lock; O(free blocks). */
void cs_allocator_cache_figures(cs_allocator_t *a, cs_cache_figures_t *out);
void cs_allocator_reset_peak_stats(cs_allocator_t *a);
void cs_allocator_reset_accumulated_stats(cs_allocator_t *a);

/* Walk every segment and, within it, every block in address order, under the lock (snapshots).
 * The callback must not call back into the allocator. */
typedef struct cs_block_info_s {
  uintptr_t addr;
  size_t size;
  size_t requested;        /* 0 for free blocks */
  cs_block_state_t state;
  uint32_t stack_id;
} cs_block_info_t;

typedef struct cs_segment_info_s {
  uintptr_t addr;
  size_t size;
  uintptr_t stream;
  bool small;
  uint32_t stack_id;
} cs_segment_info_t;

typedef void (*cs_allocator_visit_fn)(void *ctx, const cs_segment_info_t *segment,
                                      const cs_block_info_t *block);

void cs_allocator_visit(cs_allocator_t *a, cs_allocator_visit_fn visit, void *ctx);

/* For snapshots that must be consistent across several allocators and the event history: hold
 * every allocator's lock (cs_allocator_lock, in one fixed order), copy, release. While held, the
 * allocator neither changes nor emits events. cs_allocator_visit_locked is cs_allocator_visit with
 * the lock already held, and cs_allocator_get_stats_locked likewise. */
void cs_allocator_lock(cs_allocator_t *a);
void cs_allocator_unlock(cs_allocator_t *a);
/* The lock if it is free now: true when taken. For a caller that must not wait without bound (a
 * snapshot as the process ends, when the lock's holder may never run again). */
bool cs_allocator_trylock(cs_allocator_t *a);
/* The lock, tried every millisecond until deadline_ns (CLOCK_MONOTONIC, common/cs_deadline.h):
 * true when taken. For the snapshot and the live record, whose wait must stay bounded. */
bool cs_allocator_lock_by(cs_allocator_t *a, uint64_t deadline_ns);
void cs_allocator_visit_locked(cs_allocator_t *a, cs_allocator_visit_fn visit, void *ctx);
void cs_allocator_get_stats_locked(cs_allocator_t *a, cs_stats_t *out);

/* The ALLOCATED blocks and their requested bytes by stack id, as a walk with
 * cs_allocator_visit_locked would count them, kept as blocks come and go (allocator/stack_live.h):
 * the counts of ids [page * CS_STACK_LIVE_PAGE, (page + 1) * CS_STACK_LIVE_PAGE) into out, a copy
 * of that size whatever the number of blocks, for the live record, which holds the lock for one
 * page at a time. Returns the number of pages: ids from pages * CS_STACK_LIVE_PAGE on have no
 * block. pre: the lock is held. */
size_t cs_allocator_stack_live_locked(cs_allocator_t *a, size_t page, cs_stack_live_t out[CS_STACK_LIVE_PAGE]);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Deferred frees: blocks the program has freed that must not be reused yet.
 *
 * fence mode records one event per fence stream at free time; the block becomes reusable once all
 * of them have completed, checked (without waiting) at the next allocation. Blocks freed while a
 * stream capture is underway are parked instead, because recording or querying an event then would
 * add a node to the captured graph or invalidate the capture; they are fenced once no capture is
 * underway. A block that cannot be fenced (more fence streams than CS_FENCE_MAX_STREAMS, no host
 * memory, a backend failure) waits in `unsynced` for a synchronization, which its free performs
 * once it has let go of the lock (cs_fence_synced), as sync mode does: the wait can be long and
 * other threads must go on allocating meanwhile. When memory runs short, or the cache is
 * emptied, the allocator likewise waits for the device with its lock let go, then frees what the
 * wait covered (PyTorch's synchronize_and_free_events, which waits under its lock). */
#include <stdlib.h>

#include "allocator/internal.h"
#include "common/cs_assert.h"
#include "common/cs_error.h"

/* More fence streams than this and the free falls back to a synchronization. */
enum { CS_FENCE_MAX_STREAMS = 64 };

struct cs_fence_s {
  size_t count;     /* events recorded */
  size_t completed; /* events[0 .. completed) have been seen complete */
  uintptr_t events[];
};

/* ---- block queues ---- */

static void cs_queue_push(cs_block_queue_t *q, cs_block_t *b) {
  b->u.held.next_pending = NULL;
  if (q->tail) q->tail->u.held.next_pending = b;
  else q->head = b;
  q->tail = b;
}

static cs_block_t *cs_queue_pop(cs_block_queue_t *q) {
  cs_block_t *b = q->head;
  if (!b) return NULL;
  q->head = b->u.held.next_pending;
  if (!q->head) q->tail = NULL;
  return b;
}

/* ---- the event cache ---- */

static int cs_event_get(cs_allocator_t *a, uintptr_t *event) {
  cs_event_cache_t *c = &a->idle_events;
  if (c->count > 0) {
    *event = c->events[--c->count];
    return 0;
  }
  return a->backend.ops->event_create(a->backend.self, event);
}

static void cs_event_put(cs_allocator_t *a, uintptr_t event) {
  cs_event_cache_t *c = &a->idle_events;
  if (c->count == c->capacity) {
    size_t capacity = c->capacity ? 2 * c->capacity : 16;
    uintptr_t *grown = realloc(c->events, capacity * sizeof *grown);
    if (!grown) { /* cannot keep it: give it back to the backend */
      a->backend.ops->event_destroy(a->backend.self, event);
      return;
    }
    c->events = grown;
    c->capacity = capacity;
  }
  c->events[c->count++] = event;
}

static void cs_event_cache_clear(cs_allocator_t *a, bool context_alive) {
  cs_event_cache_t *c = &a->idle_events;
  if (context_alive)
    for (size_t i = 0; i < c->count; i++) a->backend.ops->event_destroy(a->backend.self, c->events[i]);
  free(c->events);
  *c = (cs_event_cache_t){0};
}

static void cs_fence_release(cs_allocator_t *a, cs_fence_t *f, bool context_alive) {
  if (!f) return;
  for (size_t i = 0; i < f->count; i++) {
    if (context_alive) cs_event_put(a, f->events[i]);
  }
  free(f);
}

/* ---- fencing ---- */

/* Record an event on every fence stream. Returns NULL when that is impossible (too many streams,
 * no host memory, a backend failure); the caller then synchronizes instead. */
static cs_fence_t *cs_fence_record(cs_allocator_t *a) {
  uintptr_t streams[CS_FENCE_MAX_STREAMS];
  size_t n = a->backend.ops->fence_streams(a->backend.self, streams, CS_FENCE_MAX_STREAMS);
  if (n > CS_FENCE_MAX_STREAMS) return NULL;
  cs_fence_t *f = malloc(sizeof *f + n * sizeof f->events[0]);
  if (!f) return NULL;
  f->count = 0;
  f->completed = 0;
  for (size_t i = 0; i < n; i++) {
    uintptr_t event;
    if (cs_event_get(a, &event) != 0) break;
    if (a->backend.ops->event_record(a->backend.self, event, streams[i]) != 0) {
      cs_event_put(a, event);
      break;
    }
    f->events[f->count++] = event;
  }
  if (f->count < n) {
    cs_fence_release(a, f, true);
    return NULL;
  }
  return f;
}

/* pre: b is PENDING and in no queue; no capture is underway. */
bool cs_fence_block(cs_allocator_t *a, cs_block_t *b) {
  cs_fence_t *f = cs_fence_record(a);
  if (!f) {
    /* Correct but slower: what cudaFree itself would have done, once the lock is let go. */
    b->u.held.fence = NULL;
    cs_queue_push(&a->unsynced, b);
    a->unsynced_pushed++;
    return false;
  }
  b->u.held.fence = f;
  cs_queue_push(&a->fenced, b);
  return true;
}

/* A synchronization begun when unsynced_pushed was `covered` has completed: free the unfenced
 * blocks queued before it. Blocks queued after it began may still be in use; they wait for the
 * next one. */
void cs_fence_synced(cs_allocator_t *a, uint64_t covered) {
  while (a->unsynced_popped < covered) {
    cs_block_t *b = cs_queue_pop(&a->unsynced);
    cs_assert(b);
    a->unsynced_popped++;
    cs_pool_free_block(a, b);
  }
}

void cs_fence_park(cs_allocator_t *a, cs_block_t *b) {
  b->u.held.fence = NULL;
  cs_queue_push(&a->parked, b);
}

/* Have all of the fence's events completed? Asks only about events not yet seen complete. An
 * event whose query fails counts as complete: the context is broken and the failure reaches the
 * program through its own calls. */
static bool cs_fence_done(cs_allocator_t *a, cs_fence_t *f) {
  while (f->completed < f->count) {
    int rc = a->backend.ops->event_query(a->backend.self, f->events[f->completed]);
    if (rc == -CS_EAGAIN) return false;
    f->completed++;
  }
  return true;
}

/* Free the fenced blocks whose events have completed. Stops at the first incomplete fence: later
 * fences were recorded after it, so one driver query per call is the most spent on waiting
 * blocks. pre: no capture is underway. */
void cs_fence_reap(cs_allocator_t *a) {
  cs_block_t *b;
  while ((b = a->fenced.head) && cs_fence_done(a, b->u.held.fence)) {
    cs_queue_pop(&a->fenced);
    cs_fence_release(a, b->u.held.fence, true);
    cs_pool_free_block(a, b);
  }
}

/* Fence the parked blocks, then free what has completed. pre: no capture is underway. */
void cs_fence_process(cs_allocator_t *a) {
  cs_block_t *b;
  while ((b = cs_queue_pop(&a->parked))) (void)cs_fence_block(a, b);
  cs_fence_reap(a);
}

bool cs_fence_pending(const cs_allocator_t *a) {
  return a->fenced.head || a->parked.head || a->unsynced.head;
}

/* The context is going away: free every deferred block without waiting, and forget the events
 * (destroying them only while the context still exists). */
void cs_fence_drop_all(cs_allocator_t *a, bool context_alive) {
  cs_block_t *b;
  while ((b = cs_queue_pop(&a->fenced))) {
    cs_fence_release(a, b->u.held.fence, context_alive);
    cs_pool_free_block(a, b);
  }
  while ((b = cs_queue_pop(&a->parked))) cs_pool_free_block(a, b);
  cs_fence_synced(a, a->unsynced_pushed);
  cs_event_cache_clear(a, context_alive);
}

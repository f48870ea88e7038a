#include "interpose/streams.h"

#include <pthread.h>
#include <stdlib.h>

#include "interpose/cuda_api.h"

atomic_int cs_streams_capturing;

typedef struct cs_stream_entry_s {
  uintptr_t stream;
  uintptr_t ctx;
} cs_stream_entry_t;

/* A small set each: programs have tens of streams, not thousands. */
typedef struct cs_stream_set_s {
  cs_stream_entry_t *items;
  size_t count;
  size_t capacity;
} cs_stream_set_t;

static pthread_mutex_t cs_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_stream_set_t cs_nonblocking;
static cs_stream_set_t cs_capturing;

static void cs_set_add(cs_stream_set_t *set, uintptr_t stream, uintptr_t ctx) {
  if (set->count == set->capacity) {
    size_t capacity = set->capacity ? 2 * set->capacity : 16;
    cs_stream_entry_t *grown = realloc(set->items, capacity * sizeof *grown);
    if (!grown) return; /* unknown stream: its fence falls back to a synchronization */
    set->items = grown;
    set->capacity = capacity;
  }
  set->items[set->count++] = (cs_stream_entry_t){stream, ctx};
}

static bool cs_set_remove(cs_stream_set_t *set, uintptr_t stream) {
  for (size_t i = 0; i < set->count; i++) {
    if (set->items[i].stream != stream) continue;
    set->items[i] = set->items[--set->count];
    return true;
  }
  return false;
}

void cs_streams_created(uintptr_t stream, uintptr_t ctx, unsigned flags) {
  /* Blocking streams are ordered by the legacy stream's event; only non-blocking ones need their
   * own (interposition.md section 7.2). */
  if (!(flags & CU_STREAM_NON_BLOCKING)) return;
  pthread_mutex_lock(&cs_streams_lock);
  cs_set_add(&cs_nonblocking, stream, ctx);
  pthread_mutex_unlock(&cs_streams_lock);
}

void cs_streams_destroyed(uintptr_t stream) {
  pthread_mutex_lock(&cs_streams_lock);
  cs_set_remove(&cs_nonblocking, stream);
  pthread_mutex_unlock(&cs_streams_lock);
}

void cs_streams_capture_began(uintptr_t stream) {
  pthread_mutex_lock(&cs_streams_lock);
  cs_set_add(&cs_capturing, stream, 0);
  atomic_store_explicit(&cs_streams_capturing, (int)cs_capturing.count, memory_order_release);
  pthread_mutex_unlock(&cs_streams_lock);
}

void cs_streams_capture_ended(uintptr_t stream) {
  pthread_mutex_lock(&cs_streams_lock);
  cs_set_remove(&cs_capturing, stream);
  atomic_store_explicit(&cs_streams_capturing, (int)cs_capturing.count, memory_order_release);
  pthread_mutex_unlock(&cs_streams_lock);
}

size_t cs_streams_fence_set(uintptr_t ctx, uintptr_t *out, size_t cap) {
  size_t n = 0;
  if (cap > 0) out[0] = (uintptr_t)CU_STREAM_LEGACY;
  n++;
  pthread_mutex_lock(&cs_streams_lock);
  for (size_t i = 0; i < cs_nonblocking.count; i++) {
    if (cs_nonblocking.items[i].ctx != ctx) continue;
    if (n < cap) out[n] = cs_nonblocking.items[i].stream;
    n++;
  }
  pthread_mutex_unlock(&cs_streams_lock);
  return n;
}

void cs_streams_prefork(void) { pthread_mutex_lock(&cs_streams_lock); }

void cs_streams_postfork(bool child) {
  if (!child) {
    pthread_mutex_unlock(&cs_streams_lock);
    return;
  }
  /* The parent's streams and captures do not exist in the child. */
  pthread_mutex_init(&cs_streams_lock, NULL);
  cs_nonblocking.count = 0;
  cs_capturing.count = 0;
  atomic_store(&cs_streams_capturing, 0);
}

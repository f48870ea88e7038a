/* SPDX-License-Identifier: Apache-2.0 */
#include "record/thread_log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_assert.h"
#include "common/cs_compiler.h"
#include "common/cs_error.h"
#include "common/cs_populate.h"
#include "record/thread_id.h"

/* An entry's `stream` in a chunk: the log's stream index in the low bits, and above them the
 * thread that made it (record/thread_id.h), so that keeping the thread costs no line of its own;
 * a copy gives the two apart. */
enum { CS_LOG_STREAM_BITS = 10 };
_Static_assert(CS_RING_MAX_STREAMS <= 1 << CS_LOG_STREAM_BITS, "stream indexes fit below the thread");
_Static_assert(CS_LOG_STREAM_BITS + CS_THREAD_ID_BITS <= 32, "a thread fits above the stream index");
#define CS_LOG_STREAM_MASK ((UINT32_C(1) << CS_LOG_STREAM_BITS) - 1)

struct cs_log_chunk_s {
  cs_ring_entry_t entries[CS_THREAD_LOG_CHUNK];
  uint64_t seq[CS_THREAD_LOG_CHUNK]; /* each entry's number in its log */
  uint32_t count;
  cs_log_chunk_t *next;              /* in the free list or the full list */
};

/* ---- writer slots: which current chunk of a log a thread writes to (thread_log.h) ---- */

_Static_assert(CS_THREAD_LOG_WRITERS <= 64, "the slots taken are one 64-bit word");
/* A log always has a chunk to give: at most CS_THREAD_LOG_WRITERS - 1 are current in the other slots. */
_Static_assert(CS_THREAD_LOG_SPARE > CS_THREAD_LOG_WRITERS, "more chunks than writer slots");

static atomic_uint_fast64_t cs_slots_taken;   /* bit i: slot i belongs to a living thread */
static atomic_uint cs_slots_shared_next;      /* threads beyond the slots take them in turn */
static pthread_once_t cs_slot_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t cs_slot_key;
static bool cs_slot_key_made;
static CS_TLS unsigned cs_slot_plus_one;      /* this thread's slot + 1; 0 = none yet */
static CS_TLS bool cs_slot_owned;             /* it is this thread's own, to give back at its exit */

/* The thread exits: its slot is free for the next thread, which goes on filling its chunks. The
 * value is the slot + 1 (a key's destructor runs only for a value other than NULL). */
static void cs_slot_release(void *value) {
  unsigned slot = (unsigned)(uintptr_t)value - 1;
  cs_slot_plus_one = 0;
  cs_slot_owned = false;
  atomic_fetch_and(&cs_slots_taken, ~(UINT64_C(1) << slot));
}

static void cs_slot_make_key(void) { cs_slot_key_made = pthread_key_create(&cs_slot_key, cs_slot_release) == 0; }

/* The lowest free slot, the thread's until it exits; when every slot is taken (or no key could be
 * made to give one back), one shared in turn. Once per thread: a pthread_setspecific, which may
 * allocate glibc's second-level key block once. */
static CS_COLD unsigned cs_slot_claim(void) {
  pthread_once(&cs_slot_key_once, cs_slot_make_key);
  const uint64_t all = CS_THREAD_LOG_WRITERS == 64 ? ~UINT64_C(0) : (UINT64_C(1) << CS_THREAD_LOG_WRITERS) - 1;
  uint64_t taken = atomic_load(&cs_slots_taken);
  while (cs_slot_key_made && (taken & all) != all) {
    unsigned slot = (unsigned)__builtin_ctzll(~taken);
    if (!atomic_compare_exchange_weak(&cs_slots_taken, &taken, taken | UINT64_C(1) << slot)) continue;
    if (pthread_setspecific(cs_slot_key, (void *)(uintptr_t)(slot + 1)) != 0) {
      atomic_fetch_and(&cs_slots_taken, ~(UINT64_C(1) << slot));
      break;
    }
    cs_slot_owned = true;
    return cs_slot_plus_one = slot + 1;
  }
  return cs_slot_plus_one = atomic_fetch_add(&cs_slots_shared_next, 1) % CS_THREAD_LOG_WRITERS + 1;
}

void cs_thread_log_postfork_child(void) {
  cs_thread_id_postfork_child();
  /* the forking thread is the child's only one: its slot stays its own */
  atomic_store(&cs_slots_taken, cs_slot_owned ? UINT64_C(1) << (cs_slot_plus_one - 1) : 0);
}

#ifdef CS_TESTING
unsigned cs_thread_log_test_slot(void) { return (cs_slot_plus_one ? cs_slot_plus_one : cs_slot_claim()) - 1; }
unsigned cs_thread_log_test_slots_owned(void) { return (unsigned)__builtin_popcountll(atomic_load(&cs_slots_taken)); }
#endif

static void cs_thread_log_reset_chunks(cs_thread_log_t *l) {
  l->free_chunks = NULL;
  for (size_t i = l->chunk_count; i-- > 0;) {
    cs_log_chunk_t *c = &l->chunks[i];
    c->count = 0;
    c->next = l->free_chunks;
    l->free_chunks = c;
  }
  l->full_head = l->full_tail = NULL;
  memset(l->current, 0, sizeof l->current);
}

typedef struct cs_log_cursor_s {
  cs_log_chunk_t *chunk; /* its entries are converted as the copy reaches them */
  uint32_t at;
} cs_log_cursor_t;

int cs_thread_log_init(cs_thread_log_t *l, size_t capacity) {
  memset(l, 0, sizeof *l);
  if (capacity > CS_THREAD_LOG_MAX_CAPACITY) return -CS_EHOSTMEM;
  if (capacity > 0) {
    l->chunk_count = (capacity + CS_THREAD_LOG_CHUNK - 1) / CS_THREAD_LOG_CHUNK + CS_THREAD_LOG_SPARE;
    l->chunks = calloc(l->chunk_count, sizeof *l->chunks);
    /* the merge's heap, made now: a copy allocates nothing (it runs under the allocator's lock,
     * in the snapshot of a process that may be ending) */
    l->heap = calloc(l->chunk_count, sizeof(cs_log_cursor_t));
    if (!l->chunks || !l->heap) {
      cs_thread_log_destroy(l);
      return -CS_EHOSTMEM;
    }
  }
  l->capacity = capacity;
  cs_ring_clock_start(&l->start, &l->start_epoch_us, &l->converted_until);
  cs_stream_table_init(&l->streams);
  cs_thread_log_reset_chunks(l);
  cs_thread_log_set_enabled(l, capacity > 0);
  return 0;
}

void cs_thread_log_destroy(cs_thread_log_t *l) {
  free(l->chunks);
  free(l->heap);
  memset(l, 0, sizeof *l);
}

/* Everything up to c's newest entry may now be incomplete: copies start after it. */
static void cs_thread_log_forget(cs_thread_log_t *l, const cs_log_chunk_t *c) {
  if (c->count == 0) return;
  uint64_t after = c->seq[c->count - 1] + 1;
  if (l->cut < after) l->cut = after;
}

/* A chunk for a writer slot: a free one, else the full one that filled first (there is one: the
 * chunks outnumber the slots). */
static CS_COLD cs_log_chunk_t *cs_thread_log_take(cs_thread_log_t *l) {
  cs_log_chunk_t *c = l->free_chunks;
  if (c) {
    l->free_chunks = c->next;
  } else {
    c = l->full_head;
    cs_assert(c != NULL);
    l->full_head = c->next;
    if (!l->full_head) l->full_tail = NULL;
    cs_thread_log_forget(l, c);
  }
  c->count = 0;
  c->next = NULL;
  return c;
}

/* The calling thread's slot in l, holding a chunk with room for one entry. */
static inline cs_log_chunk_t **cs_thread_log_slot(cs_thread_log_t *l) {
  unsigned slot = cs_slot_plus_one;
  if (CS_UNLIKELY(slot == 0)) slot = cs_slot_claim();
  cs_log_chunk_t **current = &l->current[slot - 1];
  if (CS_UNLIKELY(*current == NULL)) *current = cs_thread_log_take(l);
  return current;
}

static inline void cs_thread_log_append(cs_thread_log_t *l, cs_log_chunk_t **current, cs_action_t action,
                                        int device, uint64_t addr, uint64_t size, uintptr_t stream,
                                        uint32_t stack_id, uint64_t time) {
  cs_log_chunk_t *c = *current;
  uint32_t k = c->count;
  c->entries[k] = (cs_ring_entry_t){.addr = addr, .size = size, .when = cs_ring_pack(time, device, action),
                                    .stack_id = stack_id,
                                    .stream = cs_stream_table_index(&l->streams, stream) |
                                              cs_thread_id() << CS_LOG_STREAM_BITS};
  c->seq[k] = l->next_seq++;
  c->count = k + 1;
  l->pushed++;
  l->last_time = time;
  if (k + 1 == CS_THREAD_LOG_CHUNK) { /* full: the slot takes another at its next entry */
    if (l->full_tail) l->full_tail->next = c;
    else l->full_head = c;
    l->full_tail = c;
    *current = NULL;
  }
}

void cs_thread_log_push(cs_thread_log_t *l, cs_action_t action, int device, uint64_t addr, uint64_t size,
                        uintptr_t stream, uint32_t stack_id) {
  if (!l->enabled) return;
  cs_thread_log_append(l, cs_thread_log_slot(l), action, device, addr, size, stream, stack_id, cs_ring_time_now(&l->start));
}

void cs_thread_log_push_same_time(cs_thread_log_t *l, cs_action_t action, int device, uint64_t addr,
                                  uint64_t size, uintptr_t stream, uint32_t stack_id) {
  if (!l->enabled) return;
  cs_thread_log_append(l, cs_thread_log_slot(l), action, device, addr, size, stream, stack_id, l->pushed ? l->last_time : cs_ring_time_now(&l->start));
}

void cs_thread_log_set_enabled(cs_thread_log_t *l, bool enabled) {
  if (!enabled) cs_thread_log_clear(l);
  l->enabled = enabled && l->capacity > 0;
  /* backed now, not by page faults on the hot path (cs_ring_set_enabled) */
  if (l->enabled) cs_populate(l->chunks, l->chunk_count * sizeof *l->chunks);
}

size_t cs_thread_log_room(const cs_thread_log_t *l) { return l->chunk_count * CS_THREAD_LOG_CHUNK; }

void cs_thread_log_clear(cs_thread_log_t *l) {
  cs_thread_log_reset_chunks(l);
  l->pushed = 0;
  l->cut = l->next_seq;
}

/* ---- copy: the chunks merged by sequence number ---- */

static inline uint64_t cs_cursor_key(const cs_log_cursor_t *k) { return k->chunk->seq[k->at]; }

static void cs_heap_sift_down(cs_log_cursor_t *heap, size_t n, size_t i) {
  for (;;) {
    size_t least = i, left = 2 * i + 1, right = left + 1;
    if (left < n && cs_cursor_key(&heap[left]) < cs_cursor_key(&heap[least])) least = left;
    if (right < n && cs_cursor_key(&heap[right]) < cs_cursor_key(&heap[least])) least = right;
    if (least == i) return;
    cs_log_cursor_t t = heap[i];
    heap[i] = heap[least];
    heap[least] = t;
    i = least;
  }
}

size_t cs_thread_log_copy(cs_thread_log_t *l, cs_ring_entry_t *out, uint32_t *threads, uint64_t *dropped) {
  *dropped = 0;
  if (l->capacity == 0 || l->pushed == 0) return 0;
  cs_log_cursor_t *heap = l->heap;
  const uint64_t cut = l->cut;
  size_t n_heap = 0;
  for (size_t i = 0; i < l->chunk_count; i++) {
    cs_log_chunk_t *c = &l->chunks[i];
    uint32_t at = 0;
    while (at < c->count && c->seq[at] < cut) at++; /* before the cut: not a suffix */
    if (at < c->count) heap[n_heap++] = (cs_log_cursor_t){.chunk = c, .at = at};
  }
  for (size_t i = n_heap / 2; i-- > 0;) cs_heap_sift_down(heap, n_heap, i);
  /* entries are converted in the order they were made, as a ring's are (cs_ring_convert_next) */
  cs_ticks_anchor_t now = cs_ticks_anchor();
  cs_ring_converter_t cv;
  cs_ring_converter_begin(&cv, &l->start, &l->converted_until, &now);
  size_t n = 0;
  while (n_heap > 0) {
    cs_log_cursor_t *top = &heap[0];
    cs_ring_entry_t *e = &top->chunk->entries[top->at];
    if (threads) threads[n] = e->stream >> CS_LOG_STREAM_BITS;
    cs_ring_entry_export(&out[n], e, l->start_epoch_us, cs_ring_convert_next(&cv, e));
    out[n++].stream &= CS_LOG_STREAM_MASK;
    if (++top->at == top->chunk->count) heap[0] = heap[--n_heap];
    cs_heap_sift_down(heap, n_heap, 0);
  }
  if (cv.converts) l->converted_until = now;
  if (n > l->capacity) { /* the chunks hold more: a copy keeps CUDASNAP_MAX_ENTRIES, as a ring does */
    memmove(out, out + (n - l->capacity), l->capacity * sizeof *out);
    if (threads) memmove(threads, threads + (n - l->capacity), l->capacity * sizeof *threads);
    n = l->capacity;
  }
  *dropped = l->pushed - n;
  return n;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* cs_ring_t: the bounded history of one allocator's events (PyTorch's TraceEntryRingBuffer, one per
 * device allocator), in the order they happened.
 *
 * Fixed capacity, allocated once; when full the oldest entry is overwritten, so what remains is
 * always a suffix of the history, and any suffix of a consistent trace replays consistently
 * (snapshot-format.md section 8, item 5). Push is O(1) with no allocation and no lock: a read of
 * the tick counter (record/ticks.h) and a 32-byte copy. Entries hold ticks; cs_ring_copy turns
 * them into wall-clock microseconds.
 *
 * Not thread-safe: the owner serializes every call. cudasnap's rings belong to a context's
 * allocator and are used under its lock, which every event is emitted under already, so the
 * history costs no lock of its own. */
#ifndef CS_RING_H
#define CS_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/ring_entry.h"
#include "record/ticks.h"

enum { CS_RING_MAX_STREAMS = 1024 };

/* Stream handles by a small index (entries keep the index). The legacy/default stream is index 0,
 * as the viewer names it 0; programs use few streams, and past the table's size the rest share its
 * last index. */
typedef struct cs_stream_table_s {
  uintptr_t handles[CS_RING_MAX_STREAMS];
  uint32_t count;
  uint32_t last; /* the index found last: consecutive events are mostly on one stream */
} cs_stream_table_t;

static inline void cs_stream_table_init(cs_stream_table_t *t) {
  t->handles[0] = 0;
  t->count = 1;
  t->last = 0;
}

static inline uint32_t cs_stream_table_index(cs_stream_table_t *t, uintptr_t stream) {
  if (t->handles[t->last] == stream) return t->last;
  for (uint32_t i = 0; i < t->count; i++)
    if (t->handles[i] == stream) return t->last = i;
  if (t->count == CS_RING_MAX_STREAMS) return CS_RING_MAX_STREAMS - 1;
  t->handles[t->count] = stream;
  return t->last = t->count++;
}

static inline uintptr_t cs_stream_table_handle(const cs_stream_table_t *t, uint32_t index) {
  return index < t->count ? t->handles[index] : t->handles[t->count - 1];
}

typedef struct cs_ring_s {
  cs_ring_entry_t *entries;  /* capacity slots */
  size_t capacity;           /* 0 = no history is kept */
  uint64_t pushed;           /* entries pushed since the last clear */
  size_t head;               /* the slot of the next entry: pushed % capacity */
  cs_ticks_anchor_t start;   /* the process's time origin (cs_ticks_origin): entry times count */
  uint64_t start_epoch_us;   /* from it, and this is its wall clock */
  cs_ticks_anchor_t converted_until; /* the last copy's anchor: entries before it are converted */
  cs_stream_table_t streams;
  bool enabled;              /* cudasnap_record_history */
  bool mapped;               /* entries belong to a recording file's mapping, not to the ring */
  uint64_t *published;       /* in a recording file: `pushed`, stored after each whole entry
                                (record/recfile.h); NULL for a ring in memory */
} cs_ring_t;

/* capacity 0 keeps no history. Returns 0 or -CS_EHOSTMEM. */
int cs_ring_init(cs_ring_t *r, size_t capacity);

/* A ring whose `capacity` entries are the ring section of a recording file (record/recfile.h):
 * entries and published live in the shared mapping, and each push tags its entry and publishes
 * its count there, so a reader of the file can tell whole entries from one cut short. The mapping
 * outlives the ring; cs_ring_destroy leaves it alone. */
void cs_ring_init_mapped(cs_ring_t *r, size_t capacity, cs_ring_entry_t *entries, uint64_t *published);
void cs_ring_destroy(cs_ring_t *r);

/* Record one event (nothing while disabled or with capacity 0). */
void cs_ring_push(cs_ring_t *r, cs_action_t action, int device, uint64_t addr, uint64_t size,
                  uintptr_t stream, uint32_t stack_id);

/* The same for an event of the moment of the last one pushed (a free completed in the call that
 * requested it): the last entry's time is reused, one clock read fewer. */
void cs_ring_push_same_time(cs_ring_t *r, cs_action_t action, int device, uint64_t addr, uint64_t size,
                            uintptr_t stream, uint32_t stack_id);

/* Turn recording on or off; turning it off forgets the history, as PyTorch does (the trace must
 * stay a suffix of what happened). */
void cs_ring_set_enabled(cs_ring_t *r, bool enabled);

/* Copy the history, oldest first, into out (room for r->capacity entries), with times converted to
 * wall-clock microseconds; returns the count and the number of entries dropped because the ring
 * was full. Entries pushed since the last copy are converted in place, piecewise: from the last
 * copy's anchor at the tick rate measured between it and now, each no earlier than the entry
 * before it (cs_ring_convert_next), so times never go backwards along the history or from one copy
 * to the next, and every snapshot gives an entry the same time. */
size_t cs_ring_copy(cs_ring_t *r, cs_ring_entry_t *out, uint64_t *dropped);

/* Entry times, for the ring and for record/thread_log.c, which keeps entries the same way. */

/* A history's clock at its creation: the process's time origin (record/ticks.h), its wall clock,
 * and nothing converted yet. Shared with record/thread_log.c. */
static inline void cs_ring_clock_start(cs_ticks_anchor_t *start, uint64_t *start_epoch_us,
                                       cs_ticks_anchor_t *converted_until) {
  cs_ticks_init();
  cs_ticks_origin_t origin = cs_ticks_origin();
  *start = origin.anchor;
  *start_epoch_us = origin.epoch_us;
  *converted_until = origin.anchor;
}

/* Now, in ring units since start (the process's time origin); a counter read behind the origin (a
 * TSC not synchronized between sockets) counts as the origin. */
static inline uint64_t cs_ring_time_now(const cs_ticks_anchor_t *start) {
  uint64_t ticks = cs_ticks_now();
  return ticks > start->ticks ? (ticks - start->ticks) >> CS_RING_TICK_SHIFT & CS_RING_TIME_MASK : 0;
}
/* time << 12 | device << 4 | action */
static inline uint64_t cs_ring_pack(uint64_t time, int device, cs_action_t action) {
  uint64_t device_bits = (unsigned)device & ((1u << CS_RING_DEVICE_BITS) - 1);
  return time << CS_RING_TIME_SHIFT | device_bits << CS_RING_ACTION_BITS | (uint64_t)action;
}

/* One conversion pass over a history, oldest entry first: ring units -> microseconds since start,
 * from the anchor `from` (the last pass's `now`) at the rate measured between it and `now`; when
 * the counter did not advance, entries are left (the next pass converts them) and read as the
 * last pass's time. No entry reads earlier than the one before it: each push reads the counter
 * itself, not ordered with the owner's lock, so two entries pushed one after the other by threads
 * on different CPUs can read it out of order by a little, and viewers and the merge of histories
 * (snapshot/snapshot.c) take a history's times as never going back. An entry's time is clamped
 * when it is converted and kept so, so every snapshot gives it the same time. */
typedef struct cs_ring_converter_s {
  uint64_t start_ticks;
  uint64_t from_ticks;
  double from_ns;
  double ns_per_tick;
  bool converts;        /* the counter advanced: this pass converts */
  uint64_t fallback_us; /* an entry left as it was: the last pass's time */
  uint64_t last_us;     /* the time of the entry before: no entry reads earlier */
} cs_ring_converter_t;
void cs_ring_converter_begin(cs_ring_converter_t *cv, const cs_ticks_anchor_t *start,
                             const cs_ticks_anchor_t *from, const cs_ticks_anchor_t *now);
/* The next entry of the history: converted in place unless it was (converted stay), and its time
 * in microseconds since start. */
uint64_t cs_ring_convert_next(cs_ring_converter_t *cv, cs_ring_entry_t *e);

/* An entry as a copy hands it out: its time `us` since the start (cs_ring_convert_next) as
 * microseconds since the epoch, the stream without a recording file's tag. */
void cs_ring_entry_export(cs_ring_entry_t *out, const cs_ring_entry_t *e, uint64_t start_epoch_us, uint64_t us);

/* Forget the history (after fork, in the child: it is the parent's). */
void cs_ring_clear(cs_ring_t *r);

#endif

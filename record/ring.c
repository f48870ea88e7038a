/* SPDX-License-Identifier: Apache-2.0 */
#include "record/ring.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cs_error.h"
#include "common/cs_populate.h"
#include "record/recfile.h"

int cs_ring_init(cs_ring_t *r, size_t capacity) {
  memset(r, 0, sizeof *r);
  if (capacity > 0) {
    r->entries = calloc(capacity, sizeof *r->entries);
    if (!r->entries) return -CS_EHOSTMEM;
  }
  r->capacity = capacity;
  cs_ring_clock_start(&r->start, &r->start_epoch_us, &r->converted_until);
  cs_stream_table_init(&r->streams);
  cs_ring_set_enabled(r, capacity > 0);
  return 0;
}

void cs_ring_init_mapped(cs_ring_t *r, size_t capacity, cs_ring_entry_t *entries, uint64_t *published) {
  (void)cs_ring_init(r, 0); /* cannot fail: nothing is allocated */
  r->entries = entries;
  r->capacity = capacity;
  r->mapped = true;
  r->published = published;
  __atomic_store_n(published, 0, __ATOMIC_RELEASE);
  cs_ring_set_enabled(r, capacity > 0);
}

void cs_ring_destroy(cs_ring_t *r) {
  if (!r->mapped) free(r->entries);
  memset(r, 0, sizeof *r);
}

static uint64_t cs_ring_now(const cs_ring_t *r) { return cs_ring_time_now(&r->start); }

/* In a recording file, the entry's tag is cleared before any field is written and set, with its
 * push number, after all of them; then the count is published. A process killed at any point
 * leaves the slot either as it was, or tagged 0 (cut short), or whole with the new tag; and the
 * count never covers an entry that is not whole (record/recfile.h). On x86-64 the fence and the
 * release stores are plain stores in program order: two stores more than a ring in memory. */
static void cs_ring_append(cs_ring_t *r, cs_action_t action, int device, uint64_t addr, uint64_t size,
                           uintptr_t stream, uint32_t stack_id, uint64_t time) {
  cs_ring_entry_t *e = &r->entries[r->head];
  const uint32_t index = cs_stream_table_index(&r->streams, stream);
  const uint64_t pushed = r->pushed + 1;
  if (r->published) {
    __atomic_store_n(&e->stream, 0, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_release);
    e->addr = addr;
    e->size = size;
    e->when = cs_ring_pack(time, device, action);
    e->stack_id = stack_id;
    __atomic_store_n(&e->stream, index | cs_recfile_tag(pushed) << CS_RECFILE_TAG_SHIFT, __ATOMIC_RELEASE);
    __atomic_store_n(r->published, pushed, __ATOMIC_RELEASE);
  } else {
    *e = (cs_ring_entry_t){.addr = addr, .size = size, .when = cs_ring_pack(time, device, action),
                           .stack_id = stack_id, .stream = index};
  }
  r->head = r->head + 1 == r->capacity ? 0 : r->head + 1; /* no division on the hot path */
  r->pushed = pushed;
}

void cs_ring_push(cs_ring_t *r, cs_action_t action, int device, uint64_t addr, uint64_t size,
                  uintptr_t stream, uint32_t stack_id) {
  if (!r->enabled) return;
  cs_ring_append(r, action, device, addr, size, stream, stack_id, cs_ring_now(r));
}

void cs_ring_push_same_time(cs_ring_t *r, cs_action_t action, int device, uint64_t addr, uint64_t size,
                            uintptr_t stream, uint32_t stack_id) {
  if (!r->enabled) return;
  const cs_ring_entry_t *last = &r->entries[(r->head == 0 ? r->capacity : r->head) - 1];
  bool reusable = r->pushed > 0 && !(last->when & CS_RING_TIME_CONVERTED);
  uint64_t time = reusable ? last->when >> CS_RING_TIME_SHIFT : cs_ring_now(r);
  cs_ring_append(r, action, device, addr, size, stream, stack_id, time);
}

void cs_ring_set_enabled(cs_ring_t *r, bool enabled) {
  if (!enabled) cs_ring_clear(r);
  r->enabled = enabled && r->capacity > 0;
  /* pages backed while recording, so that no page fault is taken on the hot path (10 us each
   * under a hypervisor); a ring that never records keeps none */
  if (r->enabled) cs_populate(r->entries, r->capacity * sizeof *r->entries);
}

void cs_ring_converter_begin(cs_ring_converter_t *cv, const cs_ticks_anchor_t *start,
                             const cs_ticks_anchor_t *from, const cs_ticks_anchor_t *now) {
  cv->ns_per_tick = cs_ticks_rate(from, now);
  cv->start_ticks = start->ticks;
  cv->from_ticks = from->ticks;
  cv->from_ns = (double)(from->monotonic_ns - start->monotonic_ns);
  cv->converts = cv->ns_per_tick > 0.0;
  cv->fallback_us = (from->monotonic_ns - start->monotonic_ns) / 1000u;
  cv->last_us = 0;
}

uint64_t cs_ring_convert_next(cs_ring_converter_t *cv, cs_ring_entry_t *e) {
  uint64_t us;
  if (e->when & CS_RING_TIME_CONVERTED) {
    us = e->when >> CS_RING_TIME_SHIFT & CS_RING_TIME_MASK;
  } else if (cv->converts) {
    uint64_t ticks = cv->start_ticks + ((e->when >> CS_RING_TIME_SHIFT) << CS_RING_TICK_SHIFT);
    uint64_t since = ticks > cv->from_ticks ? ticks - cv->from_ticks : 0;
    us = (uint64_t)((cv->from_ns + (double)since * cv->ns_per_tick) / 1000.0) & CS_RING_TIME_MASK;
    if (us < cv->last_us) us = cv->last_us; /* kept clamped: every later copy reads the same */
    e->when = cs_ring_pack(us, cs_ring_entry_device(e), cs_ring_entry_action(e)) | CS_RING_TIME_CONVERTED;
  } else {
    us = cv->fallback_us;
  }
  if (us < cv->last_us) us = cv->last_us;
  cv->last_us = us;
  return us;
}

void cs_ring_entry_export(cs_ring_entry_t *out, const cs_ring_entry_t *e, uint64_t start_epoch_us, uint64_t us) {
  *out = *e;
  out->stream = e->stream & CS_RECFILE_STREAM_MASK; /* without a recording file's tag */
  out->when = cs_ring_pack(start_epoch_us + us, cs_ring_entry_device(e), cs_ring_entry_action(e));
}

size_t cs_ring_copy(cs_ring_t *r, cs_ring_entry_t *out, uint64_t *dropped) {
  if (r->capacity == 0) {
    if (dropped) *dropped = 0;
    return 0;
  }
  size_t n = r->pushed < r->capacity ? (size_t)r->pushed : r->capacity;
  size_t oldest = r->pushed < r->capacity ? 0 : r->head;
  /* the entries pushed since the last copy are converted in place, oldest first: from the last
   * copy's anchor at the rate measured between it and now */
  cs_ticks_anchor_t now = cs_ticks_anchor();
  cs_ring_converter_t cv;
  cs_ring_converter_begin(&cv, &r->start, &r->converted_until, &now);
  for (size_t i = 0, slot = oldest; i < n; i++, slot = slot + 1 == r->capacity ? 0 : slot + 1)
    cs_ring_entry_export(&out[i], &r->entries[slot], r->start_epoch_us, cs_ring_convert_next(&cv, &r->entries[slot]));
  if (cv.converts) r->converted_until = now;
  if (dropped) *dropped = r->pushed - n;
  return n;
}

void cs_ring_clear(cs_ring_t *r) {
  if (r->published) {
    /* old entries would pass for new ones of the same push numbers, and a cleared tag before old
     * fields for an entry cut short: they are zeroed. The first slot (the one a reader looks at
     * after a count of 0) before the count, so no death in between leaves a false reading. */
    if (r->capacity > 0) {
      __atomic_store_n(&r->entries[0].stream, 0, __ATOMIC_RELAXED);
      atomic_thread_fence(memory_order_release);
      r->entries[0] = (cs_ring_entry_t){0};
    }
    __atomic_store_n(r->published, 0, __ATOMIC_RELEASE);
    size_t used = r->pushed < r->capacity ? (size_t)r->pushed : r->capacity;
    if (used > 1) memset(r->entries + 1, 0, (used - 1) * sizeof *r->entries);
  }
  r->pushed = 0;
  r->head = 0;
}

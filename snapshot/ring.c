#include "snapshot/ring.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cs_error.h"
#include "common/cs_populate.h"

static const char *const cs_action_names[CS_ACTION_COUNT] = {
    [CS_ACTION_ALLOC] = "alloc",
    [CS_ACTION_FREE_REQUESTED] = "free_requested",
    [CS_ACTION_FREE_COMPLETED] = "free_completed",
    [CS_ACTION_SEGMENT_ALLOC] = "segment_alloc",
    [CS_ACTION_SEGMENT_FREE] = "segment_free",
    [CS_ACTION_SEGMENT_MAP] = "segment_map",
    [CS_ACTION_SEGMENT_UNMAP] = "segment_unmap",
    [CS_ACTION_OOM] = "oom",
    [CS_ACTION_SNAPSHOT] = "snapshot",
};

const char *cs_action_name(cs_action_t action) {
  return action < CS_ACTION_COUNT ? cs_action_names[action] : "unknown";
}

static uint64_t cs_wall_clock_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int cs_ring_init(cs_ring_t *r, size_t capacity) {
  memset(r, 0, sizeof *r);
  if (capacity > 0) {
    r->entries = calloc(capacity, sizeof *r->entries);
    if (!r->entries) return -CS_EHOSTMEM;
    cs_populate(r->entries, capacity * sizeof *r->entries); /* no page faults on the hot path */
  }
  r->capacity = capacity;
  cs_ticks_init();
  r->start = cs_ticks_anchor();
  r->start_epoch_us = cs_wall_clock_us();
  cs_stream_table_init(&r->streams);
  r->enabled = capacity > 0;
  return 0;
}

void cs_ring_destroy(cs_ring_t *r) {
  free(r->entries);
  memset(r, 0, sizeof *r);
}

static uint64_t cs_ring_pack(uint64_t time, int device, cs_action_t action) {
  uint64_t device_bits = (unsigned)device & ((1u << CS_RING_DEVICE_BITS) - 1);
  return time << CS_RING_TIME_SHIFT | device_bits << CS_RING_ACTION_BITS | (uint64_t)action;
}

/* The time of a new entry, in ring ticks. A free that completes in the call that
 * requested it (sync mode; stream mode with nothing in flight) is pushed right after its request
 * and happened at the same time, so the request's clock read serves both: one read fewer per free. */
static uint64_t cs_ring_time(const cs_ring_t *r, cs_action_t action, int device, uint64_t addr) {
  if (action == CS_ACTION_FREE_COMPLETED && r->pushed > 0) {
    const cs_ring_entry_t *last = &r->entries[(r->head == 0 ? r->capacity : r->head) - 1];
    uint64_t low_bits = (UINT64_C(1) << CS_RING_TIME_SHIFT) - 1;
    if (last->addr == addr && !(last->when & CS_RING_TIME_CONVERTED) &&
        (last->when & low_bits) == cs_ring_pack(0, device, CS_ACTION_FREE_REQUESTED))
      return last->when >> CS_RING_TIME_SHIFT;
  }
  uint64_t time_bits = (CS_RING_TIME_CONVERTED >> CS_RING_TIME_SHIFT) - 1;
  return (cs_ticks_now() - r->start.ticks) >> CS_RING_TICK_SHIFT & time_bits;
}

void cs_ring_push(cs_ring_t *r, cs_action_t action, int device, uint64_t addr, uint64_t size,
                  uintptr_t stream, uint32_t stack_id) {
  if (!r->enabled) return;
  uint64_t time = cs_ring_time(r, action, device, addr);
  r->entries[r->head] = (cs_ring_entry_t){.addr = addr, .size = size, .when = cs_ring_pack(time, device, action),
                                          .stack_id = stack_id, .stream = cs_stream_table_index(&r->streams, stream)};
  r->head = r->head + 1 == r->capacity ? 0 : r->head + 1; /* no division on the hot path */
  r->pushed++;
}

void cs_ring_set_enabled(cs_ring_t *r, bool enabled) {
  if (!enabled) cs_ring_clear(r);
  r->enabled = enabled && r->capacity > 0;
}

/* An entry's time in microseconds since the ring's start, converted in place first if it still
 * holds ticks (us_per_unit: the current estimate of microseconds per ring time unit). */
static uint64_t cs_ring_entry_start_us(cs_ring_entry_t *e, double us_per_unit) {
  uint64_t time = e->when >> CS_RING_TIME_SHIFT;
  if (!(e->when & CS_RING_TIME_CONVERTED)) {
    time = (uint64_t)((double)time * us_per_unit);
    e->when = cs_ring_pack(time, cs_ring_entry_device(e), cs_ring_entry_action(e)) | CS_RING_TIME_CONVERTED;
  }
  return time & ((CS_RING_TIME_CONVERTED >> CS_RING_TIME_SHIFT) - 1);
}

size_t cs_ring_copy(cs_ring_t *r, cs_ring_entry_t *out, uint64_t *dropped) {
  if (r->capacity == 0) {
    if (dropped) *dropped = 0;
    return 0;
  }
  size_t n = r->pushed < r->capacity ? (size_t)r->pushed : r->capacity;
  size_t oldest = r->pushed < r->capacity ? 0 : r->head;
  cs_ticks_anchor_t now = cs_ticks_anchor();
  double us_per_unit = cs_ticks_rate(&r->start, &now) * (double)(1u << CS_RING_TICK_SHIFT) / 1000.0;
  for (size_t i = 0, slot = oldest; i < n; i++, slot = slot + 1 == r->capacity ? 0 : slot + 1) {
    cs_ring_entry_t *e = &r->entries[slot];
    uint64_t us = r->start_epoch_us + cs_ring_entry_start_us(e, us_per_unit);
    out[i] = *e;
    out[i].when = cs_ring_pack(us, cs_ring_entry_device(e), cs_ring_entry_action(e));
  }
  if (dropped) *dropped = r->pushed - n;
  return n;
}

uintptr_t cs_ring_stream(const cs_ring_t *r, uint32_t index) {
  return cs_stream_table_handle(&r->streams, index);
}

void cs_ring_clear(cs_ring_t *r) {
  r->pushed = 0;
  r->head = 0;
}

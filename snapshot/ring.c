#include "snapshot/ring.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cs_error.h"

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

static uint64_t cs_clock_us(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int cs_ring_init(cs_ring_t *r, size_t capacity) {
  memset(r, 0, sizeof *r);
  if (capacity > 0) {
    r->entries = calloc(capacity, sizeof *r->entries);
    if (!r->entries) return -CS_EHOSTMEM;
  }
  pthread_mutex_init(&r->lock, NULL);
  r->capacity = capacity;
  r->start_us = cs_clock_us(CLOCK_MONOTONIC);
  r->start_epoch_us = cs_clock_us(CLOCK_REALTIME);
  r->streams[0] = 0; /* the legacy/default stream keeps index 0, as the viewer names it 0 */
  r->stream_count = 1;
  r->enabled = capacity > 0;
  return 0;
}

void cs_ring_destroy(cs_ring_t *r) {
  free(r->entries);
  pthread_mutex_destroy(&r->lock);
  memset(r, 0, sizeof *r);
}

/* pre: lock held. Programs use few streams; past the table's size they share its last index. */
static uint32_t cs_ring_stream_index(cs_ring_t *r, uintptr_t stream) {
  for (uint32_t i = 0; i < r->stream_count; i++)
    if (r->streams[i] == stream) return i;
  if (r->stream_count == CS_RING_MAX_STREAMS) return CS_RING_MAX_STREAMS - 1;
  r->streams[r->stream_count] = stream;
  return r->stream_count++;
}

void cs_ring_push(cs_ring_t *r, cs_action_t action, int device, uint64_t addr, uint64_t size,
                  uintptr_t stream, uint32_t stack_id) {
  if (r->capacity == 0) return;
  uint64_t us = cs_clock_us(CLOCK_MONOTONIC) - r->start_us;
  uint64_t when = us << (CS_RING_ACTION_BITS + CS_RING_DEVICE_BITS) |
                  (uint64_t)((unsigned)device & ((1u << CS_RING_DEVICE_BITS) - 1)) << CS_RING_ACTION_BITS |
                  (uint64_t)action;
  pthread_mutex_lock(&r->lock);
  if (r->enabled) {
    cs_ring_entry_t *e = &r->entries[r->pushed % r->capacity];
    *e = (cs_ring_entry_t){.addr = addr, .size = size, .when = when, .stack_id = stack_id,
                           .stream = cs_ring_stream_index(r, stream)};
    r->pushed++;
  }
  pthread_mutex_unlock(&r->lock);
}

void cs_ring_set_enabled(cs_ring_t *r, bool enabled) {
  pthread_mutex_lock(&r->lock);
  if (!enabled) r->pushed = 0;
  r->enabled = enabled && r->capacity > 0;
  pthread_mutex_unlock(&r->lock);
}

size_t cs_ring_copy(cs_ring_t *r, cs_ring_entry_t *out, uint64_t *dropped) {
  if (r->capacity == 0) {
    if (dropped) *dropped = 0;
    return 0;
  }
  pthread_mutex_lock(&r->lock);
  size_t n = r->pushed < r->capacity ? (size_t)r->pushed : r->capacity;
  size_t oldest = r->pushed < r->capacity ? 0 : (size_t)(r->pushed % r->capacity);
  size_t first_part = r->capacity - oldest < n ? r->capacity - oldest : n;
  if (n > 0) {
    memcpy(out, r->entries + oldest, first_part * sizeof *out);
    memcpy(out + first_part, r->entries, (n - first_part) * sizeof *out);
  }
  if (dropped) *dropped = r->pushed - n;
  pthread_mutex_unlock(&r->lock);
  return n;
}

uintptr_t cs_ring_stream(const cs_ring_t *r, uint32_t index) {
  return index < CS_RING_MAX_STREAMS ? r->streams[index] : 0;
}

void cs_ring_reset_in_child(cs_ring_t *r) {
  pthread_mutex_init(&r->lock, NULL);
  r->pushed = 0;
}

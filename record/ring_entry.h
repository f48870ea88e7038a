/* SPDX-License-Identifier: Apache-2.0 */
/* One entry of an allocator's event history, as the ring (record/ring.h) keeps it and the
 * recording file (record/recfile.h) holds it: the memory_viz actions, the 32-byte entry and how its
 * `when` packs the time, the device and the action. A format, with no state: the tool reads a
 * recording's entries through this header alone. */
#ifndef CS_RING_ENTRY_H
#define CS_RING_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The memory_viz actions, in one place for the ring and the writers. */
typedef enum cs_action_e {
  CS_ACTION_ALLOC = 0,
  CS_ACTION_FREE_REQUESTED = 1,
  CS_ACTION_FREE_COMPLETED = 2,
  CS_ACTION_SEGMENT_ALLOC = 3,
  CS_ACTION_SEGMENT_FREE = 4,
  CS_ACTION_SEGMENT_MAP = 5,
  CS_ACTION_SEGMENT_UNMAP = 6,
  CS_ACTION_OOM = 7,
  CS_ACTION_SNAPSHOT = 8,
  CS_ACTION_OOM_STATE = 9,  /* cudasnap's own, never a trace entry: the cache at the oom before it */
  CS_ACTION_OOM_DEVICE = 10, /* the same: the device's total bytes (addr) at the oom before it */
  CS_ACTION_COUNT
} cs_action_t;

/* Inline so that the tool names the actions of a recording (cudasnap recover) without linking
 * the ring. */
static inline const char *cs_action_name(cs_action_t action) {
  static const char *const names[CS_ACTION_COUNT] = {
      [CS_ACTION_ALLOC] = "alloc",
      [CS_ACTION_FREE_REQUESTED] = "free_requested",
      [CS_ACTION_FREE_COMPLETED] = "free_completed",
      [CS_ACTION_SEGMENT_ALLOC] = "segment_alloc",
      [CS_ACTION_SEGMENT_FREE] = "segment_free",
      [CS_ACTION_SEGMENT_MAP] = "segment_map",
      [CS_ACTION_SEGMENT_UNMAP] = "segment_unmap",
      [CS_ACTION_OOM] = "oom",
      [CS_ACTION_SNAPSHOT] = "snapshot",
      [CS_ACTION_OOM_STATE] = "oom_state",
      [CS_ACTION_OOM_DEVICE] = "oom_device",
  };
  return (unsigned)action < CS_ACTION_COUNT ? names[action] : "unknown";
}

enum { CS_RING_DEVICE_BITS = 8, CS_RING_ACTION_BITS = 4, CS_RING_TIME_SHIFT = CS_RING_DEVICE_BITS + CS_RING_ACTION_BITS };

/* The time in a ring entry: ticks since the ring's start in units of 2^CS_RING_TICK_SHIFT ticks
 * (51 bits: 333 days at a 5 GHz TSC, 4.5 years of the nanosecond clock, at a resolution of 13 to
 * 64 ns), until a copy converts it in place to microseconds since the start and sets
 * CS_RING_TIME_CONVERTED. An entry is converted once, so every snapshot gives it the same time. */
enum { CS_RING_TICK_SHIFT = 6 };
#define CS_RING_TIME_CONVERTED (UINT64_C(1) << 63)
#define CS_RING_TIME_MASK ((CS_RING_TIME_CONVERTED >> CS_RING_TIME_SHIFT) - 1) /* 51 bits */

/* 32 bytes. `when` packs the time, the device and the action. */
typedef struct cs_ring_entry_s {
  uint64_t addr;      /* block or segment address; device free bytes for OOM */
  uint64_t size;      /* see snapshot-format.md section 2.5 */
  uint64_t when;      /* time << 12 | device << 4 | action; the time is in ring ticks or us since
                         the start (see CS_RING_TICK_SHIFT) in the ring, in us since the epoch in
                         a copy */
  uint32_t stack_id;  /* interned stack, 0 = none */
  uint32_t stream;    /* index into the ring's stream table */
} cs_ring_entry_t;

_Static_assert(sizeof(cs_ring_entry_t) == 32, "ring entries are 32 bytes");

static inline cs_action_t cs_ring_entry_action(const cs_ring_entry_t *e) {
  return (cs_action_t)(e->when & ((1u << CS_RING_ACTION_BITS) - 1));
}
static inline int cs_ring_entry_device(const cs_ring_entry_t *e) {
  return (int)((e->when >> CS_RING_ACTION_BITS) & ((1u << CS_RING_DEVICE_BITS) - 1));
}
/* Wall-clock microseconds since the epoch, of an entry copied out by cs_ring_copy. */
static inline uint64_t cs_ring_entry_epoch_us(const cs_ring_entry_t *e) { return e->when >> CS_RING_TIME_SHIFT; }

/* Merging the copied-out entries of several histories into one: does entry b (of one history) go
 * before entry a (of another)? By time; within one microsecond, an entry that gives memory back
 * before one that does not: two histories meet at an address only where one gives it back and the
 * other is handed it again (memory passed through and the cache's segments), never the other way.
 * The order of one history's own entries is never changed by a merge. */
static inline bool cs_ring_entry_merges_before(const cs_ring_entry_t *b, const cs_ring_entry_t *a) {
  uint64_t tb = cs_ring_entry_epoch_us(b), ta = cs_ring_entry_epoch_us(a);
  if (tb != ta) return tb < ta;
  cs_action_t xb = cs_ring_entry_action(b), xa = cs_ring_entry_action(a);
  bool b_gives = xb == CS_ACTION_FREE_REQUESTED || xb == CS_ACTION_FREE_COMPLETED || xb == CS_ACTION_SEGMENT_FREE ||
                 xb == CS_ACTION_SEGMENT_UNMAP;
  bool a_gives = xa == CS_ACTION_FREE_REQUESTED || xa == CS_ACTION_FREE_COMPLETED || xa == CS_ACTION_SEGMENT_FREE ||
                 xa == CS_ACTION_SEGMENT_UNMAP;
  return b_gives && !a_gives;
}

/* The cache at an out-of-memory answer, as the allocator saw it when it answered: what every later
 * snapshot and a recovery build that OOM's answer from (analysis/oom.h), where the blocks and
 * segments of the moment are gone. The oom entry is followed in its own history, at its time, by
 * one CS_ACTION_OOM_STATE entry holding these and one CS_ACTION_OOM_DEVICE entry holding the
 * device's total bytes, when they are known (other histories' entries may come between them once
 * merged, never another oom of the same device: cs_ring_oom_notes). All four figures below are
 * multiples of 512 bytes (block sizes are) and are packed in 512-byte units, 32 bits each, into
 * addr (reserved, allocated) and size (largest free, small free): 2 TiB at most each; larger ones
 * are not recorded. */
typedef struct cs_oom_state_s {
  uint64_t reserved;     /* the cache's segments */
  uint64_t allocated;    /* its blocks that are not free (handed out, or freed and waiting) */
  uint64_t largest_free; /* its largest free block */
  uint64_t small_free;   /* free bytes in its small pool (segments shared by requests of <= 1 MiB) */
} cs_oom_state_t;

#define CS_OOM_STATE_UNIT UINT64_C(512)
#define CS_OOM_STATE_MAX (UINT64_C(0xffffffff) * CS_OOM_STATE_UNIT)

/* Pack s into *addr and *size; false (nothing packed) when a figure does not fit. */
static inline bool cs_oom_state_pack(const cs_oom_state_t *s, uint64_t *addr, uint64_t *size) {
  const uint64_t v[4] = {s->reserved, s->allocated, s->largest_free, s->small_free};
  for (int i = 0; i < 4; i++)
    if (v[i] > CS_OOM_STATE_MAX || v[i] % CS_OOM_STATE_UNIT != 0) return false;
  *addr = v[0] / CS_OOM_STATE_UNIT | (v[1] / CS_OOM_STATE_UNIT) << 32;
  *size = v[2] / CS_OOM_STATE_UNIT | (v[3] / CS_OOM_STATE_UNIT) << 32;
  return true;
}

static inline cs_oom_state_t cs_oom_state_unpack(uint64_t addr, uint64_t size) {
  const uint64_t low = UINT64_C(0xffffffff);
  return (cs_oom_state_t){.reserved = (addr & low) * CS_OOM_STATE_UNIT,
                          .allocated = (addr >> 32) * CS_OOM_STATE_UNIT,
                          .largest_free = (size & low) * CS_OOM_STATE_UNIT,
                          .small_free = (size >> 32) * CS_OOM_STATE_UNIT};
}

/* The oom_state and oom_device entries (NULL when absent) of the oom entry entries[i] of a merged
 * history of n entries: the next of its device, of its microsecond, before another oom. */
static inline void cs_ring_oom_notes(const cs_ring_entry_t *entries, size_t n, size_t i,
                                     const cs_ring_entry_t **state, const cs_ring_entry_t **device) {
  *state = *device = 0;
  const int dev = cs_ring_entry_device(&entries[i]);
  const uint64_t us = cs_ring_entry_epoch_us(&entries[i]);
  for (size_t k = i + 1; k < n && cs_ring_entry_epoch_us(&entries[k]) == us; k++) {
    const cs_ring_entry_t *e = &entries[k];
    const cs_action_t a = cs_ring_entry_action(e);
    if (cs_ring_entry_device(e) != dev) continue;
    if (a == CS_ACTION_OOM) return;
    if (a == CS_ACTION_OOM_STATE && !*state) *state = e;
    if (a == CS_ACTION_OOM_DEVICE && !*device) *device = e;
  }
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap recover`, step two: the state at the end of a recording, by replaying its events
 * forwards (the library's allocator did the same things in the same order). Histories of several
 * rings are merged by time first. What the rings had dropped cannot be replayed: blocks allocated
 * before the oldest entry kept and never touched since are not known, and blocks whose segment was
 * made before it are placed in segments of their own extent (see cs_rr_orphans).
 *
 * Memory passed through the cache has its own ring, whose entries name their kind: segments keep
 * it, and VMM mappings that touch on one device are one expandable segment, as a dump draws the
 * mappings of one reserved range (the reservations are not recorded: mappings of two reserved
 * ranges that happen to touch are joined too). */
#ifndef CS_CLI_RECOVER_REPLAY_H
#define CS_CLI_RECOVER_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/recording.h"

typedef struct cs_rr_block_s {
  int device;
  int kind;           /* of memory passed through (memviz/passthrough.h), -1: the cache's */
  uint64_t addr, size; /* size: the bytes asked, as the history has them */
  uint64_t extent;    /* the bytes the block spans: its size in the allocator where the recording
                         holds the allocator's settings (cs_rr_replay), else size */
  uint32_t stack_id;
  bool pending;       /* free requested, not completed */
} cs_rr_block_t;

typedef struct cs_rr_segment_s {
  int device;
  int kind;           /* of memory passed through (memviz/passthrough.h), -1: the cache's */
  bool expandable;    /* touching VMM mappings, joined as a dump draws them */
  uint64_t addr, size;
  uint32_t stream;    /* the ring's stream index */
  uint32_t stack_id;
  cs_rr_block_t *blocks; /* live blocks inside, by address */
  size_t block_count;
} cs_rr_segment_t;

typedef struct cs_rr_state_s {
  cs_ring_entry_t *events; /* every ring's whole entries, merged by time */
  int8_t *kinds;           /* each event's kind of memory, -1: the cache's */
  size_t event_count;
  cs_rr_segment_t *segments; /* live at the end, by (device, address) */
  size_t segment_count;
  int device_count;          /* 1 + the largest device seen (at least 1) */
  uint64_t unplaced;         /* segments made for blocks the history names in no segment */
  cs_rr_block_t *blocks_storage; /* what the segments' blocks point into */
} cs_rr_state_t;

/* 0, or -1 when out of host memory. */
int cs_rr_replay(const cs_recording_t *rec, cs_rr_state_t *s);
void cs_rr_free(cs_rr_state_t *s);

#endif

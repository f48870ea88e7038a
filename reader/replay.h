/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to reader/: the Allocator State History view's backward replay, for one device
 * (snapshot-format.md section 3.7; MemoryViz.js MemoryView.simulate_memory and draw).
 *
 * The viewer starts from the final state: the device's segments (sorted by address) and its blocks in
 * state active_allocated or active_pending_free, at addresses recomputed from the block sizes. When
 * event idx is selected it undoes events n-1 down to idx+1 of the annotated trace (where a
 * free_requested immediately followed by a free_completed of the same address has become one
 * `free`), then places every live block in the segment found by a binary search over the segments
 * sorted by address. It throws when:
 *   - an unpaired free_requested is undone and no block exists at its address;
 *   - a segment_map is undone and no segment contains its range;
 *   - a live block's address is in no segment (`null.occupied`).
 * Any idx may be selected, so the file is clean when no step from the final state down to idx 0
 * throws. Event 0 itself is never undone.
 *
 * The replay is exact, with JavaScript Number (double) arithmetic, including the viewer's quirks
 * (segment_alloc with no segment at that address removes the last one; a segment_free above every
 * segment is inserted before the last one; segment_unmap merges with same-stream neighbours). Cost:
 * O(n log n) for n events plus O(S) per segment event for S live segments; blocks are a Fenwick tree
 * over the sorted distinct block addresses, so a removed segment range is checked in O(log n). Only
 * when segments overlap (an inconsistent trace) is every live block re-placed after each segment
 * event, since the binary search is then not a plain containment test. */
#ifndef CS_REPLAY_H
#define CS_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cs_replay_kind_e {
  CS_REPLAY_OTHER = 0, /* oom, snapshot, annotate, unknown: no effect */
  CS_REPLAY_ALLOC,
  CS_REPLAY_FREE, /* a literal `free` action (legacy), or a collapsed pair */
  CS_REPLAY_FREE_REQUESTED,
  CS_REPLAY_FREE_COMPLETED,
  CS_REPLAY_SEGMENT_ALLOC,
  CS_REPLAY_SEGMENT_FREE,
  CS_REPLAY_SEGMENT_MAP,
  CS_REPLAY_SEGMENT_UNMAP,
} cs_replay_kind_t;

/* A raw stream value, compared as the viewer's renamed streams are: numbers by value, and every
 * absent or non-numeric stream as one more name. */
typedef struct cs_replay_stream_s {
  bool is_number;
  double v;
} cs_replay_stream_t;

typedef struct cs_replay_event_s {
  cs_replay_kind_t kind;
  double addr, size; /* 0 when the action has none (oom, snapshot) */
  cs_replay_stream_t stream;
} cs_replay_event_t;

typedef struct cs_replay_segment_s {
  double addr, size;
  cs_replay_stream_t stream;
} cs_replay_segment_t;

typedef struct cs_replay_input_s {
  const cs_replay_segment_t *segments; /* the device's segments, in snapshot order */
  size_t nsegments;
  const double *blocks; /* addresses of its active blocks (recomputed from sizes) */
  size_t nblocks;
  const cs_replay_event_t *events; /* device_traces[d], raw (not collapsed), in order */
  size_t nevents;
} cs_replay_input_t;

typedef struct cs_replay_result_s {
  bool ok;
  size_t event;       /* the raw trace index of the failing step; SIZE_MAX: the final state */
  char message[160];  /* why it throws */
  size_t steps;       /* events undone */
  /* Silent quirks, for warnings. */
  size_t segment_alloc_unmatched; /* segment_alloc undone with no segment at its address */
  size_t first_segment_alloc_unmatched;
  bool overlap; /* segments overlapped at some step */
  size_t first_overlap;
  /* Traces that keep the segment list unsorted or overlapping make every step cost the whole
   * list (the viewer's own algorithm); past a work budget the replay stops, so a check stays
   * bounded on hostile input. Events before `stopped_at` (raw index) were not checked. */
  bool budget_exhausted;
  size_t stopped_at;
} cs_replay_result_t;

/* Replays one device. Returns 0, or -CS_EHOSTMEM (result not valid) without host memory. */
int cs_replay_device(const cs_replay_input_t *in, cs_replay_result_t *out);

#endif

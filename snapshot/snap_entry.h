/* SPDX-License-Identifier: Apache-2.0 */
/* A history entry in a snapshot's state: its `stream` holds the stream's index in the state's table
 * (below CS_RING_MAX_STREAMS) in its low CS_SNAP_STREAM_BITS, and above them the thread that made
 * the event (record/thread_id.h; 0: not known, as in rings: the pass-through history, a recording
 * file's). Packed there, the thread follows its entry through every merge. */
#ifndef CS_SNAP_ENTRY_H
#define CS_SNAP_ENTRY_H

#include <stdint.h>

#include "record/recfile.h"
#include "record/ring.h"
#include "record/thread_id.h"

enum { CS_SNAP_STREAM_BITS = 10 };
_Static_assert(CS_RING_MAX_STREAMS <= 1 << CS_SNAP_STREAM_BITS, "stream indexes fit below the thread");
_Static_assert(CS_SNAP_STREAM_BITS + CS_THREAD_ID_BITS <= 32, "a thread fits above the stream index");

static inline uint32_t cs_snap_entry_stream(const cs_ring_entry_t *e) {
  return e->stream & ((UINT32_C(1) << CS_SNAP_STREAM_BITS) - 1);
}
static inline uint32_t cs_snap_entry_thread(const cs_ring_entry_t *e) { return e->stream >> CS_SNAP_STREAM_BITS; }

/* A history entry's stack id, and the kind of memory passed through that it is of (-1: the
 * cache's): the pass-through history's entries keep their kind in their stack ids' top bits, as
 * the recording file's do (record/recfile.h). */
static inline uint32_t cs_snap_entry_stack(const cs_ring_entry_t *e) { return e->stack_id & CS_RECFILE_STACK_MASK; }
static inline int cs_snap_entry_kind(const cs_ring_entry_t *e) { return cs_recfile_stack_kind(e->stack_id); }

#endif

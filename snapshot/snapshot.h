/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots: a frozen copy of the allocators' state and history (cs_snap_state_t, whose types are
 * snapshot/snap_state.h's), and the writer that turns it into the memory_viz object (docs/design.md
 * section 4; snapshot-format.md sections 2 and 8) through an emitter, JSON or pickle.
 *
 * The copy is taken while every allocator's lock is held (the caller's job), so the final state and
 * the trace agree: the trace replays backwards from the state. Writing happens afterwards, with no
 * lock held, symbolizing each distinct stack once. */
#ifndef CS_SNAPSHOT_H
#define CS_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocator/allocator.h"
#include "memviz/emit.h"
#include "memviz/passthrough.h"
#include "record/intern.h"
#include "record/ring.h"
#include "record/thread_log.h"
#include "snapshot/snap_state.h"
#include "snapshot/symbolize.h"

/* Empty state for device_count devices. */
int cs_snap_state_init(cs_snap_state_t *s, int device_count);
void cs_snap_state_free(cs_snap_state_t *s);

/* Copy one allocator of `device`. pre: its lock is held (cs_allocator_lock). */
void cs_snap_state_add_allocator(cs_snap_state_t *s, int device, cs_allocator_t *a);

/* Room for `entries` history entries, allocated and touched now: call it before taking the locks
 * that cs_snap_state_add_history needs (it grows the room itself otherwise). 0 or -CS_EHOSTMEM. */
int cs_snap_state_reserve_history(cs_snap_state_t *s, size_t entries);

/* A segment of pass-through memory of `kind` on device, then its blocks (each allocated, whole). */
void cs_snap_state_add_passthrough_segment(cs_snap_state_t *s, int device, uintptr_t addr, uintptr_t stream,
                                           cs_passthrough_kind_t kind, bool expandable, uint32_t stack_id);
void cs_snap_state_add_passthrough_block(cs_snap_state_t *s, size_t size, uint32_t stack_id);
void cs_snap_state_add_other(cs_snap_state_t *s, cs_passthrough_kind_t kind, int device, size_t size,
                             uint32_t stack_id);

/* Copy one ring's history. pre: the ring's owner lock is held (for cudasnap, every allocator's
 * lock: the state and the history agree only if no event is half-way). */
void cs_snap_state_add_history(cs_snap_state_t *s, cs_ring_t *ring);
/* The same for a history kept in per-thread chunks (record/thread_log.h). */
void cs_snap_state_add_log(cs_snap_state_t *s, cs_thread_log_t *log);

/* Sort segments by (device, address), as PyTorch lists them, and merge the histories of several
 * rings by time. Call after the copies, with no lock held. */
void cs_snap_state_finish(cs_snap_state_t *s);

/* Write the snapshot object and finish the emitter (which is freed). Returns the emitter's status
 * (0 or an errno). Symbolizes through sym (NULL: frame lists are left empty). */
int cs_snapshot_write(const cs_snap_state_t *s, const cs_intern_t *intern, cs_symbolizer_t *sym,
                      const cs_snapshot_meta_t *meta, cs_emitter_t *e);

/* Record one allocator event of `device` in the ring (what an allocator observer does). */
void cs_snap_record_event(cs_ring_t *ring, int device, const cs_trace_event_t *event);
/* The same in a per-thread chunked history. */
void cs_snap_log_event(cs_thread_log_t *log, int device, const cs_trace_event_t *event);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Pools drawn from inside (contract in snapshot/snap_pools.h). */
#include "snapshot/snap_pools.h"

#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "phases/phases.h"
#include "record/recfile.h"
#include "record/ticks.h"
#include "snapshot/snap_grow.h"

/* A tick reading as wall-clock microseconds (the conversion phases/phases.c makes). */
static uint64_t cs_pools_epoch_us(uint64_t ticks) {
  cs_ticks_origin_t origin = cs_ticks_origin();
  cs_ticks_anchor_t now = cs_ticks_anchor();
  double ns_per_tick = cs_ticks_rate(&origin.anchor, &now);
  if (ns_per_tick <= 0.0) ns_per_tick = 1.0;
  uint64_t since = ticks > origin.anchor.ticks ? ticks - origin.anchor.ticks : 0;
  return origin.epoch_us + (uint64_t)((double)since * ns_per_tick / 1000.0);
}

/* A synthetic trace entry, and the first index of the history it may go to. */
typedef struct cs_pool_event_s {
  cs_ring_entry_t entry;
  size_t min_index;
  size_t order; /* creation order, for a stable sort */
  const char *user_metadata; /* a named region's alloc: its name */
} cs_pool_event_t;

typedef struct cs_pool_build_s {
  cs_snap_block_t *blocks;
  size_t count, capacity;
  cs_pool_event_t *events;
  size_t nevents, event_capacity, named_events;
  bool oom;
} cs_pool_build_t;

static void cs_pool_block(cs_pool_build_t *b, cs_snap_block_t blk) {
  if (!cs_snap_grow((void **)&b->blocks, &b->capacity, b->count + 1, sizeof *b->blocks)) {
    b->oom = true;
    return;
  }
  b->blocks[b->count++] = blk;
}

static void cs_pool_event(cs_pool_build_t *b, cs_action_t action, int device, uintptr_t addr, uint64_t size,
                          uint32_t stream, uint32_t stack, uint64_t us, size_t min_index, const char *user_metadata) {
  if (!cs_snap_grow((void **)&b->events, &b->event_capacity, b->nevents + 1, sizeof *b->events)) {
    b->oom = true;
    return;
  }
  uint64_t device_bits = (unsigned)device & ((1u << CS_RING_DEVICE_BITS) - 1);
  cs_ring_entry_t e = {.addr = addr, .size = size, .stack_id = stack, .stream = stream,
                       .when = us << CS_RING_TIME_SHIFT | device_bits << CS_RING_ACTION_BITS | (uint64_t)action};
  b->events[b->nevents] =
      (cs_pool_event_t){.entry = e, .min_index = min_index, .order = b->nevents, .user_metadata = user_metadata};
  b->nevents++;
  b->named_events += user_metadata != NULL;
}

/* The index after the last history entry of `device` that touches [lo, hi): synthetic events about
 * that range go after it. */
static size_t cs_pool_after_last_touch(const cs_snap_state_t *s, int device, uintptr_t lo, uintptr_t hi) {
  for (size_t i = s->entry_count; i-- > 0;) {
    const cs_ring_entry_t *e = &s->entries[i];
    cs_action_t a = cs_ring_entry_action(e);
    if (cs_ring_entry_device(e) != device || a == CS_ACTION_OOM || a == CS_ACTION_OOM_STATE ||
        a == CS_ACTION_OOM_DEVICE || a == CS_ACTION_SNAPSHOT)
      continue;
    if (e->addr < hi && e->addr + (e->size ? e->size : 1) > lo) return i + 1;
  }
  return 0;
}

/* A synthetic event's stack id: with the segment's kind when that is memory passed through, as the
 * pass-through history's own entries (cs_snap_entry_kind). */
static uint32_t cs_pool_stack(const cs_snap_segment_t *seg, uint32_t stack) {
  return seg->kind >= 0 ? cs_recfile_kind_stack(seg->kind, stack) : stack;
}

/* One allocated block [addr, addr + blk->size) holding heaps [first, last): its pieces and events. */
static void cs_pool_split(cs_pool_build_t *b, const cs_snap_state_t *s, const cs_snap_segment_t *seg,
                          const cs_snap_block_t *blk, uintptr_t addr, const cs_pool_list_t *pools, size_t first,
                          size_t last) {
  uint32_t stream = 0;
  for (uint32_t k = 0; k < s->streams.count; k++)
    if (s->streams.handles[k] == seg->stream) stream = k;
  size_t min_index = cs_pool_after_last_touch(s, seg->device, addr, addr + blk->size);
  uintptr_t end = addr + blk->size, requested_end = addr + blk->requested;
  uint64_t first_us = cs_pools_epoch_us(pools->heaps[first].ticks);
  /* the block as the program allocated it ends where the first heap is registered */
  uint32_t own = cs_pool_stack(seg, blk->stack_id);
  cs_pool_event(b, CS_ACTION_FREE_REQUESTED, seg->device, addr, blk->requested, stream, own, first_us, min_index, NULL);
  cs_pool_event(b, CS_ACTION_FREE_COMPLETED, seg->device, addr, blk->requested, stream, own, first_us, min_index, NULL);
  uintptr_t at = addr;
  for (size_t h = first; h < last; h++) {
    const cs_pool_heap_t *heap = &pools->heaps[h];
    uint64_t heap_us = cs_pools_epoch_us(heap->ticks);
    if (heap->base > at) { /* the block's own bytes before the heap */
      size_t n = heap->base - at;
      cs_pool_block(b, (cs_snap_block_t){.size = n, .requested = n, .state = CS_BLOCK_ALLOCATED, .stack_id = blk->stack_id});
      cs_pool_event(b, CS_ACTION_ALLOC, seg->device, at, n, stream, own, heap_us, min_index, NULL);
    }
    at = heap->base;
    for (size_t r = heap->first_region; r < heap->first_region + heap->region_count; r++) {
      const cs_pool_region_t *reg = &pools->regions[r];
      if (reg->addr > at)
        cs_pool_block(b, (cs_snap_block_t){.size = reg->addr - at, .state = CS_BLOCK_FREE});
      const char *name = reg->name_id ? cs_phases_name_text(reg->name_id) : NULL;
      cs_pool_block(b, (cs_snap_block_t){.size = reg->size, .requested = reg->size, .state = CS_BLOCK_ALLOCATED,
                                         .stack_id = reg->stack_id, .user_metadata = name});
      /* the name on the alloc too: the timelines' hover text reads the trace, not the blocks */
      cs_pool_event(b, CS_ACTION_ALLOC, seg->device, reg->addr, reg->size, stream, cs_pool_stack(seg, reg->stack_id),
                    cs_pools_epoch_us(reg->ticks), min_index, name);
      at = reg->addr + reg->size;
    }
    if (heap->base + heap->size > at)
      cs_pool_block(b, (cs_snap_block_t){.size = heap->base + heap->size - at, .state = CS_BLOCK_FREE});
    at = heap->base + heap->size;
  }
  if (at < end) { /* after the last heap: the block's own bytes (allocated up to its request), then slack */
    if (at < requested_end) {
      size_t n = requested_end - at;
      cs_pool_block(b, (cs_snap_block_t){.size = n, .requested = n, .state = CS_BLOCK_ALLOCATED, .stack_id = blk->stack_id});
      cs_pool_event(b, CS_ACTION_ALLOC, seg->device, at, n, stream, own, first_us, min_index, NULL);
      at = requested_end;
    }
    if (at < end) cs_pool_block(b, (cs_snap_block_t){.size = end - at, .state = CS_BLOCK_FREE});
  }
}

static int cs_pool_event_cmp(const void *x, const void *y) {
  const cs_pool_event_t *a = x, *b = y;
  if (a->min_index != b->min_index) return a->min_index < b->min_index ? -1 : 1;
  uint64_t ta = cs_ring_entry_epoch_us(&a->entry), tb = cs_ring_entry_epoch_us(&b->entry);
  if (ta != tb) return ta < tb ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
}

/* Merge the events into the history: each at its time, never before its min_index, times kept
 * non-decreasing. */
static int cs_pool_merge_events(cs_snap_state_t *s, cs_pool_build_t *b) {
  if (b->nevents == 0) return 0;
  qsort(b->events, b->nevents, sizeof *b->events, cs_pool_event_cmp);
  size_t total = s->entry_count + b->nevents;
  cs_ring_entry_t *out = malloc(total * sizeof *out);
  cs_snap_entry_note_t *notes = b->named_events ? malloc(b->named_events * sizeof *notes) : NULL;
  if (!out || (b->named_events && !notes)) {
    free(out);
    free(notes);
    return -CS_EHOSTMEM;
  }
  size_t nnotes = 0;
  size_t i = 0, k = 0, n = 0;
  uint64_t last_us = 0;
  while (i < s->entry_count || k < b->nevents) {
    bool take_event = false;
    if (k < b->nevents) {
      const cs_pool_event_t *ev = &b->events[k];
      take_event = i == s->entry_count ||
                   (i >= ev->min_index && cs_ring_entry_epoch_us(&s->entries[i]) > cs_ring_entry_epoch_us(&ev->entry));
    }
    if (take_event && b->events[k].user_metadata)
      notes[nnotes++] = (cs_snap_entry_note_t){.index = n, .user_metadata = b->events[k].user_metadata};
    cs_ring_entry_t e = take_event ? b->events[k++].entry : s->entries[i++];
    uint64_t us = cs_ring_entry_epoch_us(&e);
    if (take_event && us < last_us) /* placed after an entry stamped later: take its time */
      e.when = (e.when & ((UINT64_C(1) << CS_RING_TIME_SHIFT) - 1)) | last_us << CS_RING_TIME_SHIFT;
    else if (us > last_us)
      last_us = us;
    out[n++] = e;
  }
  free(s->entries);
  s->entries = out;
  s->entry_count = s->entry_capacity = total;
  free(s->copy_threads); /* the copies are done: no room kept for another's threads */
  s->copy_threads = NULL;
  free(s->entry_notes);
  s->entry_notes = notes;
  s->entry_note_count = nnotes;
  return 0;
}

int cs_snap_state_add_pools(cs_snap_state_t *s, const cs_pool_list_t *pools, size_t *drawn) {
  *drawn = 0;
  if (!pools || pools->heap_count == 0 || s->error || s->segment_count == 0) return 0;
  /* the segments' block ranges, to put back if memory runs out half-way */
  size_t (*saved)[2] = malloc(s->segment_count * sizeof *saved);
  if (!saved) return -CS_EHOSTMEM;
  cs_pool_build_t b = {.oom = false};
  for (size_t si = 0; si < s->segment_count && !b.oom; si++) {
    cs_snap_segment_t *seg = &s->segments[si];
    saved[si][0] = seg->first_block;
    saved[si][1] = seg->block_count;
    size_t first_block = b.count;
    uintptr_t addr = seg->addr;
    for (size_t bi = 0; bi < seg->block_count && !b.oom; bi++) {
      const cs_snap_block_t *blk = &s->blocks[seg->first_block + bi];
      /* the heaps inside this block, if it is allocated (heaps are sorted by address) */
      size_t first = pools->heap_count, last = first;
      for (size_t h = 0; blk->state == CS_BLOCK_ALLOCATED && h < pools->heap_count; h++) {
        const cs_pool_heap_t *heap = &pools->heaps[h];
        bool inside = heap->device == seg->device && heap->base >= addr && heap->base + heap->size <= addr + blk->size;
        if (inside && first == pools->heap_count) first = h;
        if (inside) last = h + 1;
      }
      if (first < last) {
        cs_pool_split(&b, s, seg, blk, addr, pools, first, last);
        *drawn += last - first;
      } else {
        cs_pool_block(&b, *blk);
      }
      addr += blk->size;
    }
    seg->first_block = first_block;
    seg->block_count = b.count - first_block;
  }
  int rc = b.oom ? -CS_EHOSTMEM : cs_pool_merge_events(s, &b);
  if (rc == 0) {
    free(s->blocks);
    s->blocks = b.blocks;
    s->block_count = b.count;
    s->block_capacity = b.capacity;
  } else {
    for (size_t si = 0; si < s->segment_count; si++) {
      s->segments[si].first_block = saved[si][0];
      s->segments[si].block_count = saved[si][1];
    }
    free(b.blocks);
    *drawn = 0;
  }
  free(saved);
  free(b.events);
  return rc;
}

void cs_snap_write_pools(cs_emitter_t *e, const cs_pool_list_t *pools) {
  cs_emit_list_begin(e);
  for (size_t h = 0; pools && h < pools->heap_count; h++) {
    const cs_pool_heap_t *heap = &pools->heaps[h];
    uint64_t registered = 0;
    for (size_t r = heap->first_region; r < heap->first_region + heap->region_count; r++)
      registered += pools->regions[r].size;
    cs_emit_dict_begin(e);
    cs_emit_key(e, "device");
    cs_emit_int(e, heap->device);
    cs_emit_key(e, "address");
    cs_emit_int(e, (int64_t)heap->base);
    cs_emit_key(e, "size");
    cs_emit_int(e, (int64_t)heap->size);
    cs_emit_key(e, "registered_bytes");
    cs_emit_int(e, (int64_t)registered);
    cs_emit_key(e, "regions");
    cs_emit_int(e, (int64_t)heap->region_count);
    cs_emit_dict_end(e);
  }
  cs_emit_list_end(e);
}

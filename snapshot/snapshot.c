/* SPDX-License-Identifier: Apache-2.0 */
#include "snapshot/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "common/cs_error.h"
#include "common/cs_populate.h"
#include "memviz/allocator_frames.h"
#include "snapshot/annotations.h"
#include "snapshot/snap_entry.h"
#include "snapshot/snap_grow.h"
#include "snapshot/snap_pools.h"
#include "snapshot/snap_summary.h"

/* ------------------------------------------------------------------------------------------------
 * The frozen copy
 * ----------------------------------------------------------------------------------------------*/

int cs_snap_state_init(cs_snap_state_t *s, int device_count) {
  memset(s, 0, sizeof *s);
  s->device_count = device_count < CS_SNAP_MAX_DEVICES ? device_count : CS_SNAP_MAX_DEVICES;
  for (int d = 0; d < CS_SNAP_MAX_DEVICES; d++) cs_stats_init(&s->stats[d], -1);
  cs_stream_table_init(&s->streams);
  return 0;
}

void cs_snap_state_free(cs_snap_state_t *s) {
  free(s->segments);
  free(s->blocks);
  free(s->entries);
  free(s->copy_threads);
  free(s->entry_notes);
  free(s->others);
  memset(s, 0, sizeof *s);
}

typedef struct cs_snap_copy_s {
  cs_snap_state_t *state;
  int device;
} cs_snap_copy_t;

static void cs_snap_copy_block(void *ctx, const cs_segment_info_t *seg, const cs_block_info_t *blk) {
  cs_snap_copy_t *c = ctx;
  cs_snap_state_t *s = c->state;
  if (s->error) return;
  if (!cs_snap_grow((void **)&s->blocks, &s->block_capacity, s->block_count + 1, sizeof *s->blocks)) {
    s->error = -CS_EHOSTMEM;
    return;
  }
  /* A segment's blocks come together, starting at the segment's address. */
  if (blk->addr == seg->addr) {
    if (!cs_snap_grow((void **)&s->segments, &s->segment_capacity, s->segment_count + 1, sizeof *s->segments)) {
      s->error = -CS_EHOSTMEM;
      return;
    }
    s->segments[s->segment_count++] = (cs_snap_segment_t){
        .device = c->device, .addr = seg->addr, .size = seg->size, .stream = seg->stream,
        .small = seg->small, .stack_id = seg->stack_id, .first_block = s->block_count, .kind = -1};
  }
  s->segments[s->segment_count - 1].block_count++;
  s->blocks[s->block_count++] = (cs_snap_block_t){.size = blk->size, .requested = blk->requested,
                                                  .state = blk->state, .stack_id = blk->stack_id};
}

void cs_snap_state_add_allocator(cs_snap_state_t *s, int device, cs_allocator_t *a) {
  if (device < 0 || device >= CS_SNAP_MAX_DEVICES) return;
  cs_snap_copy_t c = {.state = s, .device = device};
  cs_allocator_visit_locked(a, cs_snap_copy_block, &c);
  cs_stats_t one;
  cs_allocator_get_stats_locked(a, &one);
  cs_stats_merge(&s->stats[device], &one);
  if (device >= s->device_count) s->device_count = device + 1;
}

void cs_snap_state_add_passthrough_segment(cs_snap_state_t *s, int device, uintptr_t addr, uintptr_t stream,
                                           cs_passthrough_kind_t kind, bool expandable, uint32_t stack_id) {
  if (s->error || device < 0 || device >= CS_SNAP_MAX_DEVICES) return;
  if (!cs_snap_grow((void **)&s->segments, &s->segment_capacity, s->segment_count + 1, sizeof *s->segments)) {
    s->error = -CS_EHOSTMEM;
    return;
  }
  s->segments[s->segment_count++] = (cs_snap_segment_t){
      .device = device, .addr = addr, .stream = stream, .stack_id = stack_id, .first_block = s->block_count,
      .kind = (int)kind, .expandable = expandable};
  if (device >= s->device_count) s->device_count = device + 1;
}

void cs_snap_state_add_passthrough_block(cs_snap_state_t *s, size_t size, uint32_t stack_id) {
  if (s->error || s->segment_count == 0) return;
  if (!cs_snap_grow((void **)&s->blocks, &s->block_capacity, s->block_count + 1, sizeof *s->blocks)) {
    s->error = -CS_EHOSTMEM;
    return;
  }
  cs_snap_segment_t *seg = &s->segments[s->segment_count - 1];
  seg->size += size;
  seg->block_count++;
  s->blocks[s->block_count++] =
      (cs_snap_block_t){.size = size, .requested = size, .state = CS_BLOCK_ALLOCATED, .stack_id = stack_id};
}

void cs_snap_state_add_other(cs_snap_state_t *s, cs_passthrough_kind_t kind, int device, size_t size,
                             uint32_t stack_id) {
  if (s->error) return;
  if (!cs_snap_grow((void **)&s->others, &s->other_capacity, s->other_count + 1, sizeof *s->others)) {
    s->error = -CS_EHOSTMEM;
    return;
  }
  s->others[s->other_count++] = (cs_snap_other_t){.kind = kind, .device = device, .size = size, .stack_id = stack_id};
}

int cs_snap_state_reserve_history(cs_snap_state_t *s, size_t entries) {
  if (entries <= s->entry_capacity) return 0;
  cs_ring_entry_t *p = realloc(s->entries, entries * sizeof *p);
  if (!p) return s->error = -CS_EHOSTMEM;
  s->entries = p;
  uint32_t *t = realloc(s->copy_threads, entries * sizeof *t);
  if (!t) return s->error = -CS_EHOSTMEM;
  s->copy_threads = t;
  /* backed now, so that the page faults are not taken under the allocators' locks */
  cs_populate(p + s->entry_capacity, (entries - s->entry_capacity) * sizeof *p);
  cs_populate(t + s->entry_capacity, (entries - s->entry_capacity) * sizeof *t);
  s->entry_capacity = entries;
  return 0;
}

/* The n entries just copied to the end of the state's history become one of its histories: the
 * source's stream indexes become the state's, with the entries' threads above them (threads NULL:
 * not known). */
static void cs_snap_state_adopt(cs_snap_state_t *s, size_t n, uint64_t dropped, const cs_stream_table_t *streams,
                                const uint32_t *threads) {
  cs_ring_entry_t *copied = s->entries + s->entry_count;
  uint32_t map[CS_RING_MAX_STREAMS];
  for (uint32_t k = 0; k < streams->count; k++) map[k] = cs_stream_table_index(&s->streams, streams->handles[k]);
  for (size_t i = 0; i < n; i++) {
    cs_ring_entry_t *e = &copied[i];
    uint32_t thread = threads && threads[i] < UINT32_C(1) << CS_THREAD_ID_BITS ? threads[i] : 0;
    e->stream = map[e->stream < streams->count ? e->stream : streams->count - 1] | thread << CS_SNAP_STREAM_BITS;
    int device = cs_ring_entry_device(e);
    if (device >= s->device_count) s->device_count = device + 1;
  }
  if (s->history_count < CS_SNAP_MAX_HISTORIES) s->history_start[s->history_count++] = s->entry_count;
  s->entry_count += n;
  s->dropped += dropped;
}

static bool cs_snap_state_room(cs_snap_state_t *s, size_t n) {
  return s->entry_count + n <= s->entry_capacity || cs_snap_state_reserve_history(s, s->entry_count + n) == 0;
}

void cs_snap_state_add_history(cs_snap_state_t *s, cs_ring_t *ring) {
  if (s->error || ring->capacity == 0 || !cs_snap_state_room(s, ring->capacity)) return;
  uint64_t dropped = 0;
  size_t n = cs_ring_copy(ring, s->entries + s->entry_count, &dropped);
  cs_snap_state_adopt(s, n, dropped, &ring->streams, NULL);
}

void cs_snap_state_add_log(cs_snap_state_t *s, cs_thread_log_t *log) {
  size_t room = cs_thread_log_room(log);
  if (s->error || room == 0 || !cs_snap_state_room(s, room)) return;
  uint64_t dropped = 0;
  uint32_t *threads = s->copy_threads ? s->copy_threads + s->entry_count : NULL;
  size_t n = cs_thread_log_copy(log, s->entries + s->entry_count, threads, &dropped);
  cs_snap_state_adopt(s, n, dropped, &log->streams, threads);
}

/* Merge the sorted runs entries[lo, mid) and [mid, hi) through tmp, keeping the order of each
 * run (entries of one ring keep their order: an alloc and its free can share a microsecond). */
static void cs_snap_merge(cs_ring_entry_t *entries, cs_ring_entry_t *tmp, size_t lo, size_t mid, size_t hi) {
  size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi) tmp[k++] = cs_ring_entry_merges_before(&entries[j], &entries[i]) ? entries[j++] : entries[i++];
  while (i < mid) tmp[k++] = entries[i++];
  while (j < hi) tmp[k++] = entries[j++];
  memcpy(entries + lo, tmp + lo, (hi - lo) * sizeof *entries);
}

/* Several rings (several contexts or devices): one history in time order, a stable merge of the
 * rings' copies, each already in time order (all rings count from the process's one time origin).
 * A ring's own order is never changed, so an alloc and its free stay in order even where they
 * share a microsecond. Without the memory for the merge each ring's history stays in one piece:
 * rings of different devices still replay, but two contexts of one device can reuse each other's
 * addresses, and their interleaving is then lost. */
static void cs_snap_merge_histories(cs_snap_state_t *s) {
  int runs = s->history_count;
  if (runs < 2 || s->entry_count == 0) return;
  cs_ring_entry_t *tmp = malloc(s->entry_count * sizeof *tmp);
  if (!tmp) return;
  size_t start[CS_SNAP_MAX_HISTORIES + 1];
  memcpy(start, s->history_start, (size_t)runs * sizeof *start);
  start[runs] = s->entry_count;
  while (runs > 1) {
    int merged = 0;
    for (int i = 0; i < runs; i += 2) {
      if (i + 1 < runs) cs_snap_merge(s->entries, tmp, start[i], start[i + 1], start[i + 2]);
      start[merged++] = start[i];
    }
    start[merged] = s->entry_count;
    runs = merged;
  }
  free(tmp);
}

static int cs_snap_segment_cmp(const void *x, const void *y) {
  const cs_snap_segment_t *a = x, *b = y;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  return (a->addr > b->addr) - (a->addr < b->addr);
}

void cs_snap_state_finish(cs_snap_state_t *s) {
  if (s->segment_count > 1) qsort(s->segments, s->segment_count, sizeof *s->segments, cs_snap_segment_cmp);
  cs_snap_merge_histories(s);
}

/* ------------------------------------------------------------------------------------------------
 * Recording: allocator events become ring entries, the actions one to one
 * ----------------------------------------------------------------------------------------------*/

/* The ring action of an allocator's event, and what its entry's address slot carries. */
static cs_action_t cs_snap_event_action(const cs_trace_event_t *event, uint64_t *addr) {
  static const cs_action_t actions[] = {
      [CS_TRACE_ALLOC] = CS_ACTION_ALLOC,
      [CS_TRACE_FREE_REQUESTED] = CS_ACTION_FREE_REQUESTED,
      [CS_TRACE_FREE_COMPLETED] = CS_ACTION_FREE_COMPLETED,
      [CS_TRACE_SEGMENT_ALLOC] = CS_ACTION_SEGMENT_ALLOC,
      [CS_TRACE_SEGMENT_FREE] = CS_ACTION_SEGMENT_FREE,
      [CS_TRACE_OOM] = CS_ACTION_OOM,
  };
  /* an OOM has no address: its slot carries the device's free bytes */
  *addr = event->action == CS_TRACE_OOM ? event->device_free : event->addr;
  return actions[event->action];
}

/* An OOM's cache figures as its oom_state entry's addr and size (record/ring_entry.h); false when
 * they do not fit one. */
static bool cs_snap_oom_state(const cs_oom_note_t *note, uint64_t *addr, uint64_t *size) {
  const cs_cache_figures_t *c = &note->cache;
  cs_oom_state_t state = {.reserved = c->reserved, .allocated = c->allocated, .largest_free = c->largest_free,
                          .small_free = c->small_free};
  return cs_oom_state_pack(&state, addr, size);
}

/* An OOM and, after it in the same history at its time, the cache's and the device's figures
 * (record/ring_entry.h). Apart from the other events, which end in a tail call to the push. */
CS_COLD static void cs_snap_record_oom(cs_ring_t *ring, int device, const cs_trace_event_t *event) {
  uint64_t addr, size;
  cs_ring_push(ring, CS_ACTION_OOM, device, event->device_free, event->size, event->stream, event->stack_id);
  const cs_oom_note_t *note = (const cs_oom_note_t *)event->addr;
  if (note == NULL) return;
  if (cs_snap_oom_state(note, &addr, &size))
    cs_ring_push_same_time(ring, CS_ACTION_OOM_STATE, device, addr, size, 0, 0);
  if (note->device_total > 0)
    cs_ring_push_same_time(ring, CS_ACTION_OOM_DEVICE, device, note->device_total, 0, 0, 0);
}

CS_COLD static void cs_snap_log_oom(cs_thread_log_t *log, int device, const cs_trace_event_t *event) {
  uint64_t addr, size;
  cs_thread_log_push(log, CS_ACTION_OOM, device, event->device_free, event->size, event->stream, event->stack_id);
  const cs_oom_note_t *note = (const cs_oom_note_t *)event->addr;
  if (note == NULL) return;
  if (cs_snap_oom_state(note, &addr, &size))
    cs_thread_log_push_same_time(log, CS_ACTION_OOM_STATE, device, addr, size, 0, 0);
  if (note->device_total > 0)
    cs_thread_log_push_same_time(log, CS_ACTION_OOM_DEVICE, device, note->device_total, 0, 0, 0);
}

void cs_snap_record_event(cs_ring_t *ring, int device, const cs_trace_event_t *event) {
  uint64_t addr;
  cs_action_t action = cs_snap_event_action(event, &addr);
  if (CS_UNLIKELY(action == CS_ACTION_OOM)) cs_snap_record_oom(ring, device, event);
  else if (event->completes_now) /* right after its free_requested, in the same call and moment */
    cs_ring_push_same_time(ring, action, device, addr, event->size, event->stream, event->stack_id);
  else
    cs_ring_push(ring, action, device, addr, event->size, event->stream, event->stack_id);
}

void cs_snap_log_event(cs_thread_log_t *log, int device, const cs_trace_event_t *event) {
  uint64_t addr;
  cs_action_t action = cs_snap_event_action(event, &addr);
  if (CS_UNLIKELY(action == CS_ACTION_OOM)) cs_snap_log_oom(log, device, event);
  else if (event->completes_now)
    cs_thread_log_push_same_time(log, action, device, addr, event->size, event->stream, event->stack_id);
  else
    cs_thread_log_push(log, action, device, addr, event->size, event->stream, event->stack_id);
}

/* ------------------------------------------------------------------------------------------------
 * Writing
 * ----------------------------------------------------------------------------------------------*/

typedef struct cs_snap_writer_s {
  const cs_snap_state_t *state;
  const cs_intern_t *intern;
  cs_symbolizer_t *sym;
  cs_emitter_t *e;
} cs_snap_writer_t;

/* One frame as PyTorch writes them; `inlined` marks a function the compiler inlined into the next
 * frame's (the two are one return address: docs/snapshots.md). */
static void cs_snap_write_frame(cs_emitter_t *e, const cs_frame_t *f, bool inlined) {
  cs_emit_dict_begin(e);
  cs_emit_kv_str(e, "filename", f->filename);
  cs_emit_kv_int(e, "line", f->line);
  cs_emit_kv_str(e, "name", f->name);
  if (inlined) cs_emit_kv_bool(e, "inlined", true);
  cs_emit_dict_end(e);
}

/* A stack as a frame list, innermost first; written once and referenced (pickle) or copied (JSON)
 * afterwards. The reference is tried first: a list was only ever shared for a stack the intern
 * table knows, and ids stay valid, so a hit needs no lookup. */
static void cs_snap_write_frames(cs_snap_writer_t *w, uint32_t stack_id) {
  cs_emitter_t *e = w->e;
  if (stack_id && w->intern && cs_emit_frames_ref(e, stack_id)) return;
  size_t n = 0;
  const uintptr_t *pcs = stack_id && w->intern ? cs_intern_get(w->intern, stack_id, &n) : NULL;
  cs_emit_list_begin(e);
  for (size_t i = 0; pcs && w->sym && i < n; i++) {
    const cs_frame_t *frames;
    const size_t count = cs_symbolize_frames(w->sym, pcs[i], 0, &frames);
    for (size_t k = 0; k < count; k++) cs_snap_write_frame(e, &frames[k], k + 1 < count);
  }
  cs_emit_list_end(e);
  if (pcs) cs_emit_frames_done(e, stack_id);
}

/* CUDASNAP_STACKS as the snapshot's metadata says it (the variable's own words). */
static const char *cs_snap_stacks_word(cs_stacks_t stacks) {
  switch (stacks) {
  case CS_STACKS_ALL: return "all";
  case CS_STACKS_NATIVE: return "native";
  case CS_STACKS_PYTHON: return "python";
  case CS_STACKS_NONE: break;
  }
  return "none";
}

static const char *cs_snap_state_name(cs_block_state_t state) {
  switch (state) {
  case CS_BLOCK_ALLOCATED: return "active_allocated";
  case CS_BLOCK_PENDING: return "active_pending_free";
  default: return "inactive";
  }
}

static void cs_snap_write_segment(cs_snap_writer_t *w, const cs_snap_segment_t *seg) {
  cs_emitter_t *e = w->e;
  const cs_snap_block_t *blocks = w->state->blocks + seg->first_block;
  int64_t allocated = 0, active = 0, requested = 0;
  for (size_t i = 0; i < seg->block_count; i++) {
    if (blocks[i].state == CS_BLOCK_FREE) continue;
    active += (int64_t)blocks[i].size;
    requested += (int64_t)blocks[i].requested;
    if (blocks[i].state == CS_BLOCK_ALLOCATED) allocated += (int64_t)blocks[i].size;
  }
  cs_emit_dict_begin(e);
  cs_emit_kv_int(e, "device", seg->device);
  cs_emit_kv_int(e, "address", (int64_t)seg->addr);
  cs_emit_kv_int(e, "total_size", (int64_t)seg->size);
  cs_emit_kv_int(e, "allocated_size", allocated);
  cs_emit_kv_int(e, "active_size", active);
  cs_emit_kv_int(e, "requested_size", requested);
  cs_emit_kv_int(e, "stream", (int64_t)seg->stream);
  cs_emit_kv_str(e, "segment_type", seg->small ? "small" : "large");
  cs_emit_key(e, "segment_pool_id");
  cs_emit_tuple_begin(e);
  cs_emit_int(e, 0);
  cs_emit_int(e, 0);
  cs_emit_tuple_end(e);
  cs_emit_kv_bool(e, "is_expandable", seg->expandable);
  cs_emit_key(e, "frames");
  cs_snap_write_frames(w, seg->stack_id);
  cs_emit_key(e, "cudasnap");
  cs_emit_dict_begin(e);
  cs_emit_kv_str(e, "kind", seg->kind < 0 ? "cached" : cs_passthrough_kind_name((cs_passthrough_kind_t)seg->kind));
  cs_emit_dict_end(e);
  cs_emit_key(e, "blocks");
  cs_emit_list_begin(e);
  uintptr_t addr = seg->addr;
  for (size_t i = 0; i < seg->block_count; i++) {
    const cs_snap_block_t *b = &blocks[i];
    cs_emit_dict_begin(e);
    cs_emit_kv_int(e, "address", (int64_t)addr);
    cs_emit_kv_int(e, "size", (int64_t)b->size);
    cs_emit_kv_int(e, "requested_size", (int64_t)b->requested);
    cs_emit_kv_str(e, "state", cs_snap_state_name(b->state));
    if (b->user_metadata) cs_emit_kv_str(e, "user_metadata", b->user_metadata);
    cs_emit_key(e, "frames");
    cs_snap_write_frames(w, b->state == CS_BLOCK_FREE ? 0 : b->stack_id);
    cs_emit_dict_end(e);
    addr += b->size;
  }
  cs_emit_list_end(e);
  cs_emit_dict_end(e);
}

/* A trace entry's own `cudasnap` dict (docs/memory-kinds.md, docs/snapshots.md): the kind of
 * memory passed through it is of, and an oom's cache and device as it answered (notes: its
 * oom_state and oom_device entries, record/ring_entry.h). */
static void cs_snap_write_entry_cudasnap(cs_emitter_t *e, int kind, const cs_ring_entry_t *const notes[2]) {
  cs_emit_dict_begin(e);
  if (kind >= 0) cs_emit_kv_str(e, "kind", cs_passthrough_kind_name((cs_passthrough_kind_t)kind));
  if (notes[0]) {
    cs_oom_state_t c = cs_oom_state_unpack(notes[0]->addr, notes[0]->size);
    cs_emit_key(e, "cache");
    cs_emit_dict_begin(e);
    cs_emit_kv_int(e, "reserved", (int64_t)c.reserved);
    cs_emit_kv_int(e, "allocated", (int64_t)c.allocated);
    cs_emit_kv_int(e, "largest_free_block", (int64_t)c.largest_free);
    cs_emit_kv_int(e, "small_pool_free", (int64_t)c.small_free);
    cs_emit_dict_end(e);
  }
  if (notes[1]) cs_emit_kv_int(e, "device_total", (int64_t)notes[1]->addr);
  cs_emit_dict_end(e);
}

/* One trace entry. prev: the entry written just before it in the same device's trace, or NULL.
 * What the viewer never reads from such an entry is left out, which matters most for JSON, where
 * every frame list is written out in full:
 *   - a free_completed right after the free_requested of the same address has no frames: the
 *     viewer merges the two into one `free` event that keeps the free_requested's frames and
 *     drops the free_completed (annotate_snapshot); in cudasnap's traces both carry the same
 *     stack, the allocating one, so a reader that wants it finds it one entry earlier;
 *   - compile_context and user_metadata, which PyTorch writes as "" when it has none, are left
 *     out: the viewer shows nothing for "" or for no key at all. user_metadata is written where
 *     cudasnap has one: an NVTX region's name, on the region's alloc. */
static void cs_snap_write_entry(cs_snap_writer_t *w, const cs_ring_entry_t *entry, const cs_ring_entry_t *prev,
                                const char *user_metadata, const cs_ring_entry_t *const notes[2]) {
  cs_emitter_t *e = w->e;
  cs_action_t action = cs_ring_entry_action(entry);
  bool merged_free = action == CS_ACTION_FREE_COMPLETED && prev != NULL &&
                     cs_ring_entry_action(prev) == CS_ACTION_FREE_REQUESTED && prev->addr == entry->addr;
  uint32_t stack = cs_snap_entry_stack(entry);
  int kind = cs_snap_entry_kind(entry);
  cs_emit_dict_begin(e);
  cs_emit_kv_str(e, "action", cs_action_name(action));
  cs_emit_kv_int(e, action == CS_ACTION_OOM ? "device_free" : "addr", (int64_t)entry->addr);
  cs_emit_kv_int(e, "size", (int64_t)entry->size);
  cs_emit_kv_int(e, "stream", (int64_t)cs_stream_table_handle(&w->state->streams, cs_snap_entry_stream(entry)));
  cs_emit_kv_int(e, "time_us", (int64_t)cs_ring_entry_epoch_us(entry));
  uint32_t thread = cs_snap_entry_thread(entry);
  if (thread) cs_emit_kv_int(e, "thread", thread); /* cudasnap's: the viewer ignores it */
  if (stack && !merged_free) {
    cs_emit_key(e, "frames");
    cs_snap_write_frames(w, stack);
  }
  if (user_metadata) cs_emit_kv_str(e, "user_metadata", user_metadata);
  if (kind >= 0 || notes[0] || notes[1]) {
    cs_emit_key(e, "cudasnap");
    cs_snap_write_entry_cudasnap(e, kind, notes);
  }
  cs_emit_dict_end(e);
}

/* PyTorch's keys (snapshot-format.md section 2.7), then cudasnap's own. */
static void cs_snap_write_settings(cs_snap_writer_t *w, const cs_snapshot_meta_t *meta) {
  cs_emitter_t *e = w->e;
  const cs_alloc_conf_t *conf = &meta->options->alloc;
  static const char *const free_modes[] = {"sync", "fence", "stream"};
  cs_emit_dict_begin(e);
  cs_emit_kv_str(e, "PYTORCH_CUDA_ALLOC_CONF", meta->alloc_conf_text ? meta->alloc_conf_text : "");
  cs_emit_kv_int(e, "max_split_size", cs_alloc_conf_max_split_stat(conf));
  cs_emit_key(e, "garbage_collection_threshold");
  cs_emit_float(e, conf->garbage_collection_threshold);
  cs_emit_kv_bool(e, "expandable_segments", false);
  cs_emit_kv_int(e, "pinned_num_register_threads", 1);
  cs_emit_kv_bool(e, "release_lock_on_cudamalloc", false);
  cs_emit_kv_bool(e, "pinned_use_cuda_host_register", false);
  cs_emit_key(e, "roundup_power2_divisions");
  cs_emit_dict_begin(e);
  for (int i = 0; i < CS_ROUNDUP_INTERVALS; i++) {
    char key[16];
    snprintf(key, sizeof key, "%u", 1u << i);
    cs_emit_kv_int(e, key, conf->roundup_power2_divisions[i]);
  }
  cs_emit_dict_end(e);
  cs_emit_kv_bool(e, "split_large", conf->split_large);
  cs_emit_kv_bool(e, "ipc_small", conf->ipc_small);
  cs_emit_kv_str(e, "free_mode", free_modes[conf->free_mode]);
  cs_emit_kv_bool(e, "cache", conf->cache);
  cs_emit_kv_int(e, "trace_alloc_max_entries", (int64_t)meta->options->max_entries);
  cs_emit_kv_bool(e, "trace_alloc_overflowed", w->state->dropped > 0);
  cs_emit_dict_end(e);
}

static void cs_snap_write_passthrough(cs_snap_writer_t *w);

static void cs_snap_write_cudasnap(cs_snap_writer_t *w, const cs_snapshot_meta_t *meta) {
  cs_emitter_t *e = w->e;
  const cs_snap_state_t *s = w->state;
  cs_emit_dict_begin(e);
  cs_emit_kv_str(e, "version", meta->version);
  cs_emit_kv_int(e, "pid", meta->pid);
  cs_emit_key(e, "argv");
  cs_emit_list_begin(e);
  for (const char *const *a = meta->argv; a && *a; a++) cs_emit_str(e, *a);
  cs_emit_list_end(e);
  cs_emit_kv_str(e, "host", meta->host ? meta->host : "");
  if (meta->job) {
    cs_emit_key(e, "job");
    cs_job_write(e, meta->job);
  }
  cs_emit_kv_str(e, "trigger", meta->trigger);
  cs_emit_kv_int(e, "dump_number", meta->dump_number);
  cs_emit_kv_int(e, "time_us", (int64_t)meta->time_us);
  cs_emit_kv_str(e, "stacks", cs_snap_stacks_word(meta->options->stacks));
  /* the frames the program named part of its allocator: the tool names the file's sites by them */
  const size_t allocator_frames = cs_allocator_frames_count();
  if (allocator_frames > 0) {
    cs_emit_key(e, "allocator_frames");
    cs_emit_list_begin(e);
    for (size_t i = 0; i < allocator_frames; i++) cs_emit_str(e, cs_allocator_frames_text(i));
    cs_emit_list_end(e);
  }
  cs_emit_kv_int(e, "dropped_events", (int64_t)s->dropped);
  cs_emit_kv_bool(e, "trace_kinds", true); /* entries of memory passed through name their kind */
  cs_emit_key(e, "pools");
  cs_snap_write_pools(e, meta->pools);
  if (meta->best_effort) cs_emit_kv_str(e, "best_effort", meta->best_effort);
  if (meta->trigger && strcmp(meta->trigger, "oom") == 0) {
    if (meta->oom_recovered != CS_OOM_RECOVERY_UNKNOWN)
      cs_emit_kv_bool(e, "oom_recovered", meta->oom_recovered == CS_OOM_RECOVERED);
    cs_emit_kv_int(e, "oom_coalesced", (int64_t)meta->oom_coalesced);
  }
  cs_emit_key(e, "memory_stats");
  cs_emit_list_begin(e);
  for (int d = 0; d < s->device_count; d++) {
    cs_stat_kv_t kv[CS_STATS_KEY_COUNT];
    cs_stats_t stats = s->stats[d];
    stats.max_split_size = cs_alloc_conf_max_split_stat(&meta->options->alloc);
    size_t n = cs_stats_flatten(&stats, kv, CS_STATS_KEY_COUNT);
    cs_emit_dict_begin(e);
    for (size_t i = 0; i < n; i++) cs_emit_kv_int(e, kv[i].key, kv[i].value);
    cs_emit_dict_end(e);
  }
  cs_emit_list_end(e);
  cs_snap_write_passthrough(w);
  cs_emit_dict_end(e);
}

/* An answer's own figures, as the reconciliation names them. */
static void cs_snap_write_driver_fields(cs_emitter_t *e, const cs_snap_driver_t *a) {
  cs_emit_kv_int(e, "driver_total", (int64_t)a->driver_total);
  cs_emit_kv_int(e, "driver_free", (int64_t)a->driver_free);
  cs_emit_kv_int(e, "driver_used", (int64_t)(a->driver_total - a->driver_free));
  cs_emit_kv_bool(e, "pools_known", a->pools_known);
  cs_emit_kv_int(e, "pool_reserved", (int64_t)a->pool_reserved);
  cs_emit_kv_int(e, "pool_used", (int64_t)a->pool_used);
  cs_emit_kv_bool(e, "graph_known", a->graph_known);
  cs_emit_kv_int(e, "graph_reserved", (int64_t)a->graph_reserved);
  cs_emit_kv_int(e, "graph_used", (int64_t)a->graph_used);
}

/* An answer kept from before the snapshot, reconciled: `seen` (the cache's reserved bytes and the
 * kinds the driver counts directly, when it was taken) plus its pools, and the rest of its used
 * bytes (context, modules, other processes, then). */
static void cs_snap_write_driver_reconciled(cs_emitter_t *e, const cs_snap_driver_t *a, int64_t seen) {
  cs_snap_write_driver_fields(e, a);
  int64_t accounted = seen + (int64_t)a->pool_reserved + (int64_t)a->graph_reserved;
  cs_emit_kv_int(e, "accounted", accounted);
  cs_emit_kv_int(e, "remainder", (int64_t)(a->driver_total - a->driver_free) - accounted);
}

/* cudasnap.memory[].driver_at_peak: the peak of the bytes cudasnap sees on the device (the cache's
 * segments and device memory passed through), and the driver's answer taken there, or on the way
 * up when the rate limit kept it from asking at the peak itself (at_peak false). */
static void cs_snap_write_driver_peak(cs_emitter_t *e, const cs_snap_driver_peak_t *p) {
  cs_emit_dict_begin(e);
  cs_emit_kv_int(e, "seen_bytes", (int64_t)p->peak_seen);
  cs_emit_kv_int(e, "time_us", (int64_t)p->peak_time_us);
  cs_emit_kv_bool(e, "answered", p->answered);
  if (p->answered) {
    cs_emit_kv_bool(e, "at_peak", p->answer_seen == p->peak_seen);
    cs_emit_kv_int(e, "answer_time_us", (int64_t)p->answer_time_us);
    cs_emit_kv_int(e, "answer_seen_bytes", (int64_t)p->answer_seen);
    cs_snap_write_driver_reconciled(e, &p->answer, (int64_t)p->answer_accounted);
  }
  cs_emit_dict_end(e);
}

/* The reconciliation of one device (docs/memory-kinds.md, "Reconciliation"): what the driver
 * says is used, and what it is made of. */
static void cs_snap_write_memory(cs_snap_writer_t *w, int device) {
  cs_emitter_t *e = w->e;
  const cs_snap_state_t *s = w->state;
  const cs_snap_device_memory_t *m = &s->memory[device];
  const cs_snap_driver_t *a = &m->driver;
  const cs_stats_t *st = &s->stats[device];
  cs_emit_dict_begin(e);
  cs_emit_kv_int(e, "device", device);
  int64_t accounted = st->reserved_bytes[CS_STAT_ALL].current;
  cs_emit_kv_bool(e, "driver_known", a->driver_known);
  if (!a->driver_known && s->driver_not_asked) cs_emit_kv_str(e, "driver_not_asked", s->driver_not_asked);
  if (a->driver_known) {
    cs_emit_kv_int(e, "driver_total", (int64_t)a->driver_total);
    cs_emit_kv_int(e, "driver_free", (int64_t)a->driver_free);
    cs_emit_kv_int(e, "driver_used", (int64_t)(a->driver_total - a->driver_free));
  }
  cs_emit_kv_int(e, "cache_reserved", st->reserved_bytes[CS_STAT_ALL].current);
  cs_emit_kv_int(e, "cache_allocated", st->allocated_bytes[CS_STAT_ALL].current);
  cs_emit_key(e, "passthrough");
  cs_emit_dict_begin(e);
  for (int k = 0; k < CS_PASSTHROUGH_KINDS; k++) {
    if (k == CS_PASSTHROUGH_HOST || k == CS_PASSTHROUGH_HOST_REGISTERED || k == CS_PASSTHROUGH_VMM_RESERVE) continue;
    cs_emit_kv_int(e, cs_passthrough_kind_name((cs_passthrough_kind_t)k), (int64_t)m->kind_bytes[k]);
    if (cs_passthrough_kind_counted((cs_passthrough_kind_t)k)) accounted += (int64_t)m->kind_bytes[k];
  }
  cs_emit_dict_end(e);
  cs_emit_kv_bool(e, "pools_known", a->pools_known);
  cs_emit_kv_int(e, "pool_reserved", (int64_t)a->pool_reserved);
  cs_emit_kv_int(e, "pool_used", (int64_t)a->pool_used);
  accounted += (int64_t)a->pool_reserved;
  cs_emit_kv_bool(e, "graph_known", a->graph_known);
  cs_emit_kv_int(e, "graph_reserved", (int64_t)a->graph_reserved);
  cs_emit_kv_int(e, "graph_used", (int64_t)a->graph_used);
  accounted += (int64_t)a->graph_reserved;
  cs_emit_kv_int(e, "accounted", accounted);
  /* context, modules, other processes; negative where cudasnap counts what the driver does not
   * (managed memory not resident yet) */
  if (a->driver_known) cs_emit_kv_int(e, "remainder", (int64_t)(a->driver_total - a->driver_free) - accounted);
  /* not asked now: the driver's last answer, with its time, reconciled with what cudasnap saw
   * then (the bytes now may be another story) */
  if (!a->driver_known && s->driver_not_asked && m->last.known) {
    cs_emit_key(e, "driver_last");
    cs_emit_dict_begin(e);
    cs_emit_kv_int(e, "time_us", (int64_t)m->last.time_us);
    cs_snap_write_driver_reconciled(e, &m->last.answer, (int64_t)m->last.accounted);
    cs_emit_dict_end(e);
  }
  if (m->peak.peak_seen > 0) {
    cs_emit_key(e, "driver_at_peak");
    cs_snap_write_driver_peak(e, &m->peak);
  }
  cs_emit_dict_end(e);
}

static void cs_snap_write_passthrough(cs_snap_writer_t *w) {
  cs_emitter_t *e = w->e;
  const cs_snap_state_t *s = w->state;
  cs_emit_key(e, "memory");
  cs_emit_list_begin(e);
  for (int d = 0; d < s->device_count; d++) cs_snap_write_memory(w, d);
  cs_emit_list_end(e);
  const cs_snap_device_memory_t *host = &s->memory[CS_SNAP_MAX_DEVICES];
  /* Not "host": that key is the machine's name (cs_snap_write_meta), and a key written twice keeps
   * only its last value for every reader (JSON.parse, pickle.load). */
  cs_emit_key(e, "host_memory");
  cs_emit_dict_begin(e);
  cs_emit_kv_int(e, "host_pinned", (int64_t)host->kind_bytes[CS_PASSTHROUGH_HOST]);
  cs_emit_kv_int(e, "host_registered", (int64_t)host->kind_bytes[CS_PASSTHROUGH_HOST_REGISTERED]);
  cs_emit_dict_end(e);
  /* address space only (cuMemAddressReserve): no memory until mapped */
  cs_emit_kv_int(e, "vmm_reserved_address_space", (int64_t)host->kind_bytes[CS_PASSTHROUGH_VMM_RESERVE]);
  /* cudasnap's own statistics of memory passed through, per device, flat as memory_stats */
  cs_emit_key(e, "passthrough_stats");
  cs_emit_list_begin(e);
  for (int d = 0; d <= s->device_count; d++) {
    int row = d < s->device_count ? d : CS_SNAP_MAX_DEVICES; /* the last: host memory */
    cs_emit_dict_begin(e);
    for (int k = 0; k < CS_PASSTHROUGH_KINDS; k++) {
      if (!cs_passthrough_kind_in_row((cs_passthrough_kind_t)k, row == CS_SNAP_MAX_DEVICES)) continue;
      for (int f = 0; f < CS_PASSTHROUGH_STAT_FIELDS; f++) {
        char key[96];
        cs_passthrough_stat_key((cs_passthrough_kind_t)k, f, key, sizeof key);
        cs_emit_kv_int(e, key, cs_passthrough_stat_field(&s->passthrough[row][k], f));
      }
    }
    cs_emit_dict_end(e);
  }
  cs_emit_list_end(e);
}

/* Items between progress calls: cheap to count, frequent enough for a once-a-second display. */
enum { CS_SNAP_PROGRESS_EVERY = 4096 };

static void cs_snap_progress(const cs_snapshot_meta_t *meta, size_t done, size_t total) {
  if (meta->progress && done % CS_SNAP_PROGRESS_EVERY == 0) meta->progress(meta->progress_ctx, done, total);
}

int cs_snapshot_write(const cs_snap_state_t *s, const cs_intern_t *intern, cs_symbolizer_t *sym,
                      const cs_snapshot_meta_t *meta, cs_emitter_t *e) {
  cs_snap_writer_t w = {.state = s, .intern = intern, .sym = sym, .e = e};
  size_t total = s->segment_count + s->entry_count * (size_t)(s->device_count > 0 ? s->device_count : 1);
  size_t done = 0;
  cs_emit_dict_begin(e);
  /* first, and a pickle batch of its own, so that a reader can stop after it (reader/head.h) */
  cs_emit_key(e, CS_SNAP_SUMMARY_KEY);
  cs_snap_write_summary(e, s, intern, sym, meta);
  cs_emit_batch_break(e);
  cs_emit_key(e, "segments");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < s->segment_count; i++) {
    cs_snap_write_segment(&w, &s->segments[i]);
    cs_snap_progress(meta, ++done, total);
  }
  cs_emit_list_end(e);

  cs_emit_key(e, "device_traces");
  cs_emit_list_begin(e);
  for (int d = 0; d < s->device_count; d++) {
    cs_emit_list_begin(e);
    const cs_ring_entry_t *prev = NULL;
    size_t note = 0;
    for (size_t i = 0; i < s->entry_count; i++) {
      while (note < s->entry_note_count && s->entry_notes[note].index < i) note++;
      cs_action_t action = cs_ring_entry_action(&s->entries[i]);
      bool own = action == CS_ACTION_OOM_STATE || action == CS_ACTION_OOM_DEVICE; /* cudasnap's, not an event */
      if (cs_ring_entry_device(&s->entries[i]) == d && !own) {
        bool noted = note < s->entry_note_count && s->entry_notes[note].index == i;
        const cs_ring_entry_t *notes[2] = {NULL, NULL};
        if (action == CS_ACTION_OOM) cs_ring_oom_notes(s->entries, s->entry_count, i, &notes[0], &notes[1]);
        cs_snap_write_entry(&w, &s->entries[i], prev, noted ? s->entry_notes[note].user_metadata : NULL, notes);
        prev = &s->entries[i];
      }
      cs_snap_progress(meta, ++done, total);
    }
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);

  cs_emit_key(e, "allocator_settings");
  cs_snap_write_settings(&w, meta);
  cs_emit_key(e, "external_annotations");
  cs_snap_write_annotations(e, meta->phases);
  cs_emit_key(e, "cudasnap");
  cs_snap_write_cudasnap(&w, meta);
  cs_emit_dict_end(e);
  return cs_emit_finish(e);
}

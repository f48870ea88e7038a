/* SPDX-License-Identifier: Apache-2.0 */
/* The out-of-memory answer's figures (contract in analysis/oom.h; its words: oom_text.c). */
#include "analysis/oom.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/kinds.h"
#include "analysis/live_map.h"
#include "analysis/peak.h"
#include "analysis/snapview.h"
#include "common/cs_saturate.h"

static bool cs_oom_is(const cs_doc_t *doc, cs_val_t entry, const char *action) {
  const char *a = cs_view_str_key(doc, entry, CS_KEY_ACTION);
  return a != NULL && strcmp(a, action) == 0;
}

/* The last oom entry: the latest by time over the devices, else the last device's last. */
static void cs_oom_last(const cs_doc_t *doc, cs_oom_t *o) {
  int devices = cs_view_device_count(doc);
  for (int d = 0; d < devices; d++) {
    cs_val_t trace = cs_view_trace(doc, d);
    size_t n = cs_val_is_array(trace) ? cs_doc_len(doc, trace) : 0;
    for (size_t i = 0; i < n; i++) {
      cs_val_t entry = cs_doc_at(doc, trace, i);
      if (!cs_oom_is(doc, entry, "oom")) continue;
      o->count++;
      int64_t t;
      if (!cs_view_int_key(doc, entry, CS_KEY_TIME_US, &t)) t = -1;
      if (o->found && t < o->time_us) continue;
      o->found = true;
      o->device = d;
      o->index = i;
      o->time_us = t;
    }
  }
}

/* The cudasnap.memory figures of a device, CS_VAL_ABSENT if none. */
static cs_val_t cs_oom_memory(const cs_doc_t *doc, int device) {
  cs_val_t memory = cs_doc_get(doc, cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP), "memory");
  size_t n = cs_val_is_container(memory) ? cs_doc_len(doc, memory) : 0;
  const cs_val_t *items = n ? cs_doc_items(doc, memory) : NULL;
  for (size_t i = 0; i < n; i++) {
    int64_t d = -1;
    if (cs_view_int_key(doc, items[i], CS_KEY_DEVICE, &d) && d == device) return items[i];
  }
  return CS_VAL_ABSENT;
}

/* The cache's own segments: of no kind, or "cached". (Its trace entries name no kind of memory
 * passed through; in files whose entries name none, no entry can be told from the cache's.) */
static bool cs_oom_cache_segment(const cs_doc_t *doc, cs_val_t segment) {
  return cs_kinds_segment(doc, segment) == cs_kind_cache;
}

/* The cache's reserved bytes at the OOM: its segments at the snapshot, less what the cache's
 * segment events after the OOM added (exact while the trace holds them, as it does from the OOM
 * on). Also counts those events. Returns 0, or -1 without host memory. */
static int cs_oom_reserved(const cs_doc_t *doc, cs_val_t trace, cs_oom_t *o) {
  cs_kinds_t kinds;
  if (cs_kinds_init(&kinds, doc, o->device) != 0) return -1;
  int64_t reserved = 0;
  for (size_t i = 0; i < kinds.count; i++)
    if (kinds.ranges[i].kind == cs_kind_cache)
      reserved = cs_add_sat_i64(reserved, kinds.ranges[i].end - kinds.ranges[i].addr);
  size_t len = cs_doc_len(doc, trace);
  for (size_t i = o->index + 1; i < len; i++) {
    cs_val_t entry = cs_doc_at(doc, trace, i);
    const char *a = cs_view_str_key(doc, entry, CS_KEY_ACTION);
    if (a == NULL || strcmp(a, "oom") == 0 || strcmp(a, "snapshot") == 0) continue;
    o->events_after++;
    int64_t size, addr;
    int sign = cs_view_segment_sign(a);
    if (sign == 0 || !cs_view_int_key(doc, entry, CS_KEY_SIZE, &size) ||
        !cs_view_int_key(doc, entry, CS_KEY_ADDR, &addr) || !cs_kinds_reserved(cs_kinds_of_entry(&kinds, entry, addr)))
      continue;
    reserved = sign > 0 ? cs_sub_sat_i64(reserved, size) : cs_add_sat_i64(reserved, size);
  }
  cs_kinds_free(&kinds);
  o->reserved = reserved > 0 ? (uint64_t)reserved : 0;
  return 0;
}

/* The cache's blocks as cudasnap recorded them when it answered: the entry's cudasnap.cache. */
static bool cs_oom_recorded(const cs_doc_t *doc, cs_val_t entry, cs_oom_t *o) {
  cs_val_t cache = cs_doc_get(doc, cs_doc_get_key(doc, entry, CS_KEY_CUDASNAP), "cache");
  int64_t reserved, allocated, largest, small;
  if (!cs_view_int(doc, cache, "reserved", &reserved) || !cs_view_int(doc, cache, "allocated", &allocated) ||
      !cs_view_int(doc, cache, "largest_free_block", &largest) || !cs_view_int(doc, cache, "small_pool_free", &small))
    return false;
  /* a hostile file's figures that cannot be one cache's are not taken */
  if (reserved < 0 || allocated < 0 || largest < 0 || small < 0 || allocated > reserved ||
      largest > reserved - allocated || small > reserved - allocated)
    return false;
  o->reserved = (uint64_t)reserved; /* the allocator's own count: the trace agrees unless it lost entries */
  o->allocated = (uint64_t)allocated;
  o->cached_free = (uint64_t)(reserved - allocated);
  o->largest_free = (uint64_t)largest;
  o->small_free = (uint64_t)small;
  return true;
}

/* The cache's blocks from the snapshot's segments: the OOM's own where nothing came after it. */
static void cs_oom_blocks_now(const cs_doc_t *doc, cs_oom_t *o) {
  cs_val_t segments = cs_view_segments(doc);
  size_t n = cs_val_is_container(segments) ? cs_doc_len(doc, segments) : 0;
  for (size_t i = 0; i < n; i++) {
    cs_val_t seg = cs_doc_at(doc, segments, i);
    if (cs_view_segment_device(doc, seg) != o->device || !cs_oom_cache_segment(doc, seg)) continue;
    const char *type = cs_view_str_key(doc, seg, CS_KEY_SEGMENT_TYPE);
    bool small = type != NULL && strcmp(type, "small") == 0;
    cs_view_blocks_t it;
    cs_view_block_t b;
    cs_view_blocks_begin(&it, doc, seg);
    while (cs_view_blocks_next(&it, &b)) {
      uint64_t size = (uint64_t)b.size;
      if (b.state == CS_VIEW_INACTIVE) {
        o->cached_free += size;
        if (small) o->small_free += size;
        if (size > o->largest_free) o->largest_free = size;
      } else {
        o->allocated += size;
      }
    }
  }
}

static void cs_oom_add_kind(cs_oom_t *o, const char *kind, uint64_t bytes) {
  o->passthrough += bytes;
  for (size_t i = 0; i < o->nkinds; i++) {
    if (o->kinds[i].kind != kind && strcmp(o->kinds[i].kind, kind) != 0) continue;
    o->kinds[i].bytes += bytes;
    return;
  }
  if (o->nkinds < CS_OOM_KINDS) o->kinds[o->nkinds++] = (cs_oom_kind_t){.kind = kind, .bytes = bytes};
}

static int cs_oom_kind_order(const void *x, const void *y) {
  const cs_oom_kind_t *a = x, *b = y;
  if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
  return strcmp(a->kind, b->kind);
}

/* The blocks live at the OOM: the cache's by site (the top ones kept), memory passed through by
 * kind. */
static int cs_oom_live(const cs_doc_t *doc, cs_val_t trace, cs_oom_t *o) {
  cs_live_map_t live;
  cs_live_map_init(&live);
  int rc = cs_peak_initial(doc, o->device, &live);
  const cs_val_t *entries = cs_doc_items(doc, trace);
  for (size_t i = 0; rc == 0 && i <= o->index; i++) rc = cs_peak_apply(doc, entries[i], &live, NULL);
  cs_sites_t sites;
  cs_sites_init(&sites);
  cs_site_cache_t cache;
  cs_site_cache_init(&cache, doc);
  for (size_t i = 0; rc == 0 && i < live.nslots; i++) {
    const cs_live_t *l = &live.slots[i];
    if (!l->used) continue;
    if (l->kind != NULL) {
      cs_oom_add_kind(o, l->kind, l->bytes);
      continue;
    }
    cs_site_t site = cs_site_cache_of(&cache, l->frames);
    rc = cs_sites_add(&sites, &site, l->bytes);
  }
  if (rc == 0) {
    cs_sites_sort(&sites);
    for (size_t i = 0; i < sites.count && o->nholders < CS_OOM_HOLDERS; i++)
      o->holders[o->nholders++] = sites.totals[i];
    qsort(o->kinds, o->nkinds, sizeof *o->kinds, cs_oom_kind_order);
  }
  cs_site_cache_free(&cache);
  cs_sites_free(&sites);
  cs_live_map_free(&live);
  return rc;
}

/* For fragmentation: which of cudasnap's settings would have kept the free blocks from being
 * held, with the driver's free bytes enough for the request (docs/allocator.md): ipc_small gives
 * requests of 1 MiB or less segments of their own, and without split_large each larger request
 * has one, either given back whole when its block is freed. */
static void cs_oom_helps(cs_oom_t *o) {
  uint64_t free_then = o->free_known ? o->driver_free : 0;
  uint64_t large_free = o->cached_free - o->small_free;
  bool small = !o->ipc_small && o->small_free > 0, large = o->split_large && large_free > 0;
  if (small && free_then + o->small_free >= o->requested) o->helps |= CS_OOM_HELPS_IPC_SMALL;
  if (large && free_then + large_free >= o->requested) o->helps |= CS_OOM_HELPS_NO_SPLIT_LARGE;
  if (o->helps == 0 && small && large && free_then + o->cached_free >= o->requested)
    o->helps = CS_OOM_HELPS_IPC_SMALL | CS_OOM_HELPS_NO_SPLIT_LARGE | CS_OOM_HELPS_TOGETHER;
}

static void cs_oom_settings(const cs_doc_t *doc, cs_oom_t *o) {
  cs_val_t settings = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_ALLOCATOR_SETTINGS);
  o->split_large = cs_doc_get(doc, settings, "split_large") == CS_VAL_TRUE;
  o->ipc_small = cs_doc_get(doc, settings, "ipc_small") == CS_VAL_TRUE;
}

static void cs_oom_verdict(cs_oom_t *o) {
  bool driver = o->total_known && o->free_known;
  if (o->kind == NULL && o->blocks_known && o->cached_free >= o->requested && o->largest_free < o->requested) {
    o->verdict = CS_OOM_FRAGMENTED;
    if (!o->pytorch) cs_oom_helps(o);
  } else if (driver && o->outside + o->driver_free >= o->requested && o->outside >= o->requested / 2) {
    o->verdict = CS_OOM_OUTSIDE;
  } else if (o->total_known) {
    o->verdict = CS_OOM_EXHAUSTED;
  } else {
    o->verdict = CS_OOM_UNDECIDED;
  }
}

/* The answer about the oom entry o->index of o->device's trace. */
static int cs_oom_answer(const cs_doc_t *doc, cs_oom_t *o) {
  cs_val_t trace = cs_view_trace(doc, o->device);
  cs_val_t entry = cs_doc_at(doc, trace, o->index);
  int64_t v;
  if (!cs_view_int_key(doc, entry, CS_KEY_TIME_US, &o->time_us)) o->time_us = -1;
  if (cs_view_int_key(doc, entry, CS_KEY_SIZE, &v) && v >= 0) o->requested = (uint64_t)v;
  if (!cs_view_int_key(doc, entry, CS_KEY_STREAM, &o->stream)) o->stream = 0;
  o->free_known = cs_view_int_key(doc, entry, CS_KEY_DEVICE_FREE, &v) && v >= 0;
  if (o->free_known) o->driver_free = (uint64_t)v;
  o->site = cs_site_of(doc, cs_doc_get_key(doc, entry, CS_KEY_FRAMES));
  o->kind = cs_kinds_entry_own(doc, entry);
  o->pytorch = !cs_val_is_dict(cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP));
  /* the total cudasnap recorded with the OOM (as a recovery has it), else the snapshot's */
  o->total_known = cs_view_int(doc, cs_doc_get_key(doc, entry, CS_KEY_CUDASNAP), "device_total", &v) && v > 0;
  if (!o->total_known) o->total_known = cs_view_int(doc, cs_oom_memory(doc, o->device), "driver_total", &v) && v > 0;
  if (o->total_known) o->driver_total = (uint64_t)v;
  cs_oom_settings(doc, o);
  if (cs_oom_reserved(doc, trace, o) != 0) return -1;
  o->recorded = cs_oom_recorded(doc, entry, o);
  if (!o->recorded && o->events_after == 0) cs_oom_blocks_now(doc, o);
  o->blocks_known = o->recorded || o->events_after == 0;
  if (cs_oom_live(doc, trace, o) != 0) return -1;
  if (o->total_known && o->free_known && o->driver_total >= o->driver_free + o->reserved)
    o->outside = o->driver_total - o->driver_free - o->reserved;
  cs_oom_verdict(o);
  return 0;
}

int cs_oom_find(const cs_doc_t *doc, cs_oom_t *o) {
  *o = (cs_oom_t){.time_us = -1, .site = {.frames = CS_VAL_ABSENT}};
  cs_oom_last(doc, o);
  o->last = true;
  return o->found ? cs_oom_answer(doc, o) : 0;
}

int cs_oom_at(const cs_doc_t *doc, int device, size_t index, cs_oom_t *o) {
  cs_oom_t last;
  *o = (cs_oom_t){.time_us = -1, .site = {.frames = CS_VAL_ABSENT}};
  last = *o;
  cs_oom_last(doc, &last);
  cs_val_t trace = cs_view_trace(doc, device);
  if (!cs_val_is_array(trace) || index >= cs_doc_len(doc, trace)) return 0;
  if (!cs_oom_is(doc, cs_doc_at(doc, trace, index), "oom")) return 0;
  *o = (cs_oom_t){.found = true, .count = last.count, .device = device, .index = index,
                  .last = last.device == device && last.index == index, .site = {.frames = CS_VAL_ABSENT}};
  return cs_oom_answer(doc, o);
}

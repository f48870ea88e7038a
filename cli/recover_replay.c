/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/recover_replay.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocator/size_class.h"
#include "memviz/passthrough.h"

/* An event of the merged history and its place in it, for grouping by address stably. */
typedef struct cs_rr_key_s {
  uint64_t time;   /* us since the epoch */
  size_t order;    /* place in the merged history */
  const cs_ring_entry_t *entry;
} cs_rr_key_t;

/* The same address's events together, in history order: the last one decides the end state. */
static int cs_rr_by_address(const void *pa, const void *pb) {
  const cs_rr_key_t *a = pa, *b = pb;
  const int da = cs_ring_entry_device(a->entry), db = cs_ring_entry_device(b->entry);
  if (da != db) return da < db ? -1 : 1;
  if (a->entry->addr != b->entry->addr) return a->entry->addr < b->entry->addr ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

static int cs_rr_segment_cmp(const void *pa, const void *pb) {
  const cs_rr_segment_t *a = pa, *b = pb;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The kind of memory of an event of the merged history. */
static int cs_rr_kind(const cs_rr_state_t *s, const cs_ring_entry_t *e) { return s->kinds[e - s->events]; }

static bool cs_rr_is_block_event(cs_action_t a) {
  return a == CS_ACTION_ALLOC || a == CS_ACTION_FREE_REQUESTED || a == CS_ACTION_FREE_COMPLETED;
}

static bool cs_rr_is_segment_event(cs_action_t a) {
  return a == CS_ACTION_SEGMENT_ALLOC || a == CS_ACTION_SEGMENT_FREE || a == CS_ACTION_SEGMENT_MAP ||
         a == CS_ACTION_SEGMENT_UNMAP;
}

/* The live segment of `device` holding addr, or NULL. pre: segments sorted. */
static cs_rr_segment_t *cs_rr_find_segment(cs_rr_state_t *s, int device, uint64_t addr) {
  size_t lo = 0, hi = s->segment_count;
  while (lo < hi) { /* the first segment after (device, addr) */
    size_t mid = lo + (hi - lo) / 2;
    const cs_rr_segment_t *m = &s->segments[mid];
    if (m->device < device || (m->device == device && m->addr <= addr)) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  cs_rr_segment_t *seg = &s->segments[lo - 1];
  return seg->device == device && addr - seg->addr < seg->size ? seg : NULL;
}

/* Walk the events grouped by address; `keep` is called with the last event of each group that
 * passes `select`, and the group's events for the block's size and stack. */
static int cs_rr_end_states(cs_rr_state_t *s, cs_rr_key_t *keys, size_t n, cs_rr_block_t **blocks, size_t *block_count) {
  qsort(keys, n, sizeof *keys, cs_rr_by_address);
  size_t seg_cap = 0, blk_cap = 0;
  *blocks = NULL;
  *block_count = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    const cs_ring_entry_t *last_block = NULL, *last_segment = NULL, *alloc = NULL, *seg_alloc = NULL;
    for (; j < n && cs_ring_entry_device(keys[j].entry) == cs_ring_entry_device(keys[i].entry) &&
           keys[j].entry->addr == keys[i].entry->addr;
         j++) {
      const cs_ring_entry_t *e = keys[j].entry;
      const cs_action_t a = cs_ring_entry_action(e);
      if (cs_rr_is_block_event(a)) last_block = e;
      if (a == CS_ACTION_ALLOC) alloc = e;
      if (cs_rr_is_segment_event(a)) last_segment = e;
      if (a == CS_ACTION_SEGMENT_ALLOC || a == CS_ACTION_SEGMENT_MAP) seg_alloc = e;
    }
    if (last_segment && (cs_ring_entry_action(last_segment) == CS_ACTION_SEGMENT_ALLOC ||
                         cs_ring_entry_action(last_segment) == CS_ACTION_SEGMENT_MAP)) {
      if (s->segment_count == seg_cap) {
        seg_cap = seg_cap ? 2 * seg_cap : 64;
        cs_rr_segment_t *grown = realloc(s->segments, seg_cap * sizeof *grown);
        if (!grown) return -1;
        s->segments = grown;
      }
      s->segments[s->segment_count++] = (cs_rr_segment_t){
          .device = cs_ring_entry_device(seg_alloc), .kind = cs_rr_kind(s, seg_alloc), .addr = seg_alloc->addr,
          .size = seg_alloc->size, .stream = seg_alloc->stream, .stack_id = seg_alloc->stack_id};
    }
    const cs_action_t end = last_block ? cs_ring_entry_action(last_block) : CS_ACTION_FREE_COMPLETED;
    if (end != CS_ACTION_FREE_COMPLETED) {
      /* the size and stack of the allocation; a block allocated before the oldest entry kept has
       * only its free_requested's */
      const cs_ring_entry_t *from = alloc ? alloc : last_block;
      if (*block_count == blk_cap) {
        blk_cap = blk_cap ? 2 * blk_cap : 256;
        cs_rr_block_t *grown = realloc(*blocks, blk_cap * sizeof *grown);
        if (!grown) return -1;
        *blocks = grown;
      }
      (*blocks)[(*block_count)++] = (cs_rr_block_t){.device = cs_ring_entry_device(from), .kind = cs_rr_kind(s, from),
                                                    .addr = from->addr,
                                                    .size = from->size, .extent = from->size,
                                                    .stack_id = from->stack_id,
                                                    .pending = end == CS_ACTION_FREE_REQUESTED};
    }
    i = j;
  }
  return 0;
}

/* A segment's extent, as a segment event of the history gives it. */
typedef struct cs_rr_range_s {
  int device;
  uint64_t lo, hi;
  uint64_t max_hi; /* the largest hi of this device's ranges up to this one */
} cs_rr_range_t;

static int cs_rr_range_cmp(const void *pa, const void *pb) {
  const cs_rr_range_t *a = pa, *b = pb;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Does some range of `device` hold addr? pre: ranges sorted, max_hi filled. */
static bool cs_rr_in_ranges(const cs_rr_range_t *r, size_t n, int device, uint64_t addr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].device < device || (r[mid].device == device && r[mid].lo <= addr)) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && r[lo - 1].device == device && r[lo - 1].max_hi > addr;
}

/* Blocks the history names in no segment it names: their segments were allocated before the
 * oldest entry kept, and are alive at the end (a free of one would be in the history). Each run of
 * overlapping such blocks gets a live segment of its extent, so that every block of the history
 * lies in a segment at every point, as the viewer's backward replay needs. pre: keys by address. */
static int cs_rr_orphans(cs_rr_state_t *s, const cs_rr_key_t *keys, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++) count += cs_rr_is_segment_event(cs_ring_entry_action(keys[i].entry));
  cs_rr_range_t *ranges = calloc(count ? count : 1, sizeof *ranges);
  if (!ranges) return -1;
  count = 0;
  for (size_t i = 0; i < n; i++) {
    const cs_ring_entry_t *e = keys[i].entry;
    if (cs_rr_is_segment_event(cs_ring_entry_action(e)))
      ranges[count++] = (cs_rr_range_t){.device = cs_ring_entry_device(e), .lo = e->addr, .hi = e->addr + e->size};
  }
  qsort(ranges, count, sizeof *ranges, cs_rr_range_cmp);
  for (size_t i = 0; i < count; i++) {
    const bool first = i == 0 || ranges[i - 1].device != ranges[i].device;
    ranges[i].max_hi = first || ranges[i - 1].max_hi < ranges[i].hi ? ranges[i].hi : ranges[i - 1].max_hi;
  }
  size_t cap = s->segment_count;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const cs_ring_entry_t *e = keys[i].entry;
    const int device = cs_ring_entry_device(e);
    if (!cs_rr_is_block_event(cs_ring_entry_action(e)) || e->size == 0 || cs_rr_in_ranges(ranges, count, device, e->addr))
      continue;
    cs_rr_segment_t *last = s->unplaced ? &s->segments[s->segment_count - 1] : NULL;
    if (last && last->device == device && e->addr < last->addr + last->size) { /* keys go by address */
      if (e->addr + e->size > last->addr + last->size) last->size = e->addr + e->size - last->addr;
      continue;
    }
    if (s->segment_count == cap) {
      cap = cap ? 2 * cap : 64;
      cs_rr_segment_t *grown = realloc(s->segments, cap * sizeof *grown);
      if (!grown) {
        rc = -1;
        break;
      }
      s->segments = grown;
    }
    s->segments[s->segment_count++] =
        (cs_rr_segment_t){.device = device, .kind = cs_rr_kind(s, e), .addr = e->addr, .size = e->size};
    s->unplaced++;
  }
  free(ranges);
  return rc;
}

/* VMM mappings that touch on one device become one expandable segment, one block per mapping (the
 * blocks are placed after), as a dump draws the mapped runs of a reserved range. */
static void cs_rr_join_mappings(cs_rr_state_t *s) {
  qsort(s->segments, s->segment_count, sizeof *s->segments, cs_rr_segment_cmp);
  size_t kept = 0;
  for (size_t i = 0; i < s->segment_count; i++) {
    cs_rr_segment_t *seg = &s->segments[i], *prev = kept ? &s->segments[kept - 1] : NULL;
    seg->expandable = seg->kind == CS_PASSTHROUGH_VMM_MAPPING;
    if (seg->expandable && prev && prev->expandable && prev->device == seg->device &&
        prev->addr + prev->size == seg->addr) {
      prev->size += seg->size;
      continue;
    }
    s->segments[kept++] = *seg;
  }
  s->segment_count = kept;
}

static int cs_rr_place(cs_rr_state_t *s, cs_rr_block_t *blocks, size_t block_count) {
  /* blocks of no live segment get one of their own (its segment_alloc was dropped) */
  size_t extra = 0;
  qsort(s->segments, s->segment_count, sizeof *s->segments, cs_rr_segment_cmp);
  for (size_t i = 0; i < block_count; i++) extra += cs_rr_find_segment(s, blocks[i].device, blocks[i].addr) == NULL;
  if (extra) {
    cs_rr_segment_t *grown = realloc(s->segments, (s->segment_count + extra) * sizeof *grown);
    if (!grown) return -1;
    s->segments = grown;
    size_t known = s->segment_count;
    for (size_t i = 0; i < block_count; i++) {
      cs_rr_block_t *b = &blocks[i];
      bool placed = false;
      for (size_t k = 0; k < known && !placed; k++) /* extra is rare: a linear look is enough */
        placed = s->segments[k].device == b->device && b->addr - s->segments[k].addr < s->segments[k].size;
      if (!placed)
        s->segments[s->segment_count++] = (cs_rr_segment_t){
            .device = b->device, .kind = b->kind, .expandable = b->kind == CS_PASSTHROUGH_VMM_MAPPING, .addr = b->addr,
            .size = b->size, .stack_id = b->stack_id};
    }
    s->unplaced += extra;
    qsort(s->segments, s->segment_count, sizeof *s->segments, cs_rr_segment_cmp);
  }
  /* blocks arrive by (device, address): each segment's are consecutive */
  for (size_t i = 0; i < block_count; i++) {
    cs_rr_segment_t *seg = cs_rr_find_segment(s, blocks[i].device, blocks[i].addr);
    if (!seg) continue;
    if (!seg->blocks) seg->blocks = &blocks[i];
    /* a block overlapping the one before it, or running past its segment, is dropped */
    const cs_rr_block_t *prev = seg->block_count ? &seg->blocks[seg->block_count - 1] : NULL;
    if ((prev && blocks[i].addr < prev->addr + prev->size) || blocks[i].size > seg->addr + seg->size - blocks[i].addr) {
      if (seg->block_count == 0) seg->blocks = NULL;
      continue;
    }
    if (&seg->blocks[seg->block_count] != &blocks[i]) seg->blocks[seg->block_count] = blocks[i];
    seg->block_count++;
  }
  return 0;
}

/* The bytes a live block of `requested` bytes spans when `room` bytes lie between its address and
 * the next block or its segment's end: its rounded size when the allocator split the rest off,
 * else all of the room (allocator/size_class.h's rule, the one the allocator hands blocks out by).
 * A history that does not fit the rule (a request larger than its room) keeps the room. */
static uint64_t cs_rr_extent(uint64_t requested, uint64_t room, const cs_alloc_conf_t *conf) {
  if (requested >= CS_MAX_REQUEST) return requested;
  size_t rounded = cs_round_size((size_t)requested, conf->roundup_power2_divisions);
  if (rounded >= room) return room;
  return cs_splits_rest(cs_size_is_small(rounded), rounded, (size_t)(room - rounded), conf) ? rounded : room;
}

/* Every live block of the cache's segments at the size the allocator gave it, by the settings the
 * recording holds, so that the rounding inside blocks is not drawn as free blocks: the recovery
 * splits free bytes as a dump of the same state does. Memory passed through keeps the bytes asked
 * (the driver's own rounding is not the cache's). */
static void cs_rr_extents(cs_rr_state_t *s, const cs_alloc_conf_t *conf) {
  for (size_t i = 0; i < s->segment_count; i++) {
    cs_rr_segment_t *seg = &s->segments[i];
    if (seg->kind >= 0) continue;
    for (size_t k = 0; k < seg->block_count; k++) {
      cs_rr_block_t *b = &seg->blocks[k];
      uint64_t end = k + 1 < seg->block_count ? seg->blocks[k + 1].addr : seg->addr + seg->size;
      b->extent = cs_rr_extent(b->size, end - b->addr, conf); /* placement kept end >= addr + size */
    }
  }
}

int cs_rr_replay(const cs_recording_t *rec, cs_rr_state_t *s) {
  memset(s, 0, sizeof *s);
  s->device_count = 1;
  size_t total = 0;
  for (size_t r = 0; r < rec->ring_count; r++) total += rec->rings[r].count;
  cs_rr_key_t *keys = calloc(total ? total : 1, sizeof *keys);
  s->events = calloc(total ? total : 1, sizeof *s->events);
  s->kinds = calloc(total ? total : 1, sizeof *s->kinds);
  if (!keys || !s->events || !s->kinds) {
    free(keys);
    return -1;
  }
  /* a stable merge by time, as a dump merges its rings (a free first within a microsecond:
   * cs_ring_entry_merges_before): each ring's own order is kept even where its times are not
   * monotonic (a counter read on another core), and other ties go to the first ring */
  size_t n = 0;
  size_t *next = calloc(rec->ring_count ? rec->ring_count : 1, sizeof *next);
  if (!next) {
    free(keys);
    return -1;
  }
  for (;;) {
    size_t pick = SIZE_MAX;
    for (size_t r = 0; r < rec->ring_count; r++) {
      if (next[r] == rec->rings[r].count) continue;
      if (pick == SIZE_MAX ||
          cs_ring_entry_merges_before(&rec->rings[r].entries[next[r]], &rec->rings[pick].entries[next[pick]]))
        pick = r;
    }
    if (pick == SIZE_MAX) break;
    const uint64_t pick_time = cs_ring_entry_epoch_us(&rec->rings[pick].entries[next[pick]]);
    s->kinds[n] = rec->rings[pick].kinds ? rec->rings[pick].kinds[next[pick]] : -1;
    s->events[n] = rec->rings[pick].entries[next[pick]++];
    keys[n] = (cs_rr_key_t){.time = pick_time, .order = n, .entry = &s->events[n]};
    if (cs_ring_entry_device(&s->events[n]) + 1 > s->device_count) s->device_count = cs_ring_entry_device(&s->events[n]) + 1;
    n++;
  }
  free(next);
  s->event_count = n;
  cs_rr_block_t *blocks = NULL;
  size_t block_count = 0;
  int rc = cs_rr_end_states(s, keys, n, &blocks, &block_count);
  if (rc == 0) rc = cs_rr_orphans(s, keys, n);
  free(keys);
  if (rc == 0) cs_rr_join_mappings(s);
  if (rc == 0) rc = cs_rr_place(s, blocks, block_count);
  if (rc == 0 && rec->conf_known) cs_rr_extents(s, &rec->conf);
  /* the segments point into the one block array: keep it with the first segment that has blocks */
  s->blocks_storage = blocks;
  return rc;
}

void cs_rr_free(cs_rr_state_t *s) {
  free(s->events);
  free(s->kinds);
  free(s->segments);
  free(s->blocks_storage);
  memset(s, 0, sizeof *s);
}

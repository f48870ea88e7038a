/* SPDX-License-Identifier: Apache-2.0 */
/* Forward trace replay for the peak (contract in analysis/peak.h). */
#include "analysis/peak.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kinds.h"
#include "analysis/live_map.h"
#include "analysis/snapview.h"

typedef enum cs_peak_kind_e {
  CS_PEAK_OTHER = 0,
  CS_PEAK_ALLOC,
  CS_PEAK_FREE,          /* free_completed, or a legacy free */
  CS_PEAK_FREE_REQUESTED,
} cs_peak_kind_t;

typedef struct cs_peak_event_s {
  cs_peak_kind_t kind;
  int64_t addr;
  uint64_t size;
  cs_val_t frames;    /* a list; CS_VAL_ABSENT when none */
  const char *memory; /* the kind of memory passed through (analysis/kinds.h); NULL: the cache's */
} cs_peak_event_t;

/* An entry without an integer addr and a non-negative integer size changes nothing. */
static cs_peak_event_t cs_peak_event(const cs_doc_t *doc, cs_val_t entry) {
  cs_peak_event_t ev = {.kind = CS_PEAK_OTHER, .frames = CS_VAL_ABSENT};
  const char *action = cs_view_str_key(doc, entry, CS_KEY_ACTION);
  int64_t size;
  if (action == NULL || !cs_view_int_key(doc, entry, CS_KEY_ADDR, &ev.addr) ||
      !cs_view_int_key(doc, entry, CS_KEY_SIZE, &size) || size < 0)
    return ev;
  if (strcmp(action, "alloc") == 0) ev.kind = CS_PEAK_ALLOC;
  else if (strcmp(action, "free_completed") == 0 || strcmp(action, "free") == 0) ev.kind = CS_PEAK_FREE;
  else if (strcmp(action, "free_requested") == 0) ev.kind = CS_PEAK_FREE_REQUESTED;
  ev.size = (uint64_t)size;
  cs_val_t frames = cs_doc_get_key(doc, entry, CS_KEY_FRAMES);
  ev.frames = cs_val_is_array(frames) ? frames : CS_VAL_ABSENT;
  if (ev.kind != CS_PEAK_OTHER) ev.memory = cs_kinds_entry_own(doc, entry);
  return ev;
}

/* The addresses a trace allocates or frees, as a set: 8 bytes a slot where the live map takes 32.
 * A trace may touch a million addresses, and the set is probed once per entry, so its size is
 * what the walk's cache misses are made of. Linear probing; 0 marks an empty slot, so address 0
 * is kept apart. */
typedef struct cs_addr_set_s {
  uint64_t *slots;
  size_t nslots; /* a power of two, kept above twice count */
  size_t count;
  bool has_zero;
} cs_addr_set_t;

static size_t cs_addr_set_home(const cs_addr_set_t *set, uint64_t addr) {
  /* Block addresses share their low bits (512-byte rounding): mix before masking. */
  return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (set->nslots - 1);
}

/* The slot holding addr, or the empty slot where it would go. pre: nslots > 0, addr != 0. */
static size_t cs_addr_set_slot(const cs_addr_set_t *set, uint64_t addr) {
  size_t mask = set->nslots - 1;
  size_t i = cs_addr_set_home(set, addr);
  while (set->slots[i] != 0 && set->slots[i] != addr) i = (i + 1) & mask;
  return i;
}

/* Add addr; *added says whether it was new. Returns 0, or -1 without host memory. */
static int cs_addr_set_add(cs_addr_set_t *set, int64_t addr, bool *added) {
  uint64_t a = (uint64_t)addr;
  if (a == 0) {
    *added = !set->has_zero;
    set->has_zero = true;
    return 0;
  }
  if (2 * (set->count + 1) > set->nslots) {
    cs_addr_set_t bigger = {.nslots = set->nslots ? set->nslots * 2 : 1024, .count = set->count,
                            .has_zero = set->has_zero};
    bigger.slots = calloc(bigger.nslots, sizeof *bigger.slots);
    if (bigger.slots == NULL) return -1;
    for (size_t i = 0; i < set->nslots; i++)
      if (set->slots[i] != 0) bigger.slots[cs_addr_set_slot(&bigger, set->slots[i])] = set->slots[i];
    free(set->slots);
    *set = bigger;
  }
  size_t slot = cs_addr_set_slot(set, a);
  *added = set->slots[slot] == 0;
  if (*added) {
    set->slots[slot] = a;
    set->count++;
  }
  return 0;
}

static bool cs_addr_set_has(const cs_addr_set_t *set, int64_t addr) {
  uint64_t a = (uint64_t)addr;
  if (a == 0) return set->has_zero;
  return set->nslots > 0 && set->slots[cs_addr_set_slot(set, a)] != 0;
}

/* The blocks live when the trace starts (see peak.h). */
static int cs_peak_start(const cs_doc_t *doc, int device, cs_val_t trace, cs_live_map_t *live) {
  cs_addr_set_t seen = {.slots = NULL, .nslots = 0, .count = 0, .has_zero = false};
  int rc = 0;
  size_t n = cs_doc_len(doc, trace);
  const cs_val_t *entries = cs_doc_items(doc, trace);
  for (size_t i = 0; i < n; i++) {
    cs_peak_event_t ev = cs_peak_event(doc, entries[i]);
    if (ev.kind == CS_PEAK_OTHER) continue;
    bool first;
    if (cs_addr_set_add(&seen, ev.addr, &first) != 0) {
      rc = -1;
      break;
    }
    /* Freed before any alloc: live from before the trace. The stack is the free's (with
     * PyTorch's context="alloc", and in cudasnap's traces, that is the allocating one). */
    if (first && ev.kind != CS_PEAK_ALLOC && cs_live_map_put(live, ev.addr, ev.size, ev.frames, ev.memory) != 0)
      rc = -1;
  }
  /* a block's kind is its segment's where the trace names kinds (elsewhere its entries' kinds are
   * not known, and all is counted as the cache's) */
  bool kinds = cs_kinds_in_trace(doc);
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  for (cs_view_device_blocks_begin(&it, doc, device); rc == 0 && cs_view_device_blocks_next(&it, &b);) {
    if (b.state == CS_VIEW_INACTIVE || cs_addr_set_has(&seen, b.addr)) continue;
    const char *kind = kinds ? cs_kinds_segment(doc, b.segment) : cs_kind_cache;
    if (cs_live_map_put(live, b.addr, (uint64_t)b.requested, b.frames, kind == cs_kind_cache ? NULL : kind) != 0)
      rc = -1;
  }
  free(seen.slots);
  return rc;
}

int cs_peak_initial(const cs_doc_t *doc, int device, cs_live_map_t *live) {
  return cs_peak_start(doc, device, cs_view_trace(doc, device), live);
}

int cs_peak_apply(const cs_doc_t *doc, cs_val_t entry, cs_live_map_t *live, cs_peak_change_t *change) {
  cs_peak_change_t none;
  if (change == NULL) change = &none;
  change->ended = change->began = false;
  cs_peak_event_t ev = cs_peak_event(doc, entry);
  if (ev.kind != CS_PEAK_ALLOC && ev.kind != CS_PEAK_FREE) return 0;
  const cs_live_t *was = cs_live_map_get(live, ev.addr);
  if (was != NULL) {
    change->ended = true;
    change->ended_block = *was;
  }
  if (ev.kind == CS_PEAK_FREE) {
    cs_live_map_remove(live, ev.addr);
    return 0;
  }
  if (cs_live_map_put(live, ev.addr, ev.size, ev.frames, ev.memory) != 0) return -1;
  change->began = true;
  change->began_block = *cs_live_map_get(live, ev.addr);
  return 0;
}

/* Apply the first `limit` entries to live; *peak gets the highest point on the way. */
static int cs_peak_replay(const cs_doc_t *doc, cs_val_t trace, size_t limit, cs_live_map_t *live, cs_peak_t *peak) {
  size_t n = cs_doc_len(doc, trace);
  const cs_val_t *entries = cs_doc_items(doc, trace);
  *peak = (cs_peak_t){.bytes = live->bytes, .passthrough = live->passthrough_bytes, .after = 0, .events = n};
  for (size_t i = 0; i < n && i < limit; i++) {
    if (cs_peak_apply(doc, entries[i], live, NULL) != 0) return -1;
    if (live->bytes > peak->bytes) {
      peak->bytes = live->bytes;
      peak->passthrough = live->passthrough_bytes;
      peak->after = i + 1;
    }
  }
  return 0;
}

/* Add to sites the blocks live after the first `after` entries of trace, replayed from the blocks
 * live at its start (start is left as it is). */
static int cs_peak_tally(const cs_doc_t *doc, cs_val_t trace, const cs_live_map_t *start, size_t after,
                         cs_sites_t *sites) {
  cs_live_map_t live;
  cs_peak_t at;
  int rc = cs_live_map_copy(&live, start);
  if (rc == 0) rc = cs_peak_replay(doc, trace, after, &live, &at);
  cs_site_cache_t cache;
  cs_site_cache_init(&cache, doc);
  for (size_t i = 0; rc == 0 && i < live.nslots; i++) {
    const cs_live_t *l = &live.slots[i];
    if (!l->used) continue;
    cs_site_t site = cs_site_cache_of(&cache, l->frames);
    rc = cs_sites_add(sites, &site, l->bytes);
  }
  cs_site_cache_free(&cache);
  cs_live_map_free(&live);
  return rc;
}

int cs_peak_live_at(const cs_doc_t *doc, int device, size_t after, cs_sites_t *sites) {
  cs_val_t trace = cs_view_trace(doc, device);
  cs_live_map_t start;
  cs_live_map_init(&start);
  int rc = cs_peak_start(doc, device, trace, &start);
  if (rc == 0) rc = cs_peak_tally(doc, trace, &start, after, sites);
  cs_live_map_free(&start);
  return rc;
}

int cs_peak_find(const cs_doc_t *doc, int device, cs_peak_t *peak, cs_sites_t *sites) {
  cs_val_t trace = cs_view_trace(doc, device);
  /* Two replays from one start: one to find when the peak was, one to stop there and see what was
   * live. */
  cs_live_map_t start, live;
  cs_live_map_init(&start);
  cs_live_map_init(&live);
  int rc = cs_peak_start(doc, device, trace, &start);
  if (rc == 0) rc = cs_live_map_copy(&live, &start);
  if (rc == 0) rc = cs_peak_replay(doc, trace, SIZE_MAX, &live, peak);
  cs_live_map_free(&live);
  if (rc == 0) rc = cs_peak_tally(doc, trace, &start, peak->after, sites);
  cs_live_map_free(&start);
  return rc;
}

int cs_peak_walk_live(const cs_doc_t *doc, int device, cs_peak_each_live_fn each, void *ctx) {
  cs_live_map_t live;
  cs_live_map_init(&live);
  int rc = cs_peak_initial(doc, device, &live);
  if (rc == 0) each(ctx, doc, CS_VAL_ABSENT, &live);
  cs_val_t trace = cs_view_trace(doc, device);
  size_t n = cs_doc_len(doc, trace);
  const cs_val_t *entries = cs_doc_items(doc, trace);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rc = cs_peak_apply(doc, entries[i], &live, NULL);
    if (rc == 0) each(ctx, doc, entries[i], &live);
  }
  cs_live_map_free(&live);
  return rc;
}

typedef struct cs_peak_bytes_walk_s {
  cs_peak_each_fn each;
  void *ctx;
  uint64_t *start_bytes;
} cs_peak_bytes_walk_t;

static void cs_peak_bytes_each(void *ctx, const cs_doc_t *doc, cs_val_t entry, const cs_live_map_t *live) {
  cs_peak_bytes_walk_t *w = ctx;
  if (cs_val_absent(entry)) *w->start_bytes = live->bytes;
  else w->each(w->ctx, doc, entry, live->bytes);
}

int cs_peak_walk(const cs_doc_t *doc, int device, cs_peak_each_fn each, void *ctx, uint64_t *start_bytes) {
  *start_bytes = 0;
  cs_peak_bytes_walk_t w = {.each = each, .ctx = ctx, .start_bytes = start_bytes};
  return cs_peak_walk_live(doc, device, cs_peak_bytes_each, &w);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Memory over time for the report (contract in report/report_timeline.h). */
#include "report/report_timeline.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/kinds.h"
#include "analysis/live_map.h"
#include "analysis/peak.h"
#include "analysis/snapview.h"
#include "common/cs_assert.h"

typedef struct cs_tl_builder_s {
  cs_report_timeline_t *t;
  cs_report_stacks_t *r;
  const cs_sites_t *top;
  uint32_t *band_of;      /* per site position: band + 1; 0 = not looked up yet */
  size_t band_of_len;     /* positions covered */
  size_t band_of_cap;
  cs_report_point_t now;  /* the state being sampled */
  size_t points_cap, markers_cap;
  /* the current bucket: its lowest and highest allocated state, its highest reserved state */
  size_t bucket;
  bool have;
  cs_report_point_t lo, hi, rmax;
  cs_report_point_t first;  /* the trace's state 0 */
  uint64_t lo_bytes, hi_bytes;
  cs_kinds_t kinds;         /* of the device's memory: reserved bytes are the cache's */
} cs_tl_builder_t;

static int cs_tl_grow(void **items, size_t *cap, size_t want, size_t size) {
  if (want <= *cap) return 0;
  size_t n = *cap ? *cap * 2 : 256;
  while (n < want) n *= 2;
  void *bigger = realloc(*items, n * size);
  if (bigger == NULL) return -1;
  *items = bigger;
  *cap = n;
  return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Bands
 * ---------------------------------------------------------------------------------------------- */

/* The band of the site at `pos` of the site table. pre: pos < band_of_len. */
static size_t cs_tl_band_of(cs_tl_builder_t *b, uint32_t pos) {
  if (b->band_of[pos] == 0) {
    const cs_site_t *site = &b->r->sites.totals[pos].site;
    size_t found = b->t->nbands; /* the band of every other site */
    for (size_t k = 0; k < b->t->nbands; k++) {
      if (cs_site_compare(site, &b->top->totals[k].site) == 0) {
        found = k;
        b->t->band_site[k] = pos;
        break;
      }
    }
    b->band_of[pos] = (uint32_t)found + 1;
  }
  return b->band_of[pos] - 1;
}

/* Register a block's site (and maybe its stack) and give its band. The site table is shared by
 * every device of the report, so a site may already be there from an earlier device: band_of
 * covers the positions this walk has met, whatever the table's size. */
static int cs_tl_site(cs_tl_builder_t *b, const cs_live_t *block, size_t *band) {
  uint32_t pos;
  if (cs_report_site(b->r, block->frames, block->bytes, &pos) != 0) return -1;
  if (pos >= b->band_of_len) {
    if (cs_tl_grow((void **)&b->band_of, &b->band_of_cap, (size_t)pos + 1, sizeof *b->band_of) != 0) return -1;
    memset(b->band_of + b->band_of_len, 0, ((size_t)pos + 1 - b->band_of_len) * sizeof *b->band_of);
    b->band_of_len = (size_t)pos + 1;
  }
  *band = cs_tl_band_of(b, pos);
  return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Sampling
 * ---------------------------------------------------------------------------------------------- */

static uint64_t cs_tl_allocated(const cs_report_point_t *p) {
  uint64_t sum = 0;
  for (size_t k = 0; k < CS_REPORT_BANDS; k++) sum += p->bands[k];
  return sum;
}

static int cs_tl_point_order(const void *x, const void *y) {
  const cs_report_point_t *a = x, *b = y;
  return (a->state > b->state) - (a->state < b->state);
}

/* Append the kept states of the current bucket, in state order, each once; the trace's first
 * state and (last: this is the final bucket) its last one too, so the drawing starts and ends
 * where the trace does. */
static int cs_tl_flush(cs_tl_builder_t *b, bool last) {
  if (!b->have) return 0;
  cs_report_point_t kept[5] = {b->lo, b->hi, b->rmax};
  size_t n = 3;
  if (b->first.state == 0 && b->bucket == 0) kept[n++] = b->first;
  if (last) kept[n++] = b->now;
  qsort(kept, n, sizeof kept[0], cs_tl_point_order);
  cs_report_timeline_t *t = b->t;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && kept[i].state == kept[i - 1].state) continue;
    if (cs_tl_grow((void **)&t->points, &b->points_cap, t->npoints + 1, sizeof *t->points) != 0) return -1;
    t->points[t->npoints++] = kept[i];
  }
  b->have = false;
  return 0;
}

/* Take b->now, the state after `now.state` entries, into its bucket. */
static int cs_tl_sample(cs_tl_builder_t *b) {
  cs_report_timeline_t *t = b->t;
  size_t states = t->events + 1;
  size_t bucket = b->now.state * CS_REPORT_BUCKETS / states; /* no overflow: a file holds far fewer than 2^53 entries */
  if (b->have && bucket != b->bucket && cs_tl_flush(b, false) != 0) return -1;
  uint64_t bytes = cs_tl_allocated(&b->now);
  if (!b->have) {
    b->bucket = bucket;
    b->have = true;
    b->lo = b->hi = b->rmax = b->now;
    b->lo_bytes = b->hi_bytes = bytes;
  } else {
    /* Strictly: the first state to reach a value keeps it, so the peak is where cs_peak_find
     * says it is. */
    if (bytes < b->lo_bytes) b->lo = b->now, b->lo_bytes = bytes;
    if (bytes > b->hi_bytes) b->hi = b->now, b->hi_bytes = bytes;
    if (b->now.reserved > b->rmax.reserved) b->rmax = b->now;
  }
  if (b->now.reserved > t->reserved_peak) {
    t->reserved_peak = b->now.reserved;
    t->reserved_peak_state = b->now.state;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Reserved bytes and markers
 * ---------------------------------------------------------------------------------------------- */

/* How much an entry changes the cache's reserved bytes: + segment_alloc/segment_map, -
 * segment_free/unmap; nothing for memory passed through (analysis/kinds.h). */
static int64_t cs_tl_reserved_change(const cs_kinds_t *kinds, const cs_doc_t *doc, cs_val_t entry) {
  const char *action = cs_view_str_key(doc, entry, CS_KEY_ACTION);
  int64_t size, addr;
  if (action == NULL || !cs_view_int_key(doc, entry, CS_KEY_SIZE, &size) || size < 0) return 0;
  int sign = cs_view_segment_sign(action);
  if (sign == 0 || !cs_view_int_key(doc, entry, CS_KEY_ADDR, &addr) ||
      !cs_kinds_reserved(cs_kinds_of_entry(kinds, entry, addr)))
    return 0;
  return sign * size;
}

/* Reserved bytes before the first entry: the cache's segments at the snapshot, the trace undone. */
static int64_t cs_tl_reserved_start(const cs_kinds_t *kinds, const cs_doc_t *doc, cs_val_t trace) {
  int64_t reserved = 0;
  for (size_t i = 0; i < kinds->count; i++)
    if (kinds->ranges[i].kind == cs_kind_cache) reserved += kinds->ranges[i].end - kinds->ranges[i].addr;
  size_t n = cs_doc_len(doc, trace);
  const cs_val_t *entries = cs_doc_items(doc, trace);
  for (size_t i = 0; i < n; i++) reserved -= cs_tl_reserved_change(kinds, doc, entries[i]);
  return reserved;
}

static int cs_tl_marker(cs_tl_builder_t *b, const cs_doc_t *doc, cs_val_t entry, size_t state, int64_t time_us) {
  const char *action = cs_view_str_key(doc, entry, CS_KEY_ACTION);
  cs_report_marker_kind_t kind;
  if (action != NULL && strcmp(action, "oom") == 0) kind = CS_REPORT_MARK_OOM;
  else if (action != NULL && strcmp(action, "snapshot") == 0) kind = CS_REPORT_MARK_SNAPSHOT;
  else return 0;
  cs_report_timeline_t *t = b->t;
  /* Every OOM is shown; snapshot marks only up to the limit. */
  if (kind == CS_REPORT_MARK_SNAPSHOT && t->nmarkers >= CS_REPORT_MAX_MARKERS) {
    t->markers_left_out++;
    return 0;
  }
  if (cs_tl_grow((void **)&t->markers, &b->markers_cap, t->nmarkers + 1, sizeof *t->markers) != 0) return -1;
  cs_report_marker_t *m = &t->markers[t->nmarkers++];
  *m = (cs_report_marker_t){.kind = kind, .state = state, .time_us = time_us, .size = -1, .device_free = -1};
  if (!cs_view_int_key(doc, entry, CS_KEY_SIZE, &m->size)) m->size = -1;
  if (!cs_view_int_key(doc, entry, CS_KEY_DEVICE_FREE, &m->device_free)) m->device_free = -1;
  return 0;
}

/* ------------------------------------------------------------------------------------------------
 * The walk
 * ---------------------------------------------------------------------------------------------- */

static int64_t cs_tl_time(const cs_doc_t *doc, cs_val_t entry) {
  int64_t t;
  return cs_view_int_key(doc, entry, CS_KEY_TIME_US, &t) ? t : -1;
}

static int cs_tl_apply(cs_tl_builder_t *b, const cs_doc_t *doc, cs_val_t entry, cs_live_map_t *live) {
  cs_peak_change_t change;
  if (cs_peak_apply(doc, entry, live, &change) != 0) return -1;
  size_t band;
  if (change.ended) {
    if (cs_tl_site(b, &change.ended_block, &band) != 0) return -1;
    b->now.bands[band] -= change.ended_block.bytes;
  }
  if (change.began) {
    if (cs_tl_site(b, &change.began_block, &band) != 0) return -1;
    b->now.bands[band] += change.began_block.bytes;
  }
  cs_assert(cs_tl_allocated(&b->now) == live->bytes);
  return 0;
}

static int cs_tl_walk(cs_tl_builder_t *b, const cs_doc_t *doc, int device, cs_live_map_t *live) {
  cs_report_timeline_t *t = b->t;
  cs_val_t trace = cs_view_trace(doc, device);
  size_t n = cs_doc_len(doc, trace);
  const cs_val_t *entries = cs_doc_items(doc, trace);
  t->has_time = true;
  t->events = n;
  for (size_t i = 0; i < n; i++) {
    if (cs_tl_time(doc, entries[i]) < 0) t->has_time = false;
  }
  if (cs_peak_initial(doc, device, live) != 0) return -1;
  for (size_t i = 0; i < live->nslots; i++) {
    size_t band;
    if (!live->slots[i].used) continue;
    if (cs_tl_site(b, &live->slots[i], &band) != 0) return -1;
    b->now.bands[band] += live->slots[i].bytes;
  }
  b->now.state = 0;
  b->now.time_us = n > 0 ? cs_tl_time(doc, entries[0]) : -1;
  b->now.reserved = cs_tl_reserved_start(&b->kinds, doc, trace);
  t->reserved_peak = b->now.reserved;
  b->first = b->now;
  if (cs_tl_sample(b) != 0) return -1;
  for (size_t i = 0; i < n; i++) {
    b->now.state++;
    b->now.time_us = cs_tl_time(doc, entries[i]);
    b->now.reserved += cs_tl_reserved_change(&b->kinds, doc, entries[i]);
    if (cs_tl_apply(b, doc, entries[i], live) != 0) return -1;
    if (cs_tl_marker(b, doc, entries[i], b->now.state, b->now.time_us) != 0) return -1;
    if (cs_tl_sample(b) != 0) return -1;
  }
  return cs_tl_flush(b, true);
}

int cs_report_timeline(const cs_doc_t *doc, int device, const cs_sites_t *top, cs_report_stacks_t *r,
                       cs_report_timeline_t *out) {
  memset(out, 0, sizeof *out);
  out->nbands = top->count < CS_REPORT_TOP_SITES ? top->count : CS_REPORT_TOP_SITES;
  for (size_t k = 0; k < CS_REPORT_TOP_SITES; k++) out->band_site[k] = CS_REPORT_NONE;
  cs_tl_builder_t b;
  memset(&b, 0, sizeof b);
  b.t = out;
  b.r = r;
  b.top = top;
  cs_live_map_t live;
  cs_live_map_init(&live);
  int rc = cs_kinds_init(&b.kinds, doc, device);
  if (rc == 0) rc = cs_tl_walk(&b, doc, device, &live);
  cs_kinds_free(&b.kinds);
  cs_live_map_free(&live);
  free(b.band_of);
  return rc;
}

void cs_report_timeline_free(cs_report_timeline_t *t) {
  free(t->points);
  free(t->markers);
  memset(t, 0, sizeof *t);
}

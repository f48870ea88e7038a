/* SPDX-License-Identifier: Apache-2.0 */
/* One device's part of the report's data (contract in report/report_device.h). */
#include "report/report_device.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/device_blocks.h"
#include "analysis/kinds.h"
#include "analysis/peak.h"
#include "analysis/phase_lanes.h"
#include "analysis/reconcile.h"
#include "report/report_timeline.h"
#include "analysis/snapstats.h"
#include "analysis/snapview.h"

static void cs_rd_int(cs_emitter_t *e, const char *key, int64_t value) {
  cs_emit_key(e, key);
  cs_emit_int(e, value);
}

/* Addresses and streams are pointers: hexadecimal text, which JavaScript numbers cannot round. */
static void cs_rd_hex(cs_emitter_t *e, const cs_doc_t *doc, cs_val_t obj, cs_doc_key_t key) {
  int64_t v;
  char text[32];
  if (cs_view_int_key(doc, obj, key, &v)) snprintf(text, sizeof text, "0x%" PRIx64, (uint64_t)v);
  else snprintf(text, sizeof text, "?");
  cs_emit_str(e, text);
}

/* ------------------------------------------------------------------------------------------------
 * Site lists
 * ---------------------------------------------------------------------------------------------- */

/* sites (sorted) as "key": [[site, bytes, blocks]...] and "key_more": [sites, bytes, blocks] for
 * the rows beyond CS_REPORT_MAX_SITES. */
static void cs_rd_sites(cs_emitter_t *e, const char *key, const char *more_key, const cs_sites_t *sites,
                        const cs_report_stacks_t *r) {
  cs_emit_key(e, key);
  cs_emit_list_begin(e);
  uint64_t more[3] = {0, 0, 0};
  for (size_t i = 0; i < sites->count; i++) {
    const cs_site_total_t *s = &sites->totals[i];
    if (i >= CS_REPORT_MAX_SITES) {
      more[0]++, more[1] += s->bytes, more[2] += s->blocks;
      continue;
    }
    uint32_t pos = cs_report_site_find(r, &s->site);
    cs_emit_list_begin(e);
    cs_emit_int(e, pos == CS_REPORT_NONE ? -1 : (int64_t)pos);
    cs_emit_int(e, (int64_t)s->bytes);
    cs_emit_int(e, (int64_t)s->blocks);
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);
  cs_emit_key(e, more_key);
  cs_emit_list_begin(e);
  for (size_t i = 0; i < 3; i++) cs_emit_int(e, (int64_t)more[i]);
  cs_emit_list_end(e);
}

/* ------------------------------------------------------------------------------------------------
 * Timeline
 * ---------------------------------------------------------------------------------------------- */

/* The timeline as columns: one list per quantity, one element per point (smaller than a list of
 * points, and what the drawing loops want). */
static void cs_rd_timeline(cs_emitter_t *e, const cs_report_timeline_t *t) {
  cs_emit_key(e, "bands");
  cs_emit_list_begin(e);
  for (size_t k = 0; k < t->nbands; k++) cs_emit_int(e, t->band_site[k] == CS_REPORT_NONE ? -1 : (int64_t)t->band_site[k]);
  cs_emit_list_end(e);

  cs_emit_key(e, "timeline");
  cs_emit_dict_begin(e);
  cs_emit_key(e, "state");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < t->npoints; i++) cs_emit_int(e, (int64_t)t->points[i].state);
  cs_emit_list_end(e);
  cs_emit_key(e, "time");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < t->npoints; i++) cs_emit_int(e, t->has_time ? t->points[i].time_us : -1);
  cs_emit_list_end(e);
  cs_emit_key(e, "reserved");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < t->npoints; i++) cs_emit_int(e, t->points[i].reserved);
  cs_emit_list_end(e);
  /* the bands of the top sites, then the band of every other site */
  cs_emit_key(e, "bands");
  cs_emit_list_begin(e);
  for (size_t k = 0; k <= t->nbands; k++) {
    size_t band = k < t->nbands ? k : CS_REPORT_TOP_SITES;
    cs_emit_list_begin(e);
    for (size_t i = 0; i < t->npoints; i++) cs_emit_int(e, (int64_t)t->points[i].bands[band]);
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);
  cs_emit_dict_end(e);

  cs_emit_key(e, "markers");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < t->nmarkers; i++) {
    const cs_report_marker_t *m = &t->markers[i];
    cs_emit_list_begin(e);
    cs_emit_str(e, m->kind == CS_REPORT_MARK_OOM ? "oom" : "snapshot");
    cs_emit_int(e, (int64_t)m->state);
    cs_emit_int(e, m->time_us);
    cs_emit_int(e, m->size);
    cs_emit_int(e, m->device_free);
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);
  cs_rd_int(e, "markers_left_out", (int64_t)t->markers_left_out);
}

/* The program's phases (external_annotations: NVTX ranges, record_function), drawn over the
 * timeline: [name, depth, start state, end state, start us, end us, lane] each, depth within the
 * lane; and the lanes, the threads whose phases they are (analysis/phase_lanes.h), as "phase_threads" (absent without
 * phases): [thread (0: none recorded), its label ("thread T (NAME)", "" for none)] each. */
enum { CS_RD_MAX_PHASES = 2000 };

static int cs_rd_phases(cs_emitter_t *e, const cs_doc_t *doc, int device) {
  cs_phase_span_t *spans = malloc(CS_RD_MAX_PHASES * sizeof *spans);
  size_t n = 0, left_out = 0;
  cs_phase_lanes_t lanes = {NULL, 0, NULL};
  int rc = spans ? cs_phases_spans(doc, device, spans, CS_RD_MAX_PHASES, &n, &left_out, &lanes) : -1;
  cs_emit_key(e, "phases");
  cs_emit_list_begin(e);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    cs_emit_list_begin(e);
    cs_emit_str(e, spans[i].name);
    cs_emit_int(e, (int64_t)spans[i].depth);
    cs_emit_int(e, (int64_t)spans[i].start_state);
    cs_emit_int(e, (int64_t)spans[i].end_state);
    cs_emit_int(e, spans[i].start_us);
    cs_emit_int(e, spans[i].end_us);
    cs_emit_int(e, (int64_t)spans[i].lane);
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);
  cs_rd_int(e, "phases_left_out", (int64_t)left_out);
  if (lanes.count > 0) cs_emit_key(e, "phase_threads");
  if (lanes.count > 0) cs_emit_list_begin(e);
  for (size_t i = 0; rc == 0 && i < lanes.count; i++) {
    char label[512];
    cs_phase_lane_label(&lanes.items[i], label, sizeof label);
    cs_emit_list_begin(e);
    cs_emit_int(e, lanes.items[i].thread);
    cs_emit_str(e, label);
    cs_emit_list_end(e);
  }
  if (lanes.count > 0) cs_emit_list_end(e);
  cs_phase_lanes_free(&lanes);
  free(spans);
  return rc;
}

/* ------------------------------------------------------------------------------------------------
 * Segments
 * ---------------------------------------------------------------------------------------------- */

static size_t cs_rd_count_blocks(const cs_doc_t *doc, int device) {
  size_t n = 0;
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  for (cs_view_device_blocks_begin(&it, doc, device); cs_view_device_blocks_next(&it, &b);) n++;
  return n;
}

/* A run of blocks drawn as one: a single block, or (past CS_REPORT_MAX_BLOCKS) neighbours in the
 * same state. */
typedef struct cs_rd_run_s {
  int64_t size, requested;
  int state;
  int64_t stack; /* -1: none, or the blocks' stacks differ */
  int64_t count;
} cs_rd_run_t;

static void cs_rd_run_emit(cs_emitter_t *e, const cs_rd_run_t *run) {
  cs_emit_int(e, run->size);
  cs_emit_int(e, run->requested);
  cs_emit_int(e, run->state);
  cs_emit_int(e, run->stack);
  cs_emit_int(e, run->count);
}

/* The blocks of one segment; their stacks (and the sites of allocated blocks) go to r. On failure
 * the list written so far is left as it is: the caller closes it (every container written here is
 * closed whatever happens, so the emitter stays well nested). */
static int cs_rd_segment_blocks(cs_emitter_t *e, cs_val_t segment, bool merge, cs_report_stacks_t *r) {
  cs_view_blocks_t it;
  cs_view_block_t b;
  cs_rd_run_t run = {.count = 0};
  for (cs_view_blocks_begin(&it, r->doc, segment); cs_view_blocks_next(&it, &b);) {
    uint32_t stack = CS_REPORT_NONE;
    if (b.state != CS_VIEW_INACTIVE && cs_report_stack(r, b.frames, &stack) != 0) return -1;
    if (b.state == CS_VIEW_ALLOCATED) {
      uint32_t site;
      if (cs_report_site(r, b.frames, (uint64_t)b.requested, &site) != 0) return -1;
    }
    int64_t stack_pos = stack == CS_REPORT_NONE ? -1 : (int64_t)stack;
    if (merge && run.count > 0 && run.state == (int)b.state) {
      run.size += b.size;
      run.requested += b.requested;
      if (run.stack != stack_pos) run.stack = -1;
      run.count++;
      continue;
    }
    if (run.count > 0) cs_rd_run_emit(e, &run);
    run = (cs_rd_run_t){.size = b.size, .requested = b.requested, .state = (int)b.state, .stack = stack_pos,
                        .count = 1};
  }
  if (run.count > 0) cs_rd_run_emit(e, &run);
  return 0;
}

static int cs_rd_segments(cs_emitter_t *e, const cs_doc_t *doc, int device, cs_report_stacks_t *r) {
  bool merge = cs_rd_count_blocks(doc, device) > CS_REPORT_MAX_BLOCKS;
  cs_emit_key(e, "segments_merged");
  cs_emit_bool(e, merge);
  cs_emit_key(e, "segments");
  cs_emit_list_begin(e);
  int rc = 0;
  cs_val_t segments = cs_view_segments(doc);
  size_t nsegments = cs_doc_len(doc, segments);
  const cs_val_t *segment_items = cs_doc_items(doc, segments);
  for (size_t i = 0; rc == 0 && i < nsegments; i++) {
    cs_val_t segment = segment_items[i];
    if (cs_view_segment_device(doc, segment) != device) continue;
    int64_t total;
    if (!cs_view_int_key(doc, segment, CS_KEY_TOTAL_SIZE, &total) || total < 0) total = 0;
    const char *pool = cs_view_str_key(doc, segment, CS_KEY_SEGMENT_TYPE);
    cs_emit_list_begin(e);
    cs_rd_hex(e, doc, segment, CS_KEY_ADDRESS);
    cs_emit_int(e, total);
    cs_emit_str(e, pool != NULL ? pool : "?");
    cs_rd_hex(e, doc, segment, CS_KEY_STREAM);
    cs_emit_list_begin(e);
    rc = cs_rd_segment_blocks(e, segment, merge, r);
    cs_emit_list_end(e);
    /* memory passed through: its kind, last; never the cache's reserved bytes (analysis/kinds.h) */
    const char *kind = cs_kinds_segment(doc, segment);
    if (kind != cs_kind_cache) cs_emit_str(e, kind);
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);
  return rc;
}

/* ------------------------------------------------------------------------------------------------
 * Tables
 * ---------------------------------------------------------------------------------------------- */

static int cs_rd_table(cs_emitter_t *e, const cs_doc_t *doc, int device) {
  int found;
  char *text = cs_snapstats_table(doc, device, &found);
  cs_emit_key(e, "table");
  cs_emit_str(e, text != NULL ? text : "");
  free(text);
  char note[160] = "";
  if (found < 0) {
    snprintf(note, sizeof note, "No cudasnap statistics in this snapshot: current values are computed from its "
                                "segments; peaks, totals, OOMs and retries are unknown (?).");
  } else if (found < CS_STATS_KEY_COUNT) {
    snprintf(note, sizeof note, "%d of the %d memory_stats keys are missing; they read 0.", CS_STATS_KEY_COUNT - found,
             CS_STATS_KEY_COUNT);
  }
  cs_emit_key(e, "table_note");
  cs_emit_str(e, note);
  /* the driver's view, as summary prints it ("" for snapshots without one) */
  char *driver = NULL;
  size_t driver_len = 0;
  FILE *out = open_memstream(&driver, &driver_len);
  if (out != NULL) {
    cs_reconcile_write(out, doc, device);
    fclose(out);
  }
  cs_emit_key(e, "driver_table");
  cs_emit_str(e, driver != NULL ? driver : "");
  free(driver);
  return text != NULL ? 0 : -1;
}

static void cs_rd_row(cs_emitter_t *e, const char *what, int64_t said, int64_t computed, const char *note) {
  cs_emit_list_begin(e);
  cs_emit_str(e, what);
  cs_emit_int(e, said);
  cs_emit_int(e, computed);
  cs_emit_str(e, note);
  cs_emit_list_end(e);
}

/* What the allocator's own counters say against what its segments and trace show. Only cudasnap
 * snapshots carry counters; for others the list is empty. */
static void cs_rd_reconcile(cs_emitter_t *e, const cs_doc_t *doc, int device, const cs_report_timeline_t *t) {
  cs_stats_t said, seen;
  bool have = cs_snapstats_from_cudasnap(doc, device, &said) >= 0;
  cs_snapstats_from_segments(doc, device, &seen);
  cs_emit_key(e, "reconcile");
  cs_emit_list_begin(e);
  if (have) {
    cs_rd_row(e, "reserved bytes", said.reserved_bytes[CS_STAT_ALL].current, seen.reserved_bytes[CS_STAT_ALL].current,
              "segments' total_size");
    cs_rd_row(e, "segments", said.segment[CS_STAT_ALL].current, seen.segment[CS_STAT_ALL].current, "segments listed");
    cs_rd_row(e, "segments held from the driver", said.num_device_alloc - said.num_device_free,
              seen.segment[CS_STAT_ALL].current, "num_device_alloc - num_device_free, against segments listed");
    cs_rd_row(e, "allocated bytes", said.allocated_bytes[CS_STAT_ALL].current,
              seen.allocated_bytes[CS_STAT_ALL].current, "active_allocated blocks' size");
    cs_rd_row(e, "allocated blocks", said.allocation[CS_STAT_ALL].current, seen.allocation[CS_STAT_ALL].current,
              "active_allocated blocks");
    cs_rd_row(e, "active bytes", said.active_bytes[CS_STAT_ALL].current, seen.active_bytes[CS_STAT_ALL].current,
              "allocated and pending-free blocks' size");
    cs_rd_row(e, "requested bytes", said.requested_bytes[CS_STAT_ALL].current,
              seen.requested_bytes[CS_STAT_ALL].current, "active blocks' requested_size");
    cs_rd_row(e, "free bytes in split segments", said.inactive_split_bytes[CS_STAT_ALL].current,
              seen.inactive_split_bytes[CS_STAT_ALL].current, "inactive blocks of segments with other blocks");
    int64_t ooms = 0;
    for (size_t i = 0; i < t->nmarkers; i++) ooms += t->markers[i].kind == CS_REPORT_MARK_OOM;
    cs_rd_row(e, "out-of-memory errors", said.num_ooms, ooms, "oom entries in the trace (older ones may have been dropped)");
  }
  cs_emit_list_end(e);
}

/* ------------------------------------------------------------------------------------------------
 * The device
 * ---------------------------------------------------------------------------------------------- */

static int64_t cs_rd_entry_time(const cs_doc_t *doc, int device, size_t after) {
  cs_val_t trace = cs_view_trace(doc, device);
  if (after == 0 || after > cs_doc_len(doc, trace)) return -1;
  int64_t t;
  return cs_view_int_key(doc, cs_doc_at(doc, trace, after - 1), CS_KEY_TIME_US, &t) ? t : -1;
}

typedef struct cs_rd_state_s {
  cs_peak_t peak;
  cs_sites_t at_peak;
  cs_report_timeline_t timeline;
  cs_device_blocks_t blocks;
} cs_rd_state_t;

static int cs_rd_emit(const cs_doc_t *doc, int device, cs_rd_state_t *s, cs_report_stacks_t *r, cs_emitter_t *e) {
  const cs_report_timeline_t *t = &s->timeline;
  cs_emit_dict_begin(e);
  cs_rd_int(e, "device", device);
  cs_rd_int(e, "events", (int64_t)t->events);
  cs_emit_key(e, "has_time");
  cs_emit_bool(e, t->has_time);

  cs_emit_key(e, "peak");
  cs_emit_dict_begin(e);
  cs_rd_int(e, "bytes", (int64_t)s->peak.bytes);
  cs_rd_int(e, "after", (int64_t)s->peak.after);
  cs_rd_int(e, "time_us", cs_rd_entry_time(doc, device, s->peak.after));
  cs_emit_dict_end(e);
  cs_emit_key(e, "reserved_peak");
  cs_emit_dict_begin(e);
  cs_rd_int(e, "bytes", t->reserved_peak);
  cs_rd_int(e, "after", (int64_t)t->reserved_peak_state);
  cs_emit_dict_end(e);
  cs_rd_timeline(e, t);
  int phases_rc = cs_rd_phases(e, doc, device);

  /* Segments before the site lists: their blocks register the sites of the live list. A failure
   * still closes every container (the emitter must stay well nested). */
  int rc = cs_rd_segments(e, doc, device, r);
  cs_rd_sites(e, "peak_sites", "peak_sites_more", &s->at_peak, r);
  cs_rd_sites(e, "live_sites", "live_sites_more", &s->blocks.live, r);
  uint64_t live_bytes = 0, live_blocks = 0;
  for (size_t i = 0; i < s->blocks.live.count; i++) {
    live_bytes += s->blocks.live.totals[i].bytes;
    live_blocks += s->blocks.live.totals[i].blocks;
  }
  cs_emit_key(e, "live");
  cs_emit_dict_begin(e);
  cs_rd_int(e, "bytes", (int64_t)live_bytes);
  cs_rd_int(e, "blocks", (int64_t)live_blocks);
  cs_emit_dict_end(e);
  cs_emit_key(e, "inside");
  cs_emit_dict_begin(e);
  cs_rd_int(e, "rounding", (int64_t)s->blocks.rounding);
  cs_rd_int(e, "gaps", (int64_t)s->blocks.gaps);
  cs_emit_dict_end(e);

  if (cs_rd_table(e, doc, device) != 0 || phases_rc != 0) rc = -1;
  cs_rd_reconcile(e, doc, device, t);
  cs_emit_dict_end(e);
  return rc;
}

int cs_report_device(const cs_doc_t *doc, int device, cs_report_stacks_t *r, cs_emitter_t *e) {
  cs_rd_state_t s;
  memset(&s, 0, sizeof s); /* every part can be freed, whichever step fails */
  cs_sites_init(&s.at_peak);
  int rc = cs_peak_find(doc, device, &s.peak, &s.at_peak);
  cs_sites_sort(&s.at_peak);
  if (rc == 0) rc = cs_report_timeline(doc, device, &s.at_peak, r, &s.timeline);
  if (rc == 0) rc = cs_device_blocks(doc, device, &s.blocks);
  if (rc == 0) {
    cs_sites_sort(&s.blocks.live);
    rc = cs_rd_emit(doc, device, &s, r, e);
  }
  cs_report_timeline_free(&s.timeline);
  cs_device_blocks_free(&s.blocks);
  cs_sites_free(&s.at_peak);
  return rc;
}

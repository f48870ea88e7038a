/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots as Chrome Trace Event JSON (contract in export/perfetto.h). */
#include "export/perfetto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/device_blocks.h"
#include "analysis/kinds.h"
#include "analysis/oom.h"
#include "analysis/peak.h"
#include "analysis/phase_lanes.h"
#include "analysis/sites.h"
#include "analysis/snapview.h"
#include "common/cs_format.h"
#include "common/cs_saturate.h"
#include "memviz/emit.h"

struct cs_perfetto_s {
  cs_emitter_t *e;
  int error; /* ENOMEM, sticky */
  cs_oom_t oom; /* the answer about the file being added's last OOM (analysis/oom.h) */
};

/* Tracks per device: allocated, reserved, and the kinds passed through. */
enum { CS_PF_ALLOCATED = 0, CS_PF_RESERVED = 1, CS_PF_KIND0 = 2, CS_PF_MAX_TRACKS = 18 };

typedef struct cs_pf_point_s {
  int64_t ts, value;
  int64_t reserved; /* the reserved bytes at that moment (the [memory] events) */
} cs_pf_point_t;

/* One counter track and its coalescing state (see perfetto.h). */
typedef struct cs_pf_track_s {
  const char *kind;  /* for kind tracks: the kind; NULL for allocated and reserved */
  int64_t value;     /* now */
  int64_t bucket;    /* of the points in lo/hi; -1 = none yet */
  cs_pf_point_t lo, hi;
  cs_pf_point_t last_out; /* the last point written */
  bool written;
} cs_pf_track_t;

typedef struct cs_pf_device_s {
  cs_perfetto_t *pf;
  const cs_doc_t *doc;
  int pid, device;
  cs_kinds_t kinds;
  bool timed;         /* the trace has times (else ts = event index) */
  int64_t t0, t1, width; /* time span and bucket width */
  size_t index;       /* of the next entry */
  size_t ooms;
  uint64_t start_bytes; /* the cache's live bytes before the first entry (cs_pf_each) */
  cs_pf_track_t tracks[CS_PF_MAX_TRACKS];
  int ntracks;
} cs_pf_device_t;

enum { CS_PF_DEVICE_TYPE_CUDA = 1 }; /* torch.profiler's DeviceType::CUDA */

/* ---- events ---------------------------------------------------------------------------------- */

static void cs_pf_event_head(cs_emitter_t *e, const char *ph, const char *name, int pid, int tid, int64_t ts) {
  cs_emit_dict_begin(e);
  cs_emit_key(e, "ph");
  cs_emit_str(e, ph);
  cs_emit_key(e, "name");
  cs_emit_str(e, name);
  cs_emit_key(e, "pid");
  cs_emit_int(e, pid);
  cs_emit_key(e, "tid");
  cs_emit_int(e, tid);
  cs_emit_key(e, "ts");
  cs_emit_int(e, ts);
}

static void cs_pf_metadata(cs_emitter_t *e, const char *what, int pid, int tid, const char *name) {
  cs_pf_event_head(e, "M", what, pid, tid, 0);
  cs_emit_key(e, "args");
  cs_emit_dict_begin(e);
  cs_emit_key(e, "name");
  cs_emit_str(e, name);
  cs_emit_dict_end(e);
  cs_emit_dict_end(e);
}

static void cs_pf_track_name(const cs_pf_device_t *d, int t, char *buf, size_t len) {
  const cs_pf_track_t *k = &d->tracks[t];
  snprintf(buf, len, "device %d %s", d->device,
           t == CS_PF_ALLOCATED ? "allocated" : t == CS_PF_RESERVED ? "reserved" : k->kind);
}

static void cs_pf_write_point(cs_pf_device_t *d, int t, const cs_pf_point_t *p) {
  cs_pf_track_t *k = &d->tracks[t];
  cs_emitter_t *e = d->pf->e;
  char name[128];
  cs_pf_track_name(d, t, name, sizeof name);
  cs_pf_event_head(e, "C", name, d->pid, 0, p->ts);
  cs_emit_key(e, "args");
  cs_emit_dict_begin(e);
  cs_emit_key(e, "bytes");
  cs_emit_int(e, p->value);
  cs_emit_dict_end(e);
  cs_emit_dict_end(e);
  if (t == CS_PF_ALLOCATED) {
    /* torch.profiler's own memory record, for the tools that read only those */
    cs_pf_event_head(e, "i", "[memory]", d->pid, 0, p->ts);
    cs_emit_key(e, "s");
    cs_emit_str(e, "p");
    cs_emit_key(e, "args");
    cs_emit_dict_begin(e);
    cs_emit_key(e, "Device Type");
    cs_emit_int(e, CS_PF_DEVICE_TYPE_CUDA);
    cs_emit_key(e, "Device Id");
    cs_emit_int(e, d->device);
    cs_emit_key(e, "Bytes");
    cs_emit_int(e, cs_sub_sat_i64(p->value, k->written ? k->last_out.value : 0));
    cs_emit_key(e, "Total Allocated");
    cs_emit_int(e, p->value);
    cs_emit_key(e, "Total Reserved");
    cs_emit_int(e, p->reserved);
    cs_emit_dict_end(e);
    cs_emit_dict_end(e);
  }
  k->last_out = *p;
  k->written = true;
}

/* ---- coalescing ------------------------------------------------------------------------------ */

static void cs_pf_flush_bucket(cs_pf_device_t *d, int t) {
  cs_pf_track_t *k = &d->tracks[t];
  if (k->bucket < 0) return;
  const cs_pf_point_t *first = k->lo.ts <= k->hi.ts ? &k->lo : &k->hi, *second = first == &k->lo ? &k->hi : &k->lo;
  cs_pf_write_point(d, t, first);
  if (second->value != first->value) cs_pf_write_point(d, t, second);
  k->bucket = -1;
}

/* The track's value at ts is now value. */
static void cs_pf_sample(cs_pf_device_t *d, int t, int64_t ts, int64_t value) {
  cs_pf_track_t *k = &d->tracks[t];
  k->value = value;
  int64_t at = ts < d->t0 ? d->t0 : ts > d->t1 ? d->t1 : ts;
  int64_t bucket = (int64_t)(((uint64_t)at - (uint64_t)d->t0) / (uint64_t)d->width); /* at >= t0 */
  if (bucket != k->bucket) {
    cs_pf_flush_bucket(d, t);
    k->bucket = bucket;
    k->lo = k->hi = (cs_pf_point_t){.ts = ts, .value = value, .reserved = d->tracks[CS_PF_RESERVED].value};
    return;
  }
  cs_pf_point_t p = {.ts = ts, .value = value, .reserved = d->tracks[CS_PF_RESERVED].value};
  if (value < k->lo.value) k->lo = p;
  if (value > k->hi.value) k->hi = p;
}

/* The end of the track: its last bucket and its final value. */
static void cs_pf_finish_track(cs_pf_device_t *d, int t, int64_t ts) {
  cs_pf_track_t *k = &d->tracks[t];
  cs_pf_flush_bucket(d, t);
  if (!k->written || k->last_out.value != k->value || k->last_out.ts < ts)
    cs_pf_write_point(d, t, &(cs_pf_point_t){.ts = ts, .value = k->value, .reserved = d->tracks[CS_PF_RESERVED].value});
}

/* The kind track for kind, added if new; -1 when there is no room (more kinds than exist). */
static int cs_pf_kind_track(cs_pf_device_t *d, const char *kind) {
  for (int t = CS_PF_KIND0; t < d->ntracks; t++)
    if (strcmp(d->tracks[t].kind, kind) == 0) return t;
  if (d->ntracks == CS_PF_MAX_TRACKS) return -1;
  d->tracks[d->ntracks] = (cs_pf_track_t){.kind = kind, .bucket = -1};
  return d->ntracks++;
}

/* ---- one device ------------------------------------------------------------------------------ */

static int64_t cs_pf_time(const cs_pf_device_t *d, cs_val_t entry, size_t index) {
  int64_t t;
  if (d->timed && cs_view_int_key(d->doc, entry, CS_KEY_TIME_US, &t)) return t;
  return (int64_t)index;
}

static int cs_pf_block_sign(const char *action) {
  if (strcmp(action, "alloc") == 0) return 1;
  if (strcmp(action, "free_completed") == 0 || strcmp(action, "free") == 0) return -1;
  return 0;
}

/* The values before the first entry: the final state's, taken back through the trace. */
static void cs_pf_initial(cs_pf_device_t *d, cs_val_t trace, size_t n) {
  const cs_doc_t *doc = d->doc;
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  cs_view_device_blocks_begin(&it, doc, d->device);
  while (cs_view_device_blocks_next(&it, &b)) {
    if (b.state == CS_VIEW_INACTIVE) continue;
    const char *kind = cs_kinds_of(&d->kinds, b.addr);
    int t = kind == cs_kind_cache ? -1 : cs_pf_kind_track(d, kind);
    if (t >= 0) d->tracks[t].value = cs_add_sat_i64(d->tracks[t].value, b.requested);
  }
  for (size_t i = 0; i < d->kinds.count; i++)
    if (d->kinds.ranges[i].kind == cs_kind_cache)
      d->tracks[CS_PF_RESERVED].value =
          cs_add_sat_i64(d->tracks[CS_PF_RESERVED].value, d->kinds.ranges[i].end - d->kinds.ranges[i].addr);
  d->t0 = INT64_MAX;
  d->t1 = INT64_MIN;
  d->timed = n > 0;
  for (size_t i = 0; i < n && d->timed; i++) {
    int64_t t;
    d->timed = cs_view_int_key(doc, cs_doc_at(doc, trace, i), CS_KEY_TIME_US, &t);
  }
  for (size_t i = 0; i < n; i++) {
    cs_val_t entry = cs_doc_at(doc, trace, i);
    int64_t t = cs_pf_time(d, entry, i), addr, size;
    if (t < d->t0) d->t0 = t;
    if (t > d->t1) d->t1 = t;
    const char *action = cs_view_str_key(doc, entry, CS_KEY_ACTION);
    if (action == NULL || !cs_view_int_key(doc, entry, CS_KEY_ADDR, &addr) ||
        !cs_view_int_key(doc, entry, CS_KEY_SIZE, &size) || size < 0)
      continue;
    int seg = cs_view_segment_sign(action), sign = cs_pf_block_sign(action);
    const char *kind = seg || sign ? cs_kinds_of_entry(&d->kinds, entry, addr) : cs_kind_cache;
    if (seg && cs_kinds_reserved(kind))
      d->tracks[CS_PF_RESERVED].value = cs_sub_sat_i64(d->tracks[CS_PF_RESERVED].value, seg * size);
    int k = kind == cs_kind_cache || !sign ? -1 : cs_pf_kind_track(d, kind);
    if (k >= 0) d->tracks[k].value = cs_sub_sat_i64(d->tracks[k].value, sign * size);
  }
  if (n == 0) d->t0 = d->t1 = 0;
  /* t1 >= t0, but their difference may not fit an int64; a bucket's width does */
  d->width = (int64_t)(((uint64_t)d->t1 - (uint64_t)d->t0) / CS_PERFETTO_BUCKETS + 1);
  for (int t = 0; t < d->ntracks; t++)
    if (d->tracks[t].value < 0) d->tracks[t].value = 0; /* a trace that lost entries */
}

static void cs_pf_oom(cs_pf_device_t *d, cs_val_t entry, int64_t ts) {
  if (d->ooms++ >= CS_PERFETTO_MAX_OOMS) return;
  cs_emitter_t *e = d->pf->e;
  cs_pf_event_head(e, "i", "OOM", d->pid, 0, ts);
  cs_emit_key(e, "s");
  cs_emit_str(e, "p");
  cs_emit_key(e, "args");
  cs_emit_dict_begin(e);
  cs_emit_key(e, "device");
  cs_emit_int(e, d->device);
  int64_t v;
  if (cs_view_int_key(d->doc, entry, CS_KEY_SIZE, &v)) {
    cs_emit_key(e, "size");
    cs_emit_int(e, v);
  }
  if (cs_view_int_key(d->doc, entry, CS_KEY_DEVICE_FREE, &v)) {
    cs_emit_key(e, "device_free");
    cs_emit_int(e, v);
  }
  if (cs_view_int_key(d->doc, entry, CS_KEY_STREAM, &v)) {
    cs_emit_key(e, "stream");
    cs_emit_int(e, v);
  }
  char text[4096];
  cs_site_t site = cs_site_of(d->doc, cs_doc_get_key(d->doc, entry, CS_KEY_FRAMES));
  cs_site_format(&site, text, sizeof text);
  cs_emit_kv_str(e, "site", text);
  /* the last OOM, which `summary` and the report lead with: its whole answer */
  const cs_oom_t *o = &d->pf->oom;
  if (o->found && o->device == d->device && o->index == d->index - 1) {
    cs_oom_headline(o, text, sizeof text);
    cs_emit_kv_str(e, "message", text);
    if (o->total_known) cs_emit_kv_int(e, "driver_total", (int64_t)o->driver_total);
    cs_emit_kv_int(e, "cache_reserved", (int64_t)o->reserved);
    if (o->blocks_known) {
      cs_emit_kv_int(e, "cache_free", (int64_t)o->cached_free);
      cs_emit_kv_int(e, "largest_free_block", (int64_t)o->largest_free);
    }
    if (o->passthrough > 0) cs_emit_kv_int(e, "passthrough", (int64_t)o->passthrough);
    cs_oom_verdict_text(o, CS_OOM_SITES_INLINE, text, sizeof text);
    cs_emit_kv_str(e, "verdict", text);
    if (o->verdict == CS_OOM_EXHAUSTED || o->verdict == CS_OOM_UNDECIDED) {
      /* the sites that hold most, "SIZE SITE; ..." (an argument is a string or a number) */
      size_t used = 0;
      text[0] = '\0';
      for (size_t i = 0; i < o->nholders && used < sizeof text; i++) {
        char size[32], where[512];
        cs_format_size_torch(o->holders[i].bytes, size, sizeof size);
        cs_site_format(&o->holders[i].site, where, sizeof where);
        int n = snprintf(text + used, sizeof text - used, "%s%s %s", i ? "; " : "", size, where);
        if (n < 0) break;
        used += (size_t)n;
      }
      if (o->nholders) cs_emit_kv_str(e, "top_sites", text);
    }
  } else if (cs_view_int_key(d->doc, entry, CS_KEY_SIZE, &v) && v >= 0) {
    char asked[32];
    cs_format_size_torch((uint64_t)v, asked, sizeof asked);
    snprintf(text, sizeof text, "Tried to allocate %s", asked);
    cs_emit_kv_str(e, "message", text);
  }
  cs_emit_dict_end(e);
  cs_emit_dict_end(e);
}

static void cs_pf_each(void *ctx, const cs_doc_t *doc, cs_val_t entry, const cs_live_map_t *live) {
  cs_pf_device_t *d = ctx;
  /* allocated: the cache's live blocks (memory passed through has its kinds' tracks) */
  uint64_t live_bytes = live->bytes - live->passthrough_bytes;
  if (cs_val_absent(entry)) {
    d->start_bytes = live_bytes;
    return;
  }
  size_t i = d->index++;
  int64_t ts = cs_pf_time(d, entry, i), addr, size;
  if (i == 0) {
    for (int t = 0; t < d->ntracks; t++) cs_pf_sample(d, t, ts, d->tracks[t].value);
    cs_pf_sample(d, CS_PF_ALLOCATED, ts, (int64_t)d->start_bytes);
  }
  const char *action = cs_view_str_key(doc, entry, CS_KEY_ACTION);
  if (action != NULL && strcmp(action, "oom") == 0) cs_pf_oom(d, entry, ts);
  if (action != NULL && cs_view_int_key(doc, entry, CS_KEY_ADDR, &addr) &&
      cs_view_int_key(doc, entry, CS_KEY_SIZE, &size) && size >= 0) {
    int seg = cs_view_segment_sign(action), block = cs_pf_block_sign(action);
    const char *kind = seg || block ? cs_kinds_of_entry(&d->kinds, entry, addr) : cs_kind_cache;
    if (seg && cs_kinds_reserved(kind))
      cs_pf_sample(d, CS_PF_RESERVED, ts, cs_add_sat_i64(d->tracks[CS_PF_RESERVED].value, seg * size));
    int k = kind == cs_kind_cache || !block ? -1 : cs_pf_kind_track(d, kind);
    if (k >= 0) cs_pf_sample(d, k, ts, cs_add_sat_i64(d->tracks[k].value, block * size));
  }
  cs_pf_sample(d, CS_PF_ALLOCATED, ts, (int64_t)live_bytes);
}

static int cs_pf_device(cs_perfetto_t *pf, const cs_doc_t *doc, int pid, int device, int64_t snapshot_us) {
  cs_pf_device_t *d = calloc(1, sizeof *d);
  if (d == NULL) return ENOMEM;
  *d = (cs_pf_device_t){.pf = pf, .doc = doc, .pid = pid, .device = device, .ntracks = CS_PF_KIND0};
  for (int t = 0; t < CS_PF_MAX_TRACKS; t++) d->tracks[t].bucket = -1;
  int rc = cs_kinds_init(&d->kinds, doc, device);
  cs_val_t trace = cs_view_trace(doc, device);
  size_t n = cs_val_is_array(trace) ? cs_doc_len(doc, trace) : 0;
  if (rc == 0) cs_pf_initial(d, trace, n);
  if (rc == 0 && n > 0) rc = cs_peak_walk_live(doc, device, cs_pf_each, d);
  if (rc == 0) {
    int64_t end = n > 0 ? d->t1 : snapshot_us;
    if (d->timed && snapshot_us > end) end = snapshot_us;
    if (n == 0) d->tracks[CS_PF_ALLOCATED].value = 0;
    for (int t = 0; t < d->ntracks; t++) cs_pf_finish_track(d, t, end);
  }
  cs_kinds_free(&d->kinds);
  free(d);
  return rc != 0 ? ENOMEM : 0;
}

/* ---- phases ---------------------------------------------------------------------------------- */

/* A span's place in the output: by lane, then in start order (its index). */
typedef struct cs_pf_order_s {
  size_t lane, index;
} cs_pf_order_t;

static int cs_pf_order_cmp(const void *x, const void *y) {
  const cs_pf_order_t *a = x, *b = y;
  if (a->lane != b->lane) return a->lane < b->lane ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* The phases as X slices, a track per thread (lane L on thread L + 1: "phases", or "phases:
 * thread T (NAME)"), each thread's nested: each cut at the end of the one around it. */
static int cs_pf_phases(cs_perfetto_t *pf, const cs_doc_t *doc, int pid, int device, int64_t last_us) {
  cs_phase_span_t *spans = malloc(CS_PERFETTO_MAX_PHASES * sizeof *spans);
  int64_t *ends = malloc(CS_PERFETTO_MAX_PHASES * sizeof *ends);
  cs_pf_order_t *order = malloc(CS_PERFETTO_MAX_PHASES * sizeof *order);
  size_t n = 0, left_out = 0, depth = 0;
  cs_phase_lanes_t lanes = {NULL, 0, NULL};
  int rc = spans && ends && order
               ? cs_phases_spans(doc, device, spans, CS_PERFETTO_MAX_PHASES, &n, &left_out, &lanes)
               : -1;
  if (rc == 0) {
    for (size_t i = 0; i < n; i++) order[i] = (cs_pf_order_t){.lane = spans[i].lane, .index = i};
    qsort(order, n, sizeof *order, cs_pf_order_cmp);
  }
  size_t lane = SIZE_MAX;
  for (size_t k = 0; rc == 0 && k < n; k++) {
    const cs_phase_span_t *span = &spans[order[k].index];
    int tid = span->lane < (size_t)INT32_MAX - 1 ? (int)span->lane + 1 : INT32_MAX;
    if (span->lane != lane) { /* a new thread's track */
      lane = span->lane;
      depth = 0;
      char label[512] = "", name[600];
      if (lane < lanes.count) cs_phase_lane_label(&lanes.items[lane], label, sizeof label);
      if (label[0]) snprintf(name, sizeof name, "phases: %s", label);
      else snprintf(name, sizeof name, "phases");
      cs_pf_metadata(pf->e, "thread_name", pid, tid, name);
    }
    int64_t start = span->start_us, end = span->end_us >= 0 ? span->end_us : last_us;
    if (end < start) end = start;
    while (depth > 0 && ends[depth - 1] <= start) depth--;
    if (depth > 0 && end > ends[depth - 1]) end = ends[depth - 1];
    ends[depth++] = end;
    cs_pf_event_head(pf->e, "X", span->name, pid, tid, start);
    cs_emit_key(pf->e, "dur");
    /* end >= start here, but a file's times can be any int64: their difference may not fit one */
    uint64_t dur = (uint64_t)end - (uint64_t)start;
    cs_emit_int(pf->e, dur > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)dur);
    cs_emit_dict_end(pf->e);
  }
  cs_phase_lanes_free(&lanes);
  free(spans);
  free(ends);
  free(order);
  return rc != 0 ? ENOMEM : 0;
}

/* ---- files ----------------------------------------------------------------------------------- */

cs_perfetto_t *cs_perfetto_begin(cs_sink_t sink) {
  cs_perfetto_t *pf = calloc(1, sizeof *pf);
  if (pf == NULL) return NULL;
  pf->e = cs_emitter_create(CS_EMIT_JSON, sink, 2);
  if (pf->e == NULL) {
    free(pf);
    return NULL;
  }
  cs_emit_dict_begin(pf->e);
  cs_emit_key(pf->e, "traceEvents");
  cs_emit_list_begin(pf->e);
  return pf;
}

int cs_perfetto_add(cs_perfetto_t *pf, const cs_doc_t *doc, const char *path, int index) {
  int pid = index + 1;
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  const char *host = cs_view_str(doc, cudasnap, "host");
  int64_t program_pid = 0, snapshot_us = 0;
  char name[1024];
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  /* the rank first, when the snapshot knows it (cudasnap.job): the processes of a job by rank */
  int64_t rank = -1;
  char rank_text[32] = "";
  if (cs_view_int(doc, cs_doc_get(doc, cudasnap, "job"), "rank", &rank) && rank >= 0)
    snprintf(rank_text, sizeof rank_text, "rank %lld: ", (long long)rank);
  if (cs_view_int(doc, cudasnap, "pid", &program_pid))
    snprintf(name, sizeof name, "%s%s pid %lld (%s)", rank_text, host ? host : "cudasnap", (long long)program_pid, base);
  else snprintf(name, sizeof name, "%s%s", rank_text, base);
  if (cs_oom_find(doc, &pf->oom) != 0) pf->error = ENOMEM;
  cs_pf_metadata(pf->e, "process_name", pid, 0, name);
  if (!cs_view_int(doc, cudasnap, "time_us", &snapshot_us)) snapshot_us = 0;
  int devices = cs_view_device_count(doc);
  int64_t last_us = 0;
  int phases_device = -1;
  for (int dev = 0; dev < devices && pf->error == 0; dev++) {
    if (!cs_device_used(doc, dev)) continue;
    cs_val_t trace = cs_view_trace(doc, dev);
    size_t n = cs_val_is_array(trace) ? cs_doc_len(doc, trace) : 0;
    int64_t t;
    if (n > 0 && cs_view_int_key(doc, cs_doc_at(doc, trace, n - 1), CS_KEY_TIME_US, &t) && t > last_us) last_us = t;
    if (n > 0 && phases_device < 0) phases_device = dev;
    pf->error = cs_pf_device(pf, doc, pid, dev, snapshot_us);
  }
  /* phases are the process's; any device's trace places them */
  if (pf->error == 0 && phases_device >= 0) pf->error = cs_pf_phases(pf, doc, pid, phases_device, last_us);
  if (pf->error == 0 && (snapshot_us > 0 || last_us > 0)) {
    const char *trigger = cs_view_str_key(doc, cudasnap, CS_KEY_TRIGGER);
    cs_pf_event_head(pf->e, "i", "snapshot", pid, 0, snapshot_us > 0 ? snapshot_us : last_us);
    cs_emit_key(pf->e, "s");
    cs_emit_str(pf->e, "p");
    cs_emit_key(pf->e, "args");
    cs_emit_dict_begin(pf->e);
    cs_emit_key(pf->e, "file");
    cs_emit_str(pf->e, base);
    if (trigger) {
      cs_emit_key(pf->e, "trigger");
      cs_emit_str(pf->e, trigger);
    }
    cs_emit_dict_end(pf->e);
    cs_emit_dict_end(pf->e);
  }
  return pf->error;
}

int cs_perfetto_finish(cs_perfetto_t *pf) {
  cs_emit_list_end(pf->e);
  cs_emit_key(pf->e, "displayTimeUnit");
  cs_emit_str(pf->e, "ms");
  cs_emit_dict_end(pf->e);
  int err = cs_emit_finish(pf->e);
  if (pf->error != 0) err = pf->error;
  free(pf);
  return err;
}

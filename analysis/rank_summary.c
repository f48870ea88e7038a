/* SPDX-License-Identifier: Apache-2.0 */
#include "analysis/rank_summary.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/kinds.h"
#include "analysis/lower_bound.h"
#include "analysis/oom.h"
#include "analysis/peak.h"
#include "analysis/phase_lanes.h"
#include "analysis/sites.h"
#include "analysis/snapstats.h"
#include "analysis/snapview.h"
#include "common/cs_saturate.h"

void cs_rank_summary_init(cs_rank_summary_t *s) {
  memset(s, 0, sizeof *s);
  s->rank = s->local_rank = s->world_size = s->pid = s->time_us = s->dump_number = -1;
}

void cs_rank_summary_free(cs_rank_summary_t *s) {
  free(s->job_id);
  free(s->host);
  free(s->trigger);
  free(s->phase);
  for (size_t i = 0; i < s->nsites; i++) free(s->sites[i].site);
  cs_rank_summary_init(s);
}

/* A copy of a string member, NULL when absent; *failed on a failed copy. */
static char *cs_rank_strdup(const char *s, bool *failed) {
  if (s == NULL) return NULL;
  char *copy = strdup(s);
  if (copy == NULL) *failed = true;
  return copy;
}

static int64_t cs_rank_int(const cs_doc_t *doc, cs_val_t obj, const char *key) {
  int64_t v;
  return cs_view_int(doc, obj, key, &v) && v >= 0 ? v : -1;
}

/* Who wrote it: the cudasnap key and its job (absent from PyTorch's files). */
static void cs_rank_who(const cs_doc_t *doc, cs_rank_summary_t *s, bool *failed) {
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  if (!cs_val_is_dict(cudasnap)) return;
  cs_val_t job = cs_doc_get(doc, cudasnap, "job");
  s->rank = cs_rank_int(doc, job, "rank");
  s->local_rank = cs_rank_int(doc, job, "local_rank");
  s->world_size = cs_rank_int(doc, job, "world_size");
  s->job_id = cs_rank_strdup(cs_view_str(doc, job, "job_id"), failed);
  const char *host = cs_view_str(doc, job, "host");
  s->host = cs_rank_strdup(host ? host : cs_view_str(doc, cudasnap, "host"), failed);
  s->pid = cs_rank_int(doc, cudasnap, "pid");
  s->trigger = cs_rank_strdup(cs_view_str_key(doc, cudasnap, CS_KEY_TRIGGER), failed);
  s->time_us = cs_rank_int(doc, cudasnap, "time_us");
  s->dump_number = cs_rank_int(doc, cudasnap, "dump_number");
  if (s->trigger && strcmp(s->trigger, "oom") == 0) s->oom = true;
}

/* The reserved bytes' high point over the trace: the segments at the snapshot, unwound through
 * the trace's segment events to its start, then replayed forward. */
static uint64_t cs_rank_trace_reserved(const cs_doc_t *doc, int device, bool *oom, bool *failed) {
  /* reserved: the cache's segments, never memory passed through (analysis/kinds.h) */
  cs_kinds_t kinds;
  if (cs_kinds_init(&kinds, doc, device) != 0) {
    *failed = true;
    return 0;
  }
  int64_t end = 0;
  for (size_t i = 0; i < kinds.count; i++)
    if (kinds.ranges[i].kind == cs_kind_cache) end = cs_add_sat_i64(end, kinds.ranges[i].end - kinds.ranges[i].addr);
  cs_val_t trace = cs_view_trace(doc, device);
  size_t n = cs_doc_len(doc, trace);
  int64_t net = 0, low = 0, now = 0;
  for (size_t i = 0; i < n; i++) {
    cs_val_t entry = cs_doc_at(doc, trace, i);
    const char *action = cs_view_str_key(doc, entry, CS_KEY_ACTION);
    int64_t size = 0, addr = 0;
    if (action == NULL || !cs_view_int_key(doc, entry, CS_KEY_SIZE, &size)) continue;
    int sign = cs_view_segment_sign(action);
    if (sign && !cs_view_int_key(doc, entry, CS_KEY_ADDR, &addr)) sign = 0;
    if (sign && !cs_kinds_reserved(cs_kinds_of_entry(&kinds, entry, addr))) sign = 0;
    if (sign > 0) now = cs_add_sat_i64(now, size);
    else if (sign < 0) now = cs_sub_sat_i64(now, size);
    else if (strcmp(action, "oom") == 0) *oom = true;
    if (now > net) net = now;
    if (now < low) low = now;
  }
  /* start = end - now; the peak is start + the highest running sum */
  int64_t start = cs_sub_sat_i64(end, now);
  if (cs_add_sat_i64(start, low) < 0) start = cs_sub_sat_i64(0, low); /* a trace cut short: never below nothing */
  int64_t peak = cs_add_sat_i64(start, net);
  cs_kinds_free(&kinds);
  return peak > end ? (uint64_t)peak : (uint64_t)end;
}

/* The phase of the peak's entry, as `summary` and the snapshot's head say it (cs_phases_at_peak). */
static char *cs_rank_phase(const cs_doc_t *doc, int device, const cs_peak_t *peak, bool *failed) {
  char *chain = NULL;
  if (cs_phases_at_peak(doc, device, peak, &chain) != 0) *failed = true;
  return chain;
}

/* The sites live at the device's peak, the CS_RANK_SITES with most bytes. */
static void cs_rank_sites(const cs_sites_t *at_peak, cs_rank_summary_t *s, bool *failed) {
  for (size_t i = 0; i < at_peak->count && s->nsites < CS_RANK_SITES && !*failed; i++) {
    char text[1024];
    cs_site_format(&at_peak->totals[i].site, text, sizeof text);
    s->sites[s->nsites].site = cs_rank_strdup(text, failed);
    s->sites[s->nsites].bytes = at_peak->totals[i].bytes;
    if (!*failed) s->nsites++;
  }
}

int cs_rank_summary_of(const cs_doc_t *doc, cs_rank_summary_t *s) {
  cs_rank_summary_init(s);
  bool failed = false;
  cs_rank_who(doc, s, &failed);
  cs_oom_t oom;
  if (cs_oom_find(doc, &oom) != 0) failed = true;
  else if (oom.found) s->oom_bytes = oom.requested;
  if (!cs_lower_bound(doc, &s->dropped_events, &s->kept_entries)) s->dropped_events = s->kept_entries = 0;
  int devices = cs_view_device_count(doc);
  cs_sites_t best;
  cs_sites_init(&best);
  cs_peak_t best_peak = {0};
  uint64_t best_bytes = 0;
  for (int d = 0; d < devices && !failed; d++) {
    cs_stats_t stats;
    bool has_stats = cs_snapstats_from_cudasnap(doc, d, &stats) >= 0;
    if (has_stats && stats.num_ooms > 0) s->oom = true;
    bool trace_oom = false;
    uint64_t trace_reserved = cs_rank_trace_reserved(doc, d, &trace_oom, &failed);
    if (trace_oom) s->oom = true;
    cs_sites_t at_peak;
    cs_sites_init(&at_peak);
    cs_peak_t peak;
    if (cs_peak_find(doc, d, &peak, &at_peak) != 0) {
      failed = true;
    } else if (d == 0 || peak.bytes > best_bytes) {
      cs_sites_free(&best);
      best = at_peak;
      best_peak = peak;
      best_bytes = peak.bytes;
      s->device = d;
      s->peak_allocated = peak.bytes - peak.passthrough;
      s->peak_passthrough = peak.passthrough;
      s->peak_reserved = has_stats ? (uint64_t)stats.reserved_bytes[CS_STAT_ALL].peak : trace_reserved;
      continue;
    }
    cs_sites_free(&at_peak);
  }
  if (!failed && devices > 0) {
    cs_sites_sort(&best);
    cs_rank_sites(&best, s, &failed);
    if (!failed) s->phase = cs_rank_phase(doc, s->device, &best_peak, &failed);
  }
  cs_sites_free(&best);
  if (failed) {
    cs_rank_summary_free(s);
    return -1;
  }
  return 0;
}

/* ---- from the head ----------------------------------------------------------------------------- */

/* The head's version this reads: a later one may mean other things by the same keys. */
enum { CS_RANK_HEAD_VERSION = 2 };

int cs_rank_summary_of_head(const cs_doc_t *doc, cs_rank_summary_t *s) {
  cs_rank_summary_init(s);
  cs_val_t head = cs_doc_get(doc, cs_doc_root(doc), "cudasnap_summary");
  int64_t version;
  if (!cs_val_is_dict(head) || !cs_view_int(doc, head, "version", &version) || version != CS_RANK_HEAD_VERSION ||
      !cs_val_is_true(cs_doc_get(doc, head, "complete")))
    return 1;
  bool failed = false;
  cs_val_t job = cs_doc_get(doc, head, "job");
  s->rank = cs_rank_int(doc, job, "rank");
  s->local_rank = cs_rank_int(doc, job, "local_rank");
  s->world_size = cs_rank_int(doc, job, "world_size");
  s->job_id = cs_rank_strdup(cs_view_str(doc, job, "job_id"), &failed);
  const char *host = cs_view_str(doc, job, "host");
  s->host = cs_rank_strdup(host ? host : cs_view_str(doc, head, "host"), &failed);
  s->pid = cs_rank_int(doc, head, "pid");
  s->trigger = cs_rank_strdup(cs_view_str(doc, head, "trigger"), &failed);
  s->time_us = cs_rank_int(doc, head, "time_us");
  s->dump_number = cs_rank_int(doc, head, "dump_number");
  s->oom = cs_val_is_true(cs_doc_get(doc, head, "oom"));
  int64_t oom_bytes = 0;
  if (cs_view_int(doc, head, "oom_bytes", &oom_bytes) && oom_bytes > 0) s->oom_bytes = (uint64_t)oom_bytes;
  int64_t device = 0, peak = 0, passthrough = 0, reserved = 0;
  cs_view_int(doc, head, "device", &device);
  cs_view_int(doc, head, "peak_allocated", &peak);
  cs_view_int(doc, head, "peak_passthrough", &passthrough);
  cs_view_int(doc, head, "peak_reserved", &reserved);
  s->device = (int)device;
  s->peak_allocated = peak > 0 ? (uint64_t)peak : 0;
  s->peak_passthrough = passthrough > 0 ? (uint64_t)passthrough : 0;
  s->peak_reserved = reserved > 0 ? (uint64_t)reserved : 0;
  s->phase = cs_rank_strdup(cs_view_str(doc, head, "phase"), &failed);
  cs_val_t sites = cs_doc_get(doc, head, "sites");
  size_t n = cs_val_is_array(sites) ? cs_doc_len(doc, sites) : 0;
  for (size_t i = 0; i < n && s->nsites < CS_RANK_SITES && !failed; i++) {
    cs_val_t site = cs_doc_at(doc, sites, i);
    const char *text = cs_view_str(doc, site, "site");
    int64_t bytes;
    if (text == NULL || !cs_view_int(doc, site, "bytes", &bytes) || bytes < 0) continue;
    s->sites[s->nsites].site = cs_rank_strdup(text, &failed);
    s->sites[s->nsites].bytes = (uint64_t)bytes;
    if (!failed) s->nsites++;
  }
  if (failed) {
    cs_rank_summary_free(s);
    return -1;
  }
  return 0;
}

bool cs_rank_summary_same_process(const cs_rank_summary_t *a, const cs_rank_summary_t *b) {
  return a->pid >= 0 && a->pid == b->pid &&
         (a->host == b->host || (a->host != NULL && b->host != NULL && strcmp(a->host, b->host) == 0));
}

bool cs_rank_summary_later(const cs_rank_summary_t *a, const cs_rank_summary_t *b) {
  if (a->time_us != b->time_us) return a->time_us > b->time_us;
  return a->dump_number > b->dump_number;
}

void cs_rank_summary_share_oom(cs_rank_summary_t *a, cs_rank_summary_t *b) {
  a->oom = b->oom = a->oom || b->oom;
  uint64_t a_bytes = a->oom_bytes;
  if (a->oom_bytes == 0) a->oom_bytes = b->oom_bytes;
  if (b->oom_bytes == 0) b->oom_bytes = a_bytes;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot's head (contract in snapshot/snap_summary.h). The replay follows analysis/peak.c rule
 * for rule, so that `cudasnap ranks` says the same from the head as from the whole file. */
#include "snapshot/snap_summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/addr_map.h"
#include "snapshot/snap_entry.h"
#include "snapshot/stack_site.h"

/* The highest point of one device's history. */
typedef struct cs_sum_peak_s {
  uint64_t bytes;
  uint64_t passthrough; /* of which memory passed through */
  size_t after;     /* the device's entries applied when it was first reached; 0: at the start */
  uint64_t time_us; /* of the entry that reached it */
  uint32_t thread;  /* that made it (0: not known) */
} cs_sum_peak_t;

/* The entries the replay reads; segment events, OOMs and snapshot marks change no block. */
static bool cs_sum_block_event(cs_action_t a) {
  return a == CS_ACTION_ALLOC || a == CS_ACTION_FREE_REQUESTED || a == CS_ACTION_FREE_COMPLETED;
}

/* The blocks live before the device's history began: those freed before any alloc at their
 * address (with the free's stack, the allocating one), and the live blocks at the snapshot whose
 * address the history never touches. 0, or -1 without host memory. */
static int cs_sum_start(const cs_snap_state_t *s, int device, cs_addr_map_t *live) {
  cs_addr_map_t seen;
  cs_addr_map_init(&seen);
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < s->entry_count; i++) {
    const cs_ring_entry_t *e = &s->entries[i];
    cs_action_t a = cs_ring_entry_action(e);
    if (cs_ring_entry_device(e) != device || !cs_sum_block_event(a) || cs_addr_map_get(&seen, e->addr)) continue;
    rc = cs_addr_map_put(&seen, e->addr, 0, 0);
    if (rc == 0 && a != CS_ACTION_ALLOC) rc = cs_addr_map_put(live, e->addr, e->size, e->stack_id);
  }
  for (size_t g = 0; rc == 0 && g < s->segment_count; g++) {
    const cs_snap_segment_t *seg = &s->segments[g];
    if (seg->device != device) continue;
    uint64_t addr = seg->addr;
    for (size_t i = seg->first_block; rc == 0 && i < seg->first_block + seg->block_count; i++) {
      const cs_snap_block_t *b = &s->blocks[i];
      /* memory passed through keeps its kind in the stack id, as its history's entries do */
      uint32_t stack = seg->kind >= 0 ? cs_recfile_kind_stack(seg->kind, b->stack_id) : b->stack_id;
      if (b->state != CS_BLOCK_FREE && !cs_addr_map_get(&seen, addr))
        rc = cs_addr_map_put(live, addr, b->requested, stack);
      addr += b->size;
    }
  }
  cs_addr_map_free(&seen);
  return rc;
}

/* Apply the device's first `limit` entries to live; *peak gets the highest point on the way. */
static int cs_sum_replay(const cs_snap_state_t *s, int device, cs_addr_map_t *live, size_t limit, cs_sum_peak_t *peak) {
  *peak = (cs_sum_peak_t){.bytes = live->bytes, .passthrough = live->passthrough_bytes, .after = 0, .time_us = 0};
  size_t k = 0;
  for (size_t i = 0; i < s->entry_count && k < limit; i++) {
    const cs_ring_entry_t *e = &s->entries[i];
    if (cs_ring_entry_device(e) != device) continue;
    k++;
    cs_action_t a = cs_ring_entry_action(e);
    if (a == CS_ACTION_ALLOC && cs_addr_map_put(live, e->addr, e->size, e->stack_id) != 0) return -1;
    if (a == CS_ACTION_FREE_COMPLETED) cs_addr_map_remove(live, e->addr);
    if (live->bytes > peak->bytes)
      *peak = (cs_sum_peak_t){.bytes = live->bytes, .passthrough = live->passthrough_bytes, .after = k,
                              .time_us = cs_ring_entry_epoch_us(e), .thread = cs_snap_entry_thread(e)};
  }
  return 0;
}

/* ---- the sites at the peak ------------------------------------------------------------------- */

typedef struct cs_sum_site_s {
  uint32_t stack_id;
  const char *name;     /* NULL: no stack */
  const char *filename;
  int line;
  uint64_t bytes, blocks;
} cs_sum_site_t;

typedef struct cs_sum_sites_s {
  cs_sum_site_t *items;
  size_t count;
} cs_sum_sites_t;

static void cs_sum_collect(void *ctx, const cs_addr_block_t *b) {
  cs_sum_sites_t *t = ctx;
  uint32_t stack = b->stack_id & CS_RECFILE_STACK_MASK; /* without the kind: the frames are the stack's */
  t->items[t->count++] = (cs_sum_site_t){.stack_id = stack, .bytes = b->bytes, .blocks = 1};
}

static int cs_sum_by_stack(const void *x, const void *y) {
  const cs_sum_site_t *a = x, *b = y;
  return (a->stack_id > b->stack_id) - (a->stack_id < b->stack_id);
}

static int cs_sum_strcmp(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

/* analysis/sites.c's cs_site_compare: by function, file and line, no stack last. */
static int cs_sum_by_site(const void *x, const void *y) {
  const cs_sum_site_t *a = x, *b = y;
  if ((a->name == NULL) != (b->name == NULL)) return a->name == NULL ? 1 : -1;
  int c = cs_sum_strcmp(a->name, b->name);
  if (c == 0) c = cs_sum_strcmp(a->filename, b->filename);
  if (c == 0) c = (a->line > b->line) - (a->line < b->line);
  return c;
}

/* analysis/sites.c's order: most bytes, then most blocks, then the site. */
static int cs_sum_by_bytes(const void *x, const void *y) {
  const cs_sum_site_t *a = x, *b = y;
  if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
  if (a->blocks != b->blocks) return a->blocks > b->blocks ? -1 : 1;
  return cs_sum_by_site(a, b);
}

/* Fold runs of items equal under cmp (sorted by it) into their first. */
static void cs_sum_fold(cs_sum_sites_t *t, int (*cmp)(const void *, const void *)) {
  qsort(t->items, t->count, sizeof *t->items, cmp);
  size_t kept = 0;
  for (size_t i = 0; i < t->count; i++) {
    if (kept > 0 && cmp(&t->items[kept - 1], &t->items[i]) == 0) {
      t->items[kept - 1].bytes += t->items[i].bytes;
      t->items[kept - 1].blocks += t->items[i].blocks;
    } else {
      t->items[kept++] = t->items[i];
    }
  }
  t->count = kept;
}

/* Name the site of each stack as the tool would from the frames written for it. */
static void cs_sum_name(cs_sum_site_t *site, const cs_intern_t *intern, cs_symbolizer_t *sym) {
  size_t n = 0;
  const uintptr_t *pcs = site->stack_id && intern ? cs_intern_get(intern, site->stack_id, &n) : NULL;
  if (pcs == NULL || n == 0 || sym == NULL) return; /* an empty frame list: no stack */
  cs_frame_t f = cs_stack_site(sym, pcs, n);
  site->name = f.name;
  site->filename = f.filename;
  site->line = f.line;
}

/* The sites live after the device's first `after` entries, most bytes first. live: the blocks
 * live at the history's start (replayed here). */
static int cs_sum_sites(const cs_snap_state_t *s, int device, size_t after, cs_addr_map_t *live,
                        const cs_intern_t *intern, cs_symbolizer_t *sym, cs_sum_sites_t *t) {
  cs_sum_peak_t unused;
  int rc = cs_sum_replay(s, device, live, after, &unused);
  size_t n = live->count + (live->has_zero ? 1 : 0);
  t->items = rc == 0 ? malloc((n ? n : 1) * sizeof *t->items) : NULL;
  if (t->items == NULL) rc = -1;
  if (rc == 0) {
    cs_addr_map_each(live, cs_sum_collect, t);
    cs_sum_fold(t, cs_sum_by_stack);
    for (size_t i = 0; i < t->count; i++) cs_sum_name(&t->items[i], intern, sym);
    cs_sum_fold(t, cs_sum_by_site);
    qsort(t->items, t->count, sizeof *t->items, cs_sum_by_bytes);
  }
  return rc;
}

/* ---- the phase at the peak ------------------------------------------------------------------- */

/* analysis/phase_lanes.c's cs_phase_lane_label: "thread T (NAME)" or "thread T". */
static void cs_sum_thread_label(uint32_t thread, const char *name, char *buf, size_t len) {
  if (name && name[0]) snprintf(buf, len, "thread %u (%s)", thread, name);
  else snprintf(buf, len, "thread %u", thread);
  for (char *c = buf; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
}

/* The phase of the peak's entry, made at time t by `thread`, into buf ("" for none), as
 * analysis/phase_lanes.c's cs_phases_at_peak says it: the phases open in the entry's own lane (the
 * annotations of its thread; for a thread not known, those without one, or the only thread's),
 * "OUTER > INNER", placed as analysis/phase_lanes.c places them: annotations up to t, STARTs at t
 * included, ENDs at t not yet; an END closes the latest open phase of its name. " on thread T
 * (NAME)" follows when the annotations are of more than one thread. 0, or -1 without host memory. */
static int cs_sum_phase(const cs_phase_list_t *phases, uint64_t t, uint32_t thread, char *buf, size_t len) {
  buf[0] = '\0';
  if (phases == NULL || phases->count == 0) return 0;
  /* the lanes, as far as they matter here: is there more than one, and which is the entry's */
  bool several = false, has_entry_thread = false, has_none = false;
  for (size_t i = 0; i < phases->count; i++) {
    uint32_t by = phases->items[i].thread;
    several |= by != phases->items[0].thread;
    has_entry_thread |= by == thread;
    has_none |= by == 0;
  }
  uint32_t own;
  if (thread != 0 && has_entry_thread) own = thread;
  else if (thread == 0 && has_none) own = 0;
  else if (thread == 0 && !several) own = phases->items[0].thread;
  else return 0; /* its thread opened no phase, or is not known among several */
  const char **open = malloc(phases->count * sizeof *open);
  if (open == NULL) return -1;
  size_t nopen = 0;
  for (size_t i = 0; i < phases->count; i++) {
    const cs_phase_t *p = &phases->items[i];
    if (p->thread != own) continue;
    if (p->time_us > t || (p->time_us == t && p->stage != CS_PHASE_START)) break;
    if (p->stage == CS_PHASE_START) {
      open[nopen++] = p->name;
      continue;
    }
    for (size_t k = nopen; k-- > 0;) {
      if (strcmp(open[k], p->name) != 0) continue;
      memmove(&open[k], &open[k + 1], (nopen - 1 - k) * sizeof *open);
      nopen--;
      break;
    }
  }
  size_t used = 0;
  for (size_t k = 0; k < nopen && used + 1 < len; k++) {
    int w = snprintf(buf + used, len - used, "%s%s", k ? " > " : "", open[k]);
    used = w < 0 ? len : used + (size_t)w;
  }
  free(open);
  if (nopen > 0 && several && own != 0 && used + 1 < len) {
    /* the name a reader takes is the last one the thread's annotations carry */
    const char *own_name = NULL;
    for (size_t i = phases->count; i-- > 0 && !own_name;)
      if (phases->items[i].thread == own) own_name = phases->items[i].thread_name;
    char label[512];
    cs_sum_thread_label(own, own_name, label, sizeof label);
    snprintf(buf + used, len - used, " on %s", label);
  }
  return 0;
}

/* ---- writing --------------------------------------------------------------------------------- */

static void cs_sum_write_who(cs_emitter_t *e, const cs_snapshot_meta_t *meta) {
  cs_emit_kv_int(e, "pid", meta->pid);
  cs_emit_kv_str(e, "host", meta->host ? meta->host : "");
  if (meta->job) {
    cs_emit_key(e, "job");
    cs_job_write(e, meta->job);
  }
  cs_emit_kv_str(e, "trigger", meta->trigger ? meta->trigger : "");
  cs_emit_kv_int(e, "dump_number", meta->dump_number);
  cs_emit_kv_int(e, "time_us", (int64_t)meta->time_us);
}

static bool cs_sum_oom(const cs_snap_state_t *s, const cs_snapshot_meta_t *meta) {
  if (meta->trigger && strcmp(meta->trigger, "oom") == 0) return true;
  for (int d = 0; d < s->device_count; d++)
    if (s->stats[d].num_ooms > 0) return true;
  for (size_t i = 0; i < s->entry_count; i++)
    if (cs_ring_entry_action(&s->entries[i]) == CS_ACTION_OOM) return true;
  return false;
}

/* The size the last OOM of the history asked for; 0 when the history holds none. */
static uint64_t cs_sum_oom_bytes(const cs_snap_state_t *s) {
  for (size_t i = s->entry_count; i-- > 0;)
    if (cs_ring_entry_action(&s->entries[i]) == CS_ACTION_OOM) return s->entries[i].size;
  return 0;
}

void cs_snap_write_summary(cs_emitter_t *e, const cs_snap_state_t *s, const cs_intern_t *intern,
                           cs_symbolizer_t *sym, const cs_snapshot_meta_t *meta) {
  /* the device that peaked highest (the first of equals), and its blocks live at the start, kept
   * for the second replay, which stops at the peak */
  int device = 0;
  cs_sum_peak_t best = {0};
  cs_addr_map_t best_start;
  cs_addr_map_init(&best_start);
  int rc = 0;
  for (int d = 0; d < s->device_count && rc == 0; d++) {
    cs_addr_map_t start, live;
    cs_addr_map_init(&start);
    cs_addr_map_init(&live);
    cs_sum_peak_t peak;
    rc = cs_sum_start(s, d, &start);
    if (rc == 0) rc = cs_addr_map_copy(&live, &start);
    if (rc == 0) rc = cs_sum_replay(s, d, &live, SIZE_MAX, &peak);
    if (rc == 0 && (d == 0 || peak.bytes > best.bytes)) {
      device = d;
      best = peak;
      cs_addr_map_free(&best_start);
      best_start = start;
      cs_addr_map_init(&start);
    }
    cs_addr_map_free(&start);
    cs_addr_map_free(&live);
  }
  cs_sum_sites_t sites = {NULL, 0};
  if (rc == 0 && s->device_count > 0) rc = cs_sum_sites(s, device, best.after, &best_start, intern, sym, &sites);
  cs_addr_map_free(&best_start);
  char phase[1024] = "";
  if (rc == 0 && best.after > 0) rc = cs_sum_phase(meta->phases, best.time_us, best.thread, phase, sizeof phase);

  cs_emit_dict_begin(e);
  cs_emit_kv_int(e, "version", CS_SNAP_SUMMARY_VERSION);
  cs_emit_key(e, "complete");
  cs_emit_bool(e, rc == 0);
  cs_sum_write_who(e, meta);
  if (rc == 0) {
    cs_emit_key(e, "oom");
    cs_emit_bool(e, cs_sum_oom(s, meta));
    uint64_t oom_bytes = cs_sum_oom_bytes(s);
    if (oom_bytes > 0) cs_emit_kv_int(e, "oom_bytes", (int64_t)oom_bytes);
    cs_emit_kv_int(e, "device", device);
    /* allocated: the cache's blocks; memory passed through, its own figure (docs/ranks.md) */
    cs_emit_kv_int(e, "peak_allocated", (int64_t)(best.bytes - best.passthrough));
    cs_emit_kv_int(e, "peak_passthrough", (int64_t)best.passthrough);
    cs_emit_kv_int(e, "peak_reserved", s->device_count > 0 ? s->stats[device].reserved_bytes[CS_STAT_ALL].peak : 0);
    if (phase[0]) cs_emit_kv_str(e, "phase", phase);
    cs_emit_key(e, "sites");
    cs_emit_list_begin(e);
    for (size_t i = 0; i < sites.count && i < CS_SNAP_SUMMARY_SITES; i++) {
      const cs_sum_site_t *site = &sites.items[i];
      char text[1024];
      if (site->name == NULL) snprintf(text, sizeof text, "(no stack)");
      else snprintf(text, sizeof text, "%s %s:%d", site->name, site->filename, site->line);
      cs_emit_dict_begin(e);
      cs_emit_kv_str(e, "site", text);
      cs_emit_kv_int(e, "bytes", (int64_t)site->bytes);
      cs_emit_dict_end(e);
    }
    cs_emit_list_end(e);
  }
  cs_emit_dict_end(e);
  free(sites.items);
}

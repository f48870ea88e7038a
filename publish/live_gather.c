/* SPDX-License-Identifier: Apache-2.0 */
/* The live record's figures (contract in publish/live_gather.h). */
#include "publish/live_gather.h"

#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator/allocator.h"
#include "common/cs_deadline.h"
#include "common/cs_utf8.h"
#include "device/driver_watch.h"
#include "device/passthrough_mem.h"
#include "device/recorder.h"
#include "device/registry.h"
#include "memviz/allocator_frames.h"
#include "phases/phases.h"
#include "snapshot/stack_site.h"
#include "snapshot/symbolize.h"

/* A site's totals on one device. */
typedef struct cs_live_total_s {
  uint32_t site; /* index into names */
  uint64_t bytes, blocks;
} cs_live_total_t;

struct cs_live_gather_s {
  /* by stack id, ids_used of them: the device's allocators summed, and the one being copied */
  cs_stack_live_t *device_counts, *one_counts;
  size_t id_cap, ids_used;
  /* stack id -> site index + 1 (0: not named yet), in the stack table of serial site_serial;
   * grows with the ids */
  uint32_t *site_of;
  size_t site_of_len;
  uint32_t site_serial;
  size_t allocator_frames; /* the process's allocator frames the names in site_of were made with */
  char **names; /* the distinct site names */
  size_t name_count, name_cap;
  cs_live_total_t *totals; /* by site index, then the device's sites in order */
  size_t total_cap;
  cs_symbolizer_t *sym;
  unsigned long long sym_adds, sym_subs; /* the module map the symbolizer read */
};

cs_live_gather_t *cs_live_gather_create(void) { return calloc(1, sizeof(cs_live_gather_t)); }

void cs_live_gather_destroy(cs_live_gather_t *g) {
  if (!g) return;
  for (size_t i = 0; i < g->name_count; i++) free(g->names[i]);
  free(g->names);
  free(g->device_counts);
  free(g->one_counts);
  free(g->site_of);
  free(g->totals);
  if (g->sym) cs_symbolizer_destroy(g->sym);
  free(g);
}

/* ---- live blocks by stack: the allocators' counts, a page per lock hold ---- */

/* Room for `ids` counts in both arrays; false without host memory. */
static bool cs_live_ids_room(cs_live_gather_t *g, size_t ids) {
  if (ids <= g->id_cap) return true;
  size_t cap = g->id_cap ? g->id_cap * 2 : CS_STACK_LIVE_PAGE;
  while (cap < ids) cap *= 2;
  cs_stack_live_t *device = realloc(g->device_counts, cap * sizeof *device);
  if (!device) return false;
  g->device_counts = device;
  cs_stack_live_t *one = realloc(g->one_counts, cap * sizeof *one);
  if (!one) return false;
  g->one_counts = one;
  g->id_cap = cap;
  return true;
}

/* One allocator's statistics and live blocks by stack into *stats and one_counts (the first *ids
 * of them). The statistics and the first page of counts come in one hold of the lock, each further
 * page in a hold of its own: a hold copies the statistics and CS_STACK_LIVE_PAGE counts at most,
 * however many blocks the allocator holds. Each lock within CS_LIVE_LOCK_WAIT_MS, or not at all
 * (its holder may be stuck in the driver): false then, or without host memory. */
static bool cs_live_copy_allocator(cs_live_gather_t *g, cs_allocator_t *a, cs_stats_t *stats, size_t *ids) {
  size_t pages = 1;
  size_t p = 0;
  for (; p < pages; p++) {
    if (!cs_live_ids_room(g, (p + 1) * CS_STACK_LIVE_PAGE)) return false;
    if (!cs_allocator_lock_by(a, cs_deadline_in_ms(CS_LIVE_LOCK_WAIT_MS))) return false;
    if (p == 0) cs_allocator_get_stats_locked(a, stats);
    /* pages made since the first hold (new stacks) are copied too, as they come */
    pages = cs_allocator_stack_live_locked(a, p, g->one_counts + p * CS_STACK_LIVE_PAGE);
    cs_allocator_unlock(a);
  }
  *ids = p * CS_STACK_LIVE_PAGE;
  return true;
}

typedef struct cs_live_device_pass_s {
  cs_live_gather_t *g;
  cs_stats_t stats;
  int allocators, had;
} cs_live_device_pass_t;

static void cs_live_visit_allocator(void *ctx, cs_allocator_t *a) {
  cs_live_device_pass_t *p = ctx;
  cs_live_gather_t *g = p->g;
  p->allocators++;
  cs_stats_t stats;
  size_t ids;
  if (!cs_live_copy_allocator(g, a, &stats, &ids)) return;
  if (ids > g->ids_used) {
    memset(g->device_counts + g->ids_used, 0, (ids - g->ids_used) * sizeof *g->device_counts);
    g->ids_used = ids;
  }
  for (size_t i = 0; i < ids; i++) {
    g->device_counts[i].bytes += g->one_counts[i].bytes;
    g->device_counts[i].blocks += g->one_counts[i].blocks;
  }
  if (p->had++ == 0) p->stats = stats;
  else cs_stats_merge(&p->stats, &stats);
}

/* ---- naming: stack -> site, once per stack ---- */

static int cs_live_count_modules(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  unsigned long long *adds_subs = ctx;
  adds_subs[0] = info->dlpi_adds;
  adds_subs[1] = info->dlpi_subs;
  return 1; /* the counters are the same in every entry: the first is enough */
}

/* A symbolizer for the module map as it is now: made again when a module came or went. */
static cs_symbolizer_t *cs_live_symbolizer(cs_live_gather_t *g) {
  unsigned long long now[2] = {0, 0};
  dl_iterate_phdr(cs_live_count_modules, now);
  if (g->sym && (now[0] != g->sym_adds || now[1] != g->sym_subs)) {
    cs_symbolizer_destroy(g->sym);
    g->sym = NULL;
  }
  if (!g->sym) {
    g->sym = cs_symbolizer_create();
    g->sym_adds = now[0];
    g->sym_subs = now[1];
  }
  return g->sym;
}

/* The index of name among the names, added when new; UINT32_MAX without host memory. */
static uint32_t cs_live_name_index(cs_live_gather_t *g, const char *name) {
  for (size_t i = 0; i < g->name_count; i++) /* a few hundred sites at most; named once each */
    if (strcmp(g->names[i], name) == 0) return (uint32_t)i;
  if (g->name_count == g->name_cap) {
    size_t cap = g->name_cap ? g->name_cap * 2 : 64;
    char **bigger = realloc(g->names, cap * sizeof *bigger);
    if (!bigger) return UINT32_MAX;
    g->names = bigger;
    g->name_cap = cap;
  }
  char *copy = strdup(name);
  if (!copy) return UINT32_MAX;
  g->names[g->name_count] = copy;
  return (uint32_t)g->name_count++;
}

/* The names kept by stack id hold for the stack table they were read from: a fork child's table
 * is cleared and hands out ids from 1 again (device/recorder.c), for its own stacks. And for the
 * allocator frames they were named past: the program may name more (memviz/allocator_frames.h). */
static void cs_live_names_follow_table(cs_live_gather_t *g) {
  uint32_t serial = cs_intern_serial(cs_record_intern());
  size_t allocator_frames = cs_allocator_frames_count();
  if (serial == g->site_serial && allocator_frames == g->allocator_frames) return;
  if (g->site_of) memset(g->site_of, 0, g->site_of_len * sizeof *g->site_of);
  g->site_serial = serial;
  g->allocator_frames = allocator_frames;
}

/* The site of a stack id, named as cs_site_format names it ("(no stack)" without one). */
static uint32_t cs_live_site(cs_live_gather_t *g, uint32_t stack_id) {
  if (stack_id < g->site_of_len && g->site_of[stack_id]) return g->site_of[stack_id] - 1;
  char name[CS_LIVE_SITE_LEN];
  snprintf(name, sizeof name, "(no stack)");
  size_t n = 0;
  cs_intern_t *intern = cs_record_intern();
  const uintptr_t *pcs = stack_id && intern ? cs_intern_get(intern, stack_id, &n) : NULL;
  cs_symbolizer_t *sym = pcs && n ? cs_live_symbolizer(g) : NULL;
  bool named = false;
  if (sym) {
    cs_frame_t f = cs_stack_site(sym, pcs, n);
    if (f.name) {
      snprintf(name, sizeof name, "%s %s:%d", f.name, f.filename ? f.filename : "??", f.line);
      cs_utf8_trim(name); /* a long name is cut by bytes: never inside a character */
      named = true;
    }
  }
  uint32_t site = cs_live_name_index(g, name);
  if (site == UINT32_MAX) return UINT32_MAX;
  /* a stack the symbolizer could not read is named again next time (its module may come) */
  if (named || !pcs) {
    if (stack_id >= g->site_of_len) {
      size_t len = g->site_of_len ? g->site_of_len : 256;
      while (len <= stack_id) len *= 2;
      uint32_t *bigger = realloc(g->site_of, len * sizeof *bigger);
      if (!bigger) return site;
      memset(bigger + g->site_of_len, 0, (len - g->site_of_len) * sizeof *bigger);
      g->site_of = bigger;
      g->site_of_len = len;
    }
    g->site_of[stack_id] = site + 1;
  }
  return site;
}

static int cs_live_total_cmp(const void *x, const void *y) {
  const cs_live_total_t *a = x, *b = y;
  if (a->bytes != b->bytes) return a->bytes < b->bytes ? 1 : -1;
  if (a->blocks != b->blocks) return a->blocks < b->blocks ? 1 : -1;
  return (a->site > b->site) - (a->site < b->site);
}

/* Room for a total per site name; false without host memory. */
static bool cs_live_totals_room(cs_live_gather_t *g) {
  if (g->name_count <= g->total_cap) return true;
  cs_live_total_t *bigger = realloc(g->totals, g->name_cap * sizeof *bigger);
  if (!bigger) return false;
  memset(bigger + g->total_cap, 0, (g->name_cap - g->total_cap) * sizeof *bigger);
  g->totals = bigger;
  g->total_cap = g->name_cap;
  return true;
}

/* The device's top sites from the stacks counted: totals by site index, then the sites with
 * live blocks moved to the front and sorted. */
static void cs_live_top_sites(cs_live_gather_t *g, cs_live_device_t *d) {
  if (g->totals) memset(g->totals, 0, g->total_cap * sizeof *g->totals);
  for (size_t id = 0; id < g->ids_used; id++) {
    const cs_stack_live_t *c = &g->device_counts[id];
    if (!c->blocks) continue;
    uint32_t site = cs_live_site(g, (uint32_t)id);
    if (site == UINT32_MAX || !cs_live_totals_room(g)) continue;
    g->totals[site].bytes += c->bytes;
    g->totals[site].blocks += c->blocks;
  }
  size_t n = 0;
  for (size_t site = 0; site < g->total_cap; site++) {
    cs_live_total_t t = g->totals[site];
    if (t.blocks) g->totals[n++] = (cs_live_total_t){.site = (uint32_t)site, .bytes = t.bytes, .blocks = t.blocks};
  }
  if (n > 1) qsort(g->totals, n, sizeof *g->totals, cs_live_total_cmp); /* totals is NULL before a first site */
  d->site_count = (uint32_t)(n < CS_LIVE_TOP_SITES ? n : CS_LIVE_TOP_SITES);
  for (size_t i = 0; i < d->site_count; i++) {
    d->sites[i].bytes = g->totals[i].bytes;
    d->sites[i].blocks = g->totals[i].blocks;
    snprintf(d->sites[i].name, sizeof d->sites[i].name, "%s", g->names[g->totals[i].site]);
  }
}

/* ---- per device ---- */

/* Has the program used memory past the cache on the device (stream-ordered, pools, VMM...), or
 * been refused some? Then the device has a row although no cache allocator serves it: a program
 * that only calls cudaMallocAsync is seen, its OOMs counted. */
static bool cs_live_passed_through(int device) {
  cs_passthrough_stat_t stats[CS_PASSTHROUGH_KINDS];
  if (!cs_passthrough_stats(device, stats)) return false;
  for (int k = 0; k < CS_PASSTHROUGH_KINDS; k++)
    if (cs_passthrough_kind_in_row((cs_passthrough_kind_t)k, false) && (stats[k].allocated > 0 || stats[k].ooms > 0))
      return true;
  return false;
}

static const cs_live_device_t *cs_live_previous(const cs_live_device_t *previous, size_t n, int device) {
  for (size_t i = 0; i < n; i++)
    if (previous[i].device == device) return &previous[i];
  return NULL;
}

size_t cs_live_gather(cs_live_gather_t *g, cs_live_device_t *out, const cs_live_device_t *previous, size_t prev_count) {
  size_t n = 0;
  cs_live_names_follow_table(g);
  for (int device = 0; device < CS_MAX_DEVICES && n < CS_LIVE_MAX_DEVICES; device++) {
    g->ids_used = 0;
    cs_live_device_pass_t pass = {.g = g};
    if (cs_registry_for_each_allocator(device, cs_live_visit_allocator, &pass) == 0 && !cs_live_passed_through(device))
      continue;
    cs_live_device_t *d = &out[n++];
    const cs_live_device_t *before = cs_live_previous(previous, prev_count, device);
    if (pass.had < pass.allocators && before) {
      *d = *before; /* a lock not had: the last figures, said to be old */
      d->stale = 1;
      continue;
    }
    memset(d, 0, sizeof *d);
    d->device = device;
    d->stale = pass.had < pass.allocators;
    d->allocated_bytes = (uint64_t)pass.stats.allocated_bytes[CS_STAT_ALL].current;
    d->reserved_bytes = (uint64_t)pass.stats.reserved_bytes[CS_STAT_ALL].current;
    d->peak_allocated_bytes = (uint64_t)pass.stats.allocated_bytes[CS_STAT_ALL].peak;
    d->ooms = (uint64_t)(pass.stats.num_ooms + cs_registry_passthrough_ooms(device)); /* and past the cache */
    uint64_t used, time_us;
    if (cs_driver_watch_last_used(device, &used, &time_us)) {
      d->driver_used_bytes = used;
      d->driver_time_us = time_us;
      d->driver_known = 1;
    }
    /* phases are per thread: the one open on the thread that allocated last on the device */
    snprintf(d->phase, sizeof d->phase, "%s", cs_phases_name_text(cs_phases_open_on(cs_record_alloc_thread(device))));
    cs_utf8_trim(d->phase);
    cs_live_top_sites(g, d);
  }
  return n;
}

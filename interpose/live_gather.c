/* The live record's figures (contract in interpose/live_gather.h). */
#include "interpose/live_gather.h"

#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator/allocator.h"
#include "common/cs_deadline.h"
#include "interpose/driver_watch.h"
#include "interpose/record.h"
#include "interpose/runtime.h"
#include "record/phases.h"
#include "snapshot/stack_site.h"
#include "snapshot/symbolize.h"

/* Live bytes by stack id, for one device; open addressing, emptied per device. */
typedef struct cs_live_stack_s {
  uint32_t stack_id; /* + 1; 0: empty slot */
  uint64_t bytes, blocks;
} cs_live_stack_t;

/* A site's totals on one device. */
typedef struct cs_live_total_s {
  uint32_t site; /* index into names */
  uint64_t bytes, blocks;
} cs_live_total_t;

struct cs_live_gather_s {
  cs_live_stack_t *stacks;
  size_t stack_slots, stack_count;
  /* stack id -> site index + 1 (0: not named yet); grows with the ids */
  uint32_t *site_of;
  size_t site_of_len;
  char **names; /* the distinct site names */
  size_t name_count, name_cap;
  cs_live_total_t *totals;
  size_t total_cap;
  cs_symbolizer_t *sym;
  unsigned long long sym_adds, sym_subs; /* the module map the symbolizer read */
  bool hold_ok; /* the current allocator's figures were had */
};

cs_live_gather_t *cs_live_gather_create(void) { return calloc(1, sizeof(cs_live_gather_t)); }

void cs_live_gather_destroy(cs_live_gather_t *g) {
  if (!g) return;
  for (size_t i = 0; i < g->name_count; i++) free(g->names[i]);
  free(g->names);
  free(g->stacks);
  free(g->site_of);
  free(g->totals);
  if (g->sym) cs_symbolizer_destroy(g->sym);
  free(g);
}

/* ---- live blocks by stack, under the allocator's lock ---- */

static bool cs_live_stacks_grow(cs_live_gather_t *g) {
  size_t slots = g->stack_slots ? g->stack_slots * 2 : 1024;
  cs_live_stack_t *bigger = calloc(slots, sizeof *bigger);
  if (!bigger) return false;
  for (size_t i = 0; i < g->stack_slots; i++) {
    if (!g->stacks[i].stack_id) continue;
    size_t j = (g->stacks[i].stack_id * 2654435761u) & (slots - 1);
    while (bigger[j].stack_id) j = (j + 1) & (slots - 1);
    bigger[j] = g->stacks[i];
  }
  free(g->stacks);
  g->stacks = bigger;
  g->stack_slots = slots;
  return true;
}

static void cs_live_count_block(void *ctx, const cs_segment_info_t *segment, const cs_block_info_t *block) {
  (void)segment;
  cs_live_gather_t *g = ctx;
  if (block->state != CS_BLOCK_ALLOCATED) return;
  if (g->stack_count * 2 >= g->stack_slots && !cs_live_stacks_grow(g)) return;
  uint32_t key = block->stack_id + 1;
  size_t j = (key * 2654435761u) & (g->stack_slots - 1);
  while (g->stacks[j].stack_id && g->stacks[j].stack_id != key) j = (j + 1) & (g->stack_slots - 1);
  if (!g->stacks[j].stack_id) {
    g->stacks[j].stack_id = key;
    g->stack_count++;
  }
  g->stacks[j].bytes += block->requested;
  g->stacks[j].blocks++;
}

typedef struct cs_live_device_pass_s {
  cs_live_gather_t *g;
  cs_stats_t stats;
  int allocators, had;
} cs_live_device_pass_t;

static void cs_live_visit_allocator(void *ctx, cs_allocator_t *a) {
  cs_live_device_pass_t *p = ctx;
  p->allocators++;
  /* within CS_LIVE_LOCK_WAIT_MS, or not at all: its holder may be stuck in the driver */
  if (!cs_allocator_lock_by(a, cs_deadline_in_ms(CS_LIVE_LOCK_WAIT_MS))) return;
  cs_stats_t stats;
  cs_allocator_get_stats_locked(a, &stats);
  cs_allocator_visit_locked(a, cs_live_count_block, p->g);
  cs_allocator_unlock(a);
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
    cs_frame_t f = cs_symbolize(sym, cs_stack_site_pc(sym, pcs, n), 0);
    if (f.name) {
      snprintf(name, sizeof name, "%s %s:%d", f.name, f.filename ? f.filename : "??", f.line);
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

/* The device's top sites from the stacks counted. */
static void cs_live_top_sites(cs_live_gather_t *g, cs_live_device_t *d) {
  size_t n = 0;
  if (g->stack_count > g->total_cap) {
    cs_live_total_t *bigger = realloc(g->totals, g->stack_count * sizeof *bigger);
    if (!bigger) return;
    g->totals = bigger;
    g->total_cap = g->stack_count;
  }
  for (size_t i = 0; i < g->stack_slots; i++) {
    const cs_live_stack_t *s = &g->stacks[i];
    if (!s->stack_id) continue;
    uint32_t site = cs_live_site(g, s->stack_id - 1);
    if (site == UINT32_MAX) continue;
    size_t j = 0;
    while (j < n && g->totals[j].site != site) j++; /* sites are few next to stacks */
    if (j == n) g->totals[n++] = (cs_live_total_t){.site = site};
    g->totals[j].bytes += s->bytes;
    g->totals[j].blocks += s->blocks;
  }
  qsort(g->totals, n, sizeof *g->totals, cs_live_total_cmp);
  d->site_count = (uint32_t)(n < CS_LIVE_TOP_SITES ? n : CS_LIVE_TOP_SITES);
  for (size_t i = 0; i < d->site_count; i++) {
    d->sites[i].bytes = g->totals[i].bytes;
    d->sites[i].blocks = g->totals[i].blocks;
    snprintf(d->sites[i].name, sizeof d->sites[i].name, "%s", g->names[g->totals[i].site]);
  }
}

/* ---- per device ---- */

static const cs_live_device_t *cs_live_previous(const cs_live_device_t *previous, size_t n, int device) {
  for (size_t i = 0; i < n; i++)
    if (previous[i].device == device) return &previous[i];
  return NULL;
}

size_t cs_live_gather(cs_live_gather_t *g, cs_live_device_t *out, const cs_live_device_t *previous, size_t prev_count) {
  size_t n = 0;
  for (int device = 0; device < CS_MAX_DEVICES && n < CS_LIVE_MAX_DEVICES; device++) {
    if (g->stacks) memset(g->stacks, 0, g->stack_slots * sizeof *g->stacks);
    g->stack_count = 0;
    cs_live_device_pass_t pass = {.g = g};
    if (cs_runtime_for_each_allocator(device, cs_live_visit_allocator, &pass) == 0) continue;
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
    d->ooms = (uint64_t)pass.stats.num_ooms;
    uint64_t used, time_us;
    if (cs_driver_watch_last_used(device, &used, &time_us)) {
      d->driver_used_bytes = used;
      d->driver_time_us = time_us;
      d->driver_known = 1;
    }
    snprintf(d->phase, sizeof d->phase, "%s", cs_phases_name_text(cs_phases_open(device)));
    cs_live_top_sites(g, d);
  }
  return n;
}

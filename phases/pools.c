/* SPDX-License-Identifier: Apache-2.0 */
/* The pool registry (contract in phases/pools.h), behind one mutex. Heaps are few (a pool registers
 * its memory once), so they sit in a small array searched linearly. Regions are many (a KV cache or
 * a tensor pool has one per live sub-allocation) and come and go in any order: each heap keeps them
 * in a balanced tree (glibc's tsearch, a red-black tree), so a register, resize or unregister costs
 * O(log n) however many are live, where a sorted array cost a move of all regions above it (10 us
 * with 10,000 live: bench/README.md at ce4c996, "NVTX calls"). The tree orders regions as intervals: two
 * compare equal when they overlap, which is the overlap test itself, since live regions never do. */
#include "phases/pools.h"

#include <pthread.h>
#include <search.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_deadline.h"
#include "record/ticks.h"

typedef struct cs_heap_s {
  uintptr_t handle; /* 0: free slot */
  uintptr_t base;
  size_t size;
  int device;
  uint64_t ticks;
  void *regions; /* tsearch tree of cs_pool_region_t, by address; never overlapping */
  size_t count;
} cs_heap_t;

static pthread_mutex_t cs_pools_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_heap_t cs_heaps[CS_POOLS_MAX_HEAPS];
static uintptr_t cs_heap_next_handle = 1;
static size_t cs_heaps_used; /* slots [0, used) have held a heap: searches stop there */
static size_t cs_pools_live_regions;
/* a fork child's copy of the parent's trees; volatile, as nothing reads it (it only keeps them reachable) */
static void *volatile cs_pools_forked_away[CS_POOLS_MAX_HEAPS];

const char *cs_pools_status_text(cs_pools_status_t status) {
  switch (status) {
  case CS_POOLS_OK: return "ok";
  case CS_POOLS_UNKNOWN_HEAP: return "unknown heap handle";
  case CS_POOLS_UNKNOWN_REGION: return "no such region";
  case CS_POOLS_OUTSIDE_HEAP: return "region outside its heap";
  case CS_POOLS_OVERLAP: return "overlaps a registered region";
  case CS_POOLS_FULL: return "too many heaps or regions";
  }
  return "?";
}

static cs_heap_t *cs_heap_by_handle(uintptr_t handle) {
  for (size_t i = 0; handle && i < cs_heaps_used; i++)
    if (cs_heaps[i].handle == handle) return &cs_heaps[i];
  return NULL;
}

static cs_heap_t *cs_heap_containing(uintptr_t addr) {
  for (size_t i = 0; i < cs_heaps_used; i++) {
    cs_heap_t *h = &cs_heaps[i];
    if (h->handle && addr >= h->base && addr - h->base < h->size) return h;
  }
  return NULL;
}

cs_pools_status_t cs_pools_heap_register(uintptr_t base, size_t size, int device, uintptr_t *heap) {
  if (size == 0 || base + size < base) return CS_POOLS_OUTSIDE_HEAP;
  pthread_mutex_lock(&cs_pools_lock);
  cs_heap_t *slot = NULL;
  cs_pools_status_t st = CS_POOLS_OK;
  for (size_t i = 0; i < CS_POOLS_MAX_HEAPS && st == CS_POOLS_OK; i++) {
    cs_heap_t *h = &cs_heaps[i];
    if (!h->handle) {
      if (!slot) slot = h;
    } else if (base < h->base + h->size && h->base < base + size) {
      st = CS_POOLS_OVERLAP;
    }
  }
  if (st == CS_POOLS_OK && !slot) st = CS_POOLS_FULL;
  if (st == CS_POOLS_OK) {
    *slot = (cs_heap_t){.handle = cs_heap_next_handle++, .base = base, .size = size, .device = device,
                        .ticks = cs_ticks_now()};
    if ((size_t)(slot - cs_heaps) + 1 > cs_heaps_used) cs_heaps_used = (size_t)(slot - cs_heaps) + 1;
    *heap = slot->handle;
  }
  pthread_mutex_unlock(&cs_pools_lock);
  return st;
}

/* Detach h's regions: the caller frees the returned tree (cs_regions_free) after the lock, so that
 * a heap of many regions never holds the other threads' NVTX calls for its whole walk. */
static void *cs_heap_take_regions(cs_heap_t *h) {
  void *tree = h->regions;
  cs_pools_live_regions -= h->count;
  h->regions = NULL;
  h->count = 0;
  return tree;
}

static void cs_regions_free(void *tree) { tdestroy(tree, free); }

static cs_pools_status_t cs_pools_heap_drop(uintptr_t heap, bool unregister) {
  pthread_mutex_lock(&cs_pools_lock);
  cs_heap_t *h = cs_heap_by_handle(heap);
  void *tree = h ? cs_heap_take_regions(h) : NULL;
  if (h && unregister) h->handle = 0;
  pthread_mutex_unlock(&cs_pools_lock);
  cs_regions_free(tree);
  return h ? CS_POOLS_OK : CS_POOLS_UNKNOWN_HEAP;
}

cs_pools_status_t cs_pools_heap_unregister(uintptr_t heap) { return cs_pools_heap_drop(heap, true); }

cs_pools_status_t cs_pools_heap_reset(uintptr_t heap) { return cs_pools_heap_drop(heap, false); }

/* Regions as intervals: before, after, or overlapping (equal). */
static int cs_region_cmp(const void *x, const void *y) {
  const cs_pool_region_t *a = x, *b = y;
  if (a->addr + a->size <= b->addr) return -1;
  if (b->addr + b->size <= a->addr) return 1;
  return 0;
}

/* The live region of h overlapping [addr, addr + size), or NULL. */
static cs_pool_region_t *cs_heap_overlapping(const cs_heap_t *h, uintptr_t addr, size_t size) {
  cs_pool_region_t key = {.addr = addr, .size = size};
  void *const *node = tfind(&key, &h->regions, cs_region_cmp);
  return node ? *node : NULL;
}

static bool cs_heap_holds(const cs_heap_t *h, uintptr_t addr, size_t size) {
  return size > 0 && addr >= h->base && addr + size >= addr && addr + size <= h->base + h->size;
}

cs_pools_status_t cs_pools_region_register(uintptr_t heap, uintptr_t addr, size_t size, uint32_t stack_id,
                                           uint64_t ticks) {
  cs_pool_region_t *r = malloc(sizeof *r);
  pthread_mutex_lock(&cs_pools_lock);
  cs_heap_t *h = heap ? cs_heap_by_handle(heap) : cs_heap_containing(addr);
  cs_pools_status_t st = CS_POOLS_OK;
  if (!h) st = heap ? CS_POOLS_UNKNOWN_HEAP : CS_POOLS_OUTSIDE_HEAP;
  else if (!cs_heap_holds(h, addr, size)) st = CS_POOLS_OUTSIDE_HEAP;
  else if (cs_pools_live_regions >= CS_POOLS_MAX_REGIONS || !r) st = CS_POOLS_FULL;
  if (st == CS_POOLS_OK) {
    *r = (cs_pool_region_t){.addr = addr, .size = size, .stack_id = stack_id, .ticks = ticks};
    void *const *node = tsearch(r, &h->regions, cs_region_cmp);
    if (!node) st = CS_POOLS_FULL;
    else if (*node != r) st = CS_POOLS_OVERLAP; /* the live region it overlaps was found instead */
  }
  if (st == CS_POOLS_OK) {
    h->count++;
    cs_pools_live_regions++;
  }
  pthread_mutex_unlock(&cs_pools_lock);
  if (st != CS_POOLS_OK) free(r);
  return st;
}

/* The region starting at addr, and its heap, or NULL. pre: the lock. */
static cs_pool_region_t *cs_region_at(uintptr_t addr, cs_heap_t **heap) {
  cs_heap_t *h = cs_heap_containing(addr);
  cs_pool_region_t *r = h ? cs_heap_overlapping(h, addr, 1) : NULL;
  if (!r || r->addr != addr) return NULL;
  *heap = h;
  return r;
}

cs_pools_status_t cs_pools_region_resize(uintptr_t addr, size_t size) {
  pthread_mutex_lock(&cs_pools_lock);
  cs_heap_t *h = NULL;
  cs_pool_region_t *r = cs_region_at(addr, &h);
  cs_pools_status_t st = CS_POOLS_OK;
  if (!r) st = CS_POOLS_UNKNOWN_REGION;
  else if (!cs_heap_holds(h, addr, size)) st = CS_POOLS_OUTSIDE_HEAP;
  else if (size > r->size && cs_heap_overlapping(h, addr + r->size, size - r->size)) st = CS_POOLS_OVERLAP;
  else r->size = size; /* in place: its order among regions that do not overlap it is unchanged */
  pthread_mutex_unlock(&cs_pools_lock);
  return st;
}

cs_pools_status_t cs_pools_region_unregister(uintptr_t addr) {
  pthread_mutex_lock(&cs_pools_lock);
  cs_heap_t *h = NULL;
  cs_pool_region_t *r = cs_region_at(addr, &h);
  if (r) {
    tdelete(r, &h->regions, cs_region_cmp);
    h->count--;
    cs_pools_live_regions--;
  }
  pthread_mutex_unlock(&cs_pools_lock);
  free(r);
  return r ? CS_POOLS_OK : CS_POOLS_UNKNOWN_REGION;
}

cs_pools_status_t cs_pools_region_name(uintptr_t addr, uint32_t name_id) {
  pthread_mutex_lock(&cs_pools_lock);
  cs_heap_t *h = NULL;
  cs_pool_region_t *r = cs_region_at(addr, &h);
  if (r) r->name_id = name_id;
  pthread_mutex_unlock(&cs_pools_lock);
  return r ? CS_POOLS_OK : CS_POOLS_UNKNOWN_REGION;
}

static int cs_pool_heap_cmp(const void *x, const void *y) {
  const cs_pool_heap_t *a = x, *b = y;
  return (a->base > b->base) - (a->base < b->base);
}

/* twalk_r's visit: a node's key is in address order at its second visit (or its only, a leaf). */
static void cs_region_copy(const void *node, VISIT which, void *arg) {
  cs_pool_list_t *out = arg;
  if (which == postorder || which == leaf) out->regions[out->region_count++] = **(cs_pool_region_t *const *)node;
}

int cs_pools_copy(cs_pool_list_t *out, uint64_t deadline_ns) {
  *out = (cs_pool_list_t){.heaps = NULL, .heap_count = 0, .regions = NULL, .region_count = 0};
  if (!cs_deadline_lock(&cs_pools_lock, deadline_ns)) return 1;
  size_t heaps = 0;
  for (size_t i = 0; i < CS_POOLS_MAX_HEAPS; i++) heaps += cs_heaps[i].handle != 0;
  int rc = 0;
  if (heaps > 0) {
    out->heaps = malloc(heaps * sizeof *out->heaps);
    out->regions = malloc((cs_pools_live_regions ? cs_pools_live_regions : 1) * sizeof *out->regions);
    if (!out->heaps || !out->regions) rc = -1;
    for (size_t i = 0; rc == 0 && i < CS_POOLS_MAX_HEAPS; i++) {
      const cs_heap_t *h = &cs_heaps[i];
      if (!h->handle) continue;
      out->heaps[out->heap_count++] = (cs_pool_heap_t){.base = h->base, .size = h->size, .device = h->device,
                                                       .ticks = h->ticks, .first_region = out->region_count,
                                                       .region_count = h->count};
      twalk_r(h->regions, cs_region_copy, out);
    }
  }
  pthread_mutex_unlock(&cs_pools_lock);
  if (rc != 0) {
    cs_pool_list_free(out);
    return -1;
  }
  if (out->heap_count > 1) qsort(out->heaps, out->heap_count, sizeof *out->heaps, cs_pool_heap_cmp);
  return 0;
}

void cs_pool_list_free(cs_pool_list_t *list) {
  free(list->heaps);
  free(list->regions);
  *list = (cs_pool_list_t){.heaps = NULL, .heap_count = 0, .regions = NULL, .region_count = 0};
}

void cs_pools_clear(void) {
  for (size_t i = 0; i < CS_POOLS_MAX_HEAPS; i++) {
    pthread_mutex_lock(&cs_pools_lock);
    void *tree = cs_heap_take_regions(&cs_heaps[i]);
    cs_heaps[i].handle = 0;
    pthread_mutex_unlock(&cs_pools_lock);
    cs_regions_free(tree);
  }
}

void cs_pools_postfork_child(void) {
  pthread_mutex_init(&cs_pools_lock, NULL);
  /* The parent's trees are kept, never walked: another thread may have been rebalancing or
   * freeing one at the fork, and freeing it again could abort the child. Their pages stay shared
   * with the parent until written, and nothing writes them; the pointers stay reachable here, so
   * leak checkers do not count them. */
  for (size_t i = 0; i < CS_POOLS_MAX_HEAPS; i++) {
    void *tree = cs_heap_take_regions(&cs_heaps[i]);
    if (tree) cs_pools_forked_away[i] = tree;
    cs_heaps[i].handle = 0;
  }
  cs_heaps_used = 0;
}

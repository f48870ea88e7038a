/* SPDX-License-Identifier: Apache-2.0 */
#include "device/passthrough_mem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_deadline.h"
#include "common/cs_error.h"
#include "common/cs_log.h"
#include "device/driver_watch.h"
#include "device/mempools.h"
#include "device/recorder.h"
#include "device/registry.h"
#include "record/recfile.h"
#include "record/ring.h"
#include "snapshot/snapshot.h"

typedef struct cs_passthrough_entry_s {
  struct cs_passthrough_entry_s *next;
  struct cs_passthrough_entry_s *inflight_next; /* a free in flight: the next in cs_passthrough_inflight */
  struct cs_passthrough_entry_s *pending_next;  /* a free in flight: the next of the same call's */
  uintptr_t key;      /* address, or handle (arrays, physical VMM handles) */
  uintptr_t addr;     /* where it is drawn: the address, or an array's pseudo address */
  size_t size;
  uintptr_t stream;   /* stream-ordered allocations */
  uintptr_t group;    /* a mapping: the reserved range it lies in (0: none known) */
  uintptr_t handle;   /* a mapping: its physical handle */
  size_t maps;        /* a physical handle: its live mappings */
  bool released;      /* a physical handle: released while mapped; the driver frees it with
                         its last mapping, and it is counted until then */
  uint32_t stack_id;
  uint32_t free_stack; /* a free in flight: the freeing call's stack */
  int device;         /* -1: none */
  cs_passthrough_kind_t kind;
  bool freeing;       /* the driver was asked to free it and has not answered yet */
  bool settled;       /* recorded freed while in flight, its address (or handle) handed out again:
                         no longer in the table; the freeing call frees the struct */
} cs_passthrough_entry_t;

enum { CS_PASSTHROUGH_BUCKETS = 1024 };

/* Everything below is under this lock. Lock order: the allocators' locks, then this one (a
 * snapshot copies this state while it holds theirs); no allocator lock is taken under it. */
static pthread_mutex_t cs_passthrough_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_passthrough_entry_t *cs_passthrough_table[CS_PASSTHROUGH_BUCKETS];
static size_t cs_passthrough_count[CS_PASSTHROUGH_KINDS];
static size_t cs_passthrough_bytes[CS_PASSTHROUGH_KINDS];
static cs_passthrough_stat_t cs_passthrough_stat[CS_PASSTHROUGH_MAX_DEVICES + 1][CS_PASSTHROUGH_KINDS];
static uintptr_t cs_passthrough_next_array = CS_PASSTHROUGH_ARRAY_BASE;
static cs_passthrough_entry_t *cs_passthrough_inflight; /* the frees in flight, linked by inflight_next */
/* The events of every drawn kind, one history for all devices (entries carry the device, and the
 * kind above the stack id, record/recfile.h); in the recording file when there is one. */
static cs_ring_t cs_passthrough_ring;
static size_t cs_passthrough_ring_entries; /* CUDASNAP_MAX_ENTRIES, from activation */
static bool cs_passthrough_started, cs_passthrough_ring_ready;
static bool cs_passthrough_history_enabled = true;

static size_t cs_passthrough_bucket(uintptr_t key) {
  return (size_t)(((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 54) % CS_PASSTHROUGH_BUCKETS;
}

void cs_passthrough_start(const cs_options_t *opts) {
  pthread_mutex_lock(&cs_passthrough_lock);
  cs_passthrough_ring_entries = opts->max_entries;
  cs_passthrough_started = true;
  pthread_mutex_unlock(&cs_passthrough_lock);
}

/* The history is made at the first pass-through event: a program that never passes the cache by
 * pays nothing for it. pre: lock held. */
static void cs_passthrough_ring_ready_locked(void) {
  if (cs_passthrough_ring_ready || !cs_passthrough_started) return;
  cs_passthrough_ring_ready = true;
  if (cs_record_passthrough_ring(&cs_passthrough_ring)) {
    /* in the file's section */
  } else if (cs_ring_init(&cs_passthrough_ring, cs_passthrough_ring_entries) != 0) {
    cs_log_warn("cannot reserve %zu history entries for memory passed through (CUDASNAP_MAX_ENTRIES); "
                "recording its state only", cs_passthrough_ring_entries);
    (void)cs_ring_init(&cs_passthrough_ring, 0);
  }
  cs_ring_set_enabled(&cs_passthrough_ring, cs_passthrough_history_enabled);
}

static bool cs_passthrough_drawn(const cs_passthrough_entry_t *e) {
  return e->kind < (cs_passthrough_kind_t)CS_PASSTHROUGH_DRAWN_KINDS && e->device >= 0 &&
         e->device < CS_PASSTHROUGH_MAX_DEVICES;
}

static cs_passthrough_stat_t *cs_passthrough_stat_of(const cs_passthrough_entry_t *e) {
  if (e->device >= 0 && e->device < CS_PASSTHROUGH_MAX_DEVICES) return &cs_passthrough_stat[e->device][e->kind];
  if (e->kind == CS_PASSTHROUGH_HOST || e->kind == CS_PASSTHROUGH_HOST_REGISTERED)
    return &cs_passthrough_stat[CS_PASSTHROUGH_NO_DEVICE][e->kind];
  return NULL;
}

/* pre: lock held; the entry is unlinked. Its events mirror the insertion's, the block first. */
static void cs_passthrough_forget_locked(cs_passthrough_entry_t *e, uint32_t stack) {
  cs_passthrough_count[e->kind]--;
  cs_passthrough_bytes[e->kind] -= e->size;
  cs_passthrough_stat_t *st = cs_passthrough_stat_of(e);
  if (st) {
    st->current -= (int64_t)e->size;
    st->freed += (int64_t)e->size;
  }
  cs_driver_watch_passthrough(e->device, e->kind, -(int64_t)e->size);
  if (!cs_passthrough_drawn(e)) return;
  cs_action_t seg = e->kind == CS_PASSTHROUGH_VMM_MAPPING ? CS_ACTION_SEGMENT_UNMAP : CS_ACTION_SEGMENT_FREE;
  stack = cs_recfile_kind_stack(e->kind, stack);
  cs_ring_push(&cs_passthrough_ring, CS_ACTION_FREE_REQUESTED, e->device, e->addr, e->size, e->stream, stack);
  cs_ring_push_same_time(&cs_passthrough_ring, CS_ACTION_FREE_COMPLETED, e->device, e->addr, e->size, e->stream, stack);
  cs_ring_push_same_time(&cs_passthrough_ring, seg, e->device, e->addr, e->size, e->stream, stack);
}

/* The link to the entry of that kind and key, or to the NULL ending its bucket. */
static cs_passthrough_entry_t **cs_passthrough_link_locked(cs_passthrough_kind_t kind, uintptr_t key) {
  cs_passthrough_entry_t **link = &cs_passthrough_table[cs_passthrough_bucket(key)];
  while (*link && !((*link)->key == key && (*link)->kind == kind)) link = &(*link)->next;
  return link;
}

static cs_passthrough_entry_t *cs_passthrough_find_locked(cs_passthrough_kind_t kind, uintptr_t key) {
  for (cs_passthrough_entry_t *e = cs_passthrough_table[cs_passthrough_bucket(key)]; e; e = e->next)
    if (e->key == key && e->kind == kind) return e;
  return NULL;
}

/* pre: lock held; e is in the table. */
static void cs_passthrough_unlink_locked(cs_passthrough_entry_t *e) {
  cs_passthrough_entry_t **link = &cs_passthrough_table[cs_passthrough_bucket(e->key)];
  while (*link && *link != e) link = &(*link)->next;
  if (*link) *link = e->next;
}

/* pre: lock held; e is in the table. It is unlinked and its free recorded with `stack`. A mapping
 * takes one mapping off its physical handle, which goes too when released and now unmapped (onto
 * *gone, to be freed once the lock is let go). */
static void cs_passthrough_drop_locked(cs_passthrough_entry_t *e, uint32_t stack, cs_passthrough_entry_t **gone) {
  cs_passthrough_unlink_locked(e);
  cs_passthrough_forget_locked(e, stack);
  if (e->kind != CS_PASSTHROUGH_VMM_MAPPING) return;
  cs_passthrough_entry_t **link = cs_passthrough_link_locked(CS_PASSTHROUGH_VMM_HANDLE, e->handle), *physical = *link;
  if (physical && physical->maps > 0 && --physical->maps == 0 && physical->released && !physical->freeing) {
    *link = physical->next;
    cs_passthrough_forget_locked(physical, stack);
    physical->next = *gone;
    *gone = physical;
  }
}

/* ---- frees in flight ----
 *
 * A free is recorded in the order the driver's answers make true. The driver frees, then answers;
 * another thread may be handed the address in between and record its allocation before the free is
 * recorded, which would put two live allocations at one address in the history (issue 44). So the
 * entry is marked before the driver is asked (cs_passthrough_free_begin) and stays drawn while the
 * call is in flight; the free is recorded when the driver answers (cs_passthrough_free_end), or, if
 * the address (a handle, for handle kinds) is handed out again first, by the call that records
 * the new allocation, before it: the driver hands out only what it has freed. A refusal records
 * nothing: the mark is taken off. Nothing is held across the driver's call. */

/* Which addresses (or handles) can be handed out again for which: entries of one space conflict
 * when their keys are the same handle or their ranges overlap. */
typedef enum cs_passthrough_space_e {
  CS_SPACE_DEVICE, /* device memory and mappings: the device address space */
  CS_SPACE_HOST,   /* pinned and registered host memory */
  CS_SPACE_RESERVED,
  CS_SPACE_ARRAY,  /* array handles */
  CS_SPACE_HANDLE, /* physical VMM handles */
} cs_passthrough_space_t;

static cs_passthrough_space_t cs_passthrough_space(cs_passthrough_kind_t kind) {
  switch (kind) {
  case CS_PASSTHROUGH_HOST: case CS_PASSTHROUGH_HOST_REGISTERED: return CS_SPACE_HOST;
  case CS_PASSTHROUGH_VMM_RESERVE: return CS_SPACE_RESERVED;
  case CS_PASSTHROUGH_ARRAY: return CS_SPACE_ARRAY;
  case CS_PASSTHROUGH_VMM_HANDLE: return CS_SPACE_HANDLE;
  default: return CS_SPACE_DEVICE;
  }
}

static bool cs_passthrough_conflicts(const cs_passthrough_entry_t *e, cs_passthrough_space_t space, uintptr_t key,
                                     size_t size) {
  cs_passthrough_space_t own = cs_passthrough_space(e->kind);
  if (own != space) return false;
  if (own == CS_SPACE_ARRAY || own == CS_SPACE_HANDLE) return e->key == key;
  size_t n = size ? size : 1, m = e->size ? e->size : 1; /* an import of unknown size: its start */
  return e->key - key < n || key - e->key < m;
}

static void cs_passthrough_inflight_unlink_locked(cs_passthrough_entry_t *e) {
  cs_passthrough_entry_t **link = &cs_passthrough_inflight;
  while (*link && *link != e) link = &(*link)->inflight_next;
  if (*link) *link = e->inflight_next;
}

/* A new entry of `space` at [key, key + size) (or handle key): every free in flight it conflicts
 * with is recorded now, before it. pre: lock held. */
static void cs_passthrough_settle_locked(cs_passthrough_space_t space, uintptr_t key, size_t size,
                                         cs_passthrough_entry_t **gone) {
  cs_passthrough_entry_t **link = &cs_passthrough_inflight;
  while (*link) {
    cs_passthrough_entry_t *e = *link;
    if (!cs_passthrough_conflicts(e, space, key, size)) {
      link = &e->inflight_next;
      continue;
    }
    *link = e->inflight_next;
    cs_passthrough_drop_locked(e, e->free_stack, gone);
    e->settled = true;
  }
}

/* Device memory recorded live at the very address the driver hands out again was freed without a
 * hooked call (its context torn down): its free is recorded first, with no stack, so no snapshot
 * holds two live allocations at one address. IPC imports are left alone (an import opened twice
 * may share its address). pre: lock held. */
static void cs_passthrough_forget_stale_locked(uintptr_t addr, cs_passthrough_entry_t **gone) {
  static const cs_passthrough_kind_t kinds[] = {CS_PASSTHROUGH_DEVICE, CS_PASSTHROUGH_PITCH, CS_PASSTHROUGH_MANAGED,
                                                CS_PASSTHROUGH_ASYNC, CS_PASSTHROUGH_GRAPH, CS_PASSTHROUGH_VMM_MAPPING};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    cs_passthrough_entry_t *e = cs_passthrough_find_locked(kinds[i], addr);
    if (!e || e->freeing) continue;
    cs_passthrough_drop_locked(e, 0, gone);
    e->next = *gone;
    *gone = e;
  }
}

static void cs_passthrough_free_list(cs_passthrough_entry_t *gone) {
  while (gone) {
    cs_passthrough_entry_t *next = gone->next;
    free(gone);
    gone = next;
  }
}

/* pre: lock held. The entry's events: a segment (mapped, for a mapping) holding one allocated
 * block of the whole size, as the viewer draws PyTorch's segments; after the frees its address
 * proves done (the settled frees in flight, and stale entries: onto *gone). */
static void cs_passthrough_insert_locked(cs_passthrough_entry_t *e, cs_passthrough_entry_t **gone) {
  cs_passthrough_ring_ready_locked();
  cs_passthrough_space_t space = cs_passthrough_space(e->kind);
  if (cs_passthrough_inflight) cs_passthrough_settle_locked(space, e->key, e->size, gone);
  if (space == CS_SPACE_DEVICE && e->kind != CS_PASSTHROUGH_IPC) cs_passthrough_forget_stale_locked(e->key, gone);
  size_t b = cs_passthrough_bucket(e->key);
  e->next = cs_passthrough_table[b];
  cs_passthrough_table[b] = e;
  cs_passthrough_count[e->kind]++;
  cs_passthrough_bytes[e->kind] += e->size;
  cs_passthrough_stat_t *st = cs_passthrough_stat_of(e);
  if (st) {
    st->current += (int64_t)e->size;
    st->allocated += (int64_t)e->size;
    if (st->current > st->peak) st->peak = st->current;
  }
  cs_driver_watch_passthrough(e->device, e->kind, (int64_t)e->size);
  if (!cs_passthrough_drawn(e)) return;
  cs_action_t seg = e->kind == CS_PASSTHROUGH_VMM_MAPPING ? CS_ACTION_SEGMENT_MAP : CS_ACTION_SEGMENT_ALLOC;
  uint32_t stack = cs_recfile_kind_stack(e->kind, e->stack_id);
  cs_ring_push(&cs_passthrough_ring, seg, e->device, e->addr, e->size, e->stream, stack);
  cs_ring_push_same_time(&cs_passthrough_ring, CS_ACTION_ALLOC, e->device, e->addr, e->size, e->stream, stack);
}

void cs_passthrough_add(cs_passthrough_kind_t kind, uintptr_t key, size_t size, int device, uintptr_t stream,
                        uint32_t stack) {
  cs_passthrough_entry_t *e = malloc(sizeof *e);
  if (!e) return; /* not recorded; the program's call already succeeded */
  *e = (cs_passthrough_entry_t){.key = key, .addr = key, .size = size, .stream = stream, .stack_id = stack,
                                .device = device, .kind = kind};
  cs_passthrough_entry_t *gone = NULL;
  pthread_mutex_lock(&cs_passthrough_lock);
  if (kind == CS_PASSTHROUGH_ARRAY) {
    /* 2 MiB apart, so that arrays never look adjacent to each other */
    e->addr = cs_passthrough_next_array;
    cs_passthrough_next_array += (size + (2u << 20)) & ~(uintptr_t)((2u << 20) - 1);
  }
  cs_passthrough_insert_locked(e, &gone);
  pthread_mutex_unlock(&cs_passthrough_lock);
  cs_passthrough_free_list(gone);
  cs_driver_watch_poll(); /* the driver at a new high, out of the lock */
}

/* The reserved range holding addr, or 0. pre: lock held. A walk of the table: mappings are few
 * (PyTorch maps 2 or 20 MiB at a time) and reservations fewer. */
static uintptr_t cs_passthrough_group_locked(uintptr_t addr) {
  for (size_t b = 0; b < CS_PASSTHROUGH_BUCKETS; b++)
    for (cs_passthrough_entry_t *e = cs_passthrough_table[b]; e; e = e->next)
      if (e->kind == CS_PASSTHROUGH_VMM_RESERVE && addr - e->key < e->size) return e->key;
  return 0;
}

void cs_passthrough_map(uintptr_t addr, size_t size, uintptr_t handle, int current_device, uint32_t stack) {
  cs_passthrough_entry_t *e = malloc(sizeof *e);
  if (!e) return;
  cs_passthrough_entry_t *gone = NULL;
  pthread_mutex_lock(&cs_passthrough_lock);
  cs_passthrough_entry_t *physical = cs_passthrough_find_locked(CS_PASSTHROUGH_VMM_HANDLE, handle);
  if (physical) physical->maps++;
  *e = (cs_passthrough_entry_t){.key = addr, .addr = addr, .size = size, .group = cs_passthrough_group_locked(addr),
                                .handle = handle, .stack_id = stack,
                                .device = physical && physical->device >= 0 ? physical->device : current_device,
                                .kind = CS_PASSTHROUGH_VMM_MAPPING};
  cs_passthrough_insert_locked(e, &gone);
  pthread_mutex_unlock(&cs_passthrough_lock);
  cs_passthrough_free_list(gone);
  cs_driver_watch_poll(); /* the driver at a new high, out of the lock */
}

void cs_passthrough_reused(uintptr_t addr, size_t size) {
  cs_passthrough_entry_t *gone = NULL;
  pthread_mutex_lock(&cs_passthrough_lock);
  if (cs_passthrough_inflight) cs_passthrough_settle_locked(CS_SPACE_DEVICE, addr, size, &gone);
  cs_passthrough_forget_stale_locked(addr, &gone);
  pthread_mutex_unlock(&cs_passthrough_lock);
  cs_passthrough_free_list(gone);
}

/* pre: lock held. e is marked in flight for p's call. */
static void cs_passthrough_mark_locked(cs_passthrough_pending_t *p, cs_passthrough_entry_t *e) {
  e->freeing = true;
  e->free_stack = p->stack;
  e->inflight_next = cs_passthrough_inflight;
  cs_passthrough_inflight = e;
  e->pending_next = p->first;
  p->first = e;
}

void cs_passthrough_free_begin(cs_passthrough_pending_t *p, const cs_passthrough_kind_t *kinds, size_t count,
                               uintptr_t key,
                               uint32_t stack) {
  *p = (cs_passthrough_pending_t){.stack = stack};
  pthread_mutex_lock(&cs_passthrough_lock);
  for (size_t i = 0; i < count; i++) {
    cs_passthrough_entry_t *e = cs_passthrough_find_locked(kinds[i], key);
    if (!e || e->freeing) continue; /* a free of it in flight already: the driver refuses one */
    if (e->kind == CS_PASSTHROUGH_VMM_HANDLE && e->maps > 0) {
      /* still mapped: the physical memory stays until its last mapping goes, and so does the
       * handle; its release is noted once the driver has answered */
      p->handle = key;
      p->release_mapped = true;
    } else {
      cs_passthrough_mark_locked(p, e);
    }
    break;
  }
  pthread_mutex_unlock(&cs_passthrough_lock);
}

void cs_passthrough_unmap_begin(cs_passthrough_pending_t *p, uintptr_t addr, size_t size, uint32_t stack) {
  *p = (cs_passthrough_pending_t){.stack = stack};
  pthread_mutex_lock(&cs_passthrough_lock);
  /* in descending address order, so that the list (pushed at its head) reads in address order and
   * the history reads as the range is taken apart */
  uintptr_t below = UINTPTR_MAX;
  for (;;) {
    cs_passthrough_entry_t *last = NULL;
    for (size_t b = 0; b < CS_PASSTHROUGH_BUCKETS; b++)
      for (cs_passthrough_entry_t *e = cs_passthrough_table[b]; e; e = e->next)
        if (e->kind == CS_PASSTHROUGH_VMM_MAPPING && !e->freeing && e->key - addr < size && e->key < below &&
            (!last || e->key > last->key))
          last = e;
    if (!last) break;
    cs_passthrough_mark_locked(p, last);
    below = last->key;
  }
  pthread_mutex_unlock(&cs_passthrough_lock);
}

void cs_passthrough_free_end(cs_passthrough_pending_t *p, bool freed) {
  if (!p->first && !p->release_mapped) return;
  cs_passthrough_entry_t *gone = NULL;
  pthread_mutex_lock(&cs_passthrough_lock);
  for (cs_passthrough_entry_t *e = p->first, *next; e; e = next) {
    next = e->pending_next;
    if (e->settled) { /* recorded already, and out of the table: its address was handed out
                         again, so the driver had freed it, whatever it answers */
      e->next = gone;
      gone = e;
      continue;
    }
    cs_passthrough_inflight_unlink_locked(e);
    e->freeing = false;
    if (!freed) continue; /* refused: it stays as it was, and nothing was recorded */
    cs_passthrough_drop_locked(e, p->stack, &gone);
    e->next = gone;
    gone = e;
  }
  if (p->release_mapped && freed) {
    cs_passthrough_entry_t **link = cs_passthrough_link_locked(CS_PASSTHROUGH_VMM_HANDLE, p->handle), *e = *link;
    if (e && e->maps > 0) {
      e->released = true;
    } else if (e) { /* its last mapping went meanwhile */
      *link = e->next;
      cs_passthrough_forget_locked(e, p->stack);
      e->next = gone;
      gone = e;
    }
  }
  pthread_mutex_unlock(&cs_passthrough_lock);
  cs_passthrough_free_list(gone);
}

bool cs_passthrough_remove(cs_passthrough_kind_t kind, uintptr_t key, uint32_t stack) {
  pthread_mutex_lock(&cs_passthrough_lock);
  cs_passthrough_entry_t **link = cs_passthrough_link_locked(kind, key);
  cs_passthrough_entry_t *e = *link;
  if (e && e->freeing) e = NULL; /* its own free is in flight and records it */
  if (e && kind == CS_PASSTHROUGH_VMM_HANDLE && e->maps > 0) {
    /* still mapped: the physical memory stays until its last mapping goes */
    e->released = true;
    pthread_mutex_unlock(&cs_passthrough_lock);
    return true;
  }
  if (e) {
    *link = e->next;
    cs_passthrough_forget_locked(e, stack);
  }
  pthread_mutex_unlock(&cs_passthrough_lock);
  free(e);
  return e != NULL;
}

void cs_passthrough_record_oom(cs_passthrough_kind_t kind, int device, size_t size, uintptr_t stream,
                               size_t device_free, size_t device_total, uint32_t stack,
                               const cs_cache_figures_t *cache) {
  bool host = kind == CS_PASSTHROUGH_HOST || kind == CS_PASSTHROUGH_HOST_REGISTERED;
  bool on_device = !host && device >= 0 && device < CS_PASSTHROUGH_MAX_DEVICES;
  pthread_mutex_lock(&cs_passthrough_lock);
  if (host) cs_passthrough_stat[CS_PASSTHROUGH_NO_DEVICE][kind].ooms++;
  if (on_device) {
    cs_passthrough_stat[device][kind].ooms++;
    cs_registry_count_passthrough_oom(device); /* num_ooms, under the lock that copies the history */
    cs_passthrough_ring_ready_locked();
    /* the recording file's pass-through entries name a drawn kind: a physical handle's memory is
     * drawn through its mappings */
    cs_passthrough_kind_t drawn =
        kind < (cs_passthrough_kind_t)CS_PASSTHROUGH_DRAWN_KINDS ? kind : CS_PASSTHROUGH_VMM_MAPPING;
    uint32_t tagged = cs_recfile_kind_stack(drawn, stack);
    cs_ring_push(&cs_passthrough_ring, CS_ACTION_OOM, device, device_free, size, stream, tagged);
    cs_oom_state_t state;
    uint64_t addr, bytes;
    if (cache) state = (cs_oom_state_t){.reserved = cache->reserved, .allocated = cache->allocated,
                                        .largest_free = cache->largest_free, .small_free = cache->small_free};
    if (cache && cs_oom_state_pack(&state, &addr, &bytes))
      cs_ring_push_same_time(&cs_passthrough_ring, CS_ACTION_OOM_STATE, device, addr, bytes, 0,
                             cs_recfile_kind_stack(drawn, 0));
    if (device_total > 0)
      cs_ring_push_same_time(&cs_passthrough_ring, CS_ACTION_OOM_DEVICE, device, device_total, 0, 0,
                             cs_recfile_kind_stack(drawn, 0));
  }
  pthread_mutex_unlock(&cs_passthrough_lock);
}

bool cs_passthrough_find_drawn(uintptr_t addr, int *device) {
  bool found = false;
  pthread_mutex_lock(&cs_passthrough_lock);
  for (size_t b = 0; b < CS_PASSTHROUGH_BUCKETS && !found; b++)
    for (const cs_passthrough_entry_t *e = cs_passthrough_table[b]; e && !found; e = e->next)
      if (cs_passthrough_drawn(e) && e->kind != CS_PASSTHROUGH_ARRAY && addr - e->addr < e->size) {
        found = true;
        *device = e->device;
      }
  pthread_mutex_unlock(&cs_passthrough_lock);
  return found;
}

void cs_passthrough_totals(cs_passthrough_kind_t kind, size_t *count, size_t *bytes) {
  pthread_mutex_lock(&cs_passthrough_lock);
  *count = cs_passthrough_count[kind];
  *bytes = cs_passthrough_bytes[kind];
  pthread_mutex_unlock(&cs_passthrough_lock);
}

bool cs_passthrough_stats(int device, cs_passthrough_stat_t out[CS_PASSTHROUGH_KINDS]) {
  if (device < 0 || device > CS_PASSTHROUGH_NO_DEVICE) return false;
  pthread_mutex_lock(&cs_passthrough_lock);
  memcpy(out, cs_passthrough_stat[device], sizeof cs_passthrough_stat[device]);
  pthread_mutex_unlock(&cs_passthrough_lock);
  return true;
}

/* ---- snapshots ---- */

static int cs_passthrough_draw_cmp(const void *x, const void *y) {
  const cs_passthrough_entry_t *a = *(const cs_passthrough_entry_t *const *)x;
  const cs_passthrough_entry_t *b = *(const cs_passthrough_entry_t *const *)y;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  return (a->addr > b->addr) - (a->addr < b->addr);
}

/* Mappings that touch, on one device and in one reserved range, are one expandable segment (as
 * PyTorch reports the mapped runs of an expandable segment); everything else is a segment of its
 * own holding one block. */
static void cs_passthrough_draw(cs_snap_state_t *s, cs_passthrough_entry_t **drawn, size_t n) {
  qsort(drawn, n, sizeof *drawn, cs_passthrough_draw_cmp);
  const cs_passthrough_entry_t *prev = NULL;
  for (size_t i = 0; i < n; i++) {
    const cs_passthrough_entry_t *e = drawn[i];
    bool vmm = e->kind == CS_PASSTHROUGH_VMM_MAPPING;
    bool joins = vmm && prev && prev->kind == CS_PASSTHROUGH_VMM_MAPPING && prev->device == e->device &&
                 prev->group == e->group && prev->addr + prev->size == e->addr;
    if (!joins) cs_snap_state_add_passthrough_segment(s, e->device, e->addr, e->stream, e->kind, vmm, e->stack_id);
    cs_snap_state_add_passthrough_block(s, e->size, e->stack_id);
    prev = e;
  }
}

static void cs_passthrough_snapshot_locked(cs_snap_state_t *s, bool with_history) {
  size_t total = 0;
  for (int k = 0; k < CS_PASSTHROUGH_KINDS; k++) total += cs_passthrough_count[k];
  cs_passthrough_entry_t **drawn = malloc((total ? total : 1) * sizeof *drawn);
  size_t n = 0;
  if (!drawn) s->error = -CS_EHOSTMEM;
  for (size_t b = 0; drawn && b < CS_PASSTHROUGH_BUCKETS; b++)
    for (cs_passthrough_entry_t *e = cs_passthrough_table[b]; e; e = e->next) {
      int row = e->device >= 0 && e->device < CS_SNAP_MAX_DEVICES ? e->device : CS_SNAP_MAX_DEVICES;
      s->memory[row].kind_bytes[e->kind] += e->size;
      s->memory[row].kind_count[e->kind]++;
      if (cs_passthrough_drawn(e)) drawn[n++] = e;
      else cs_snap_state_add_other(s, e->kind, e->device, e->size, e->stack_id);
    }
  if (drawn) cs_passthrough_draw(s, drawn, n);
  free(drawn);
  _Static_assert((int)CS_SNAP_MAX_DEVICES == (int)CS_PASSTHROUGH_MAX_DEVICES, "one row per device, and one for none");
  memcpy(s->passthrough, cs_passthrough_stat, sizeof cs_passthrough_stat);
  /* num_ooms counts the out-of-memory answers past the cache too, as their `oom` entries are in
   * this history (counted under this lock with their entries) */
  for (int d = 0; d < CS_SNAP_MAX_DEVICES; d++) {
    int64_t ooms = cs_registry_passthrough_ooms(d);
    if (ooms == 0) continue;
    if (d >= s->device_count) s->device_count = d + 1;
    s->stats[d].num_ooms += ooms;
  }
  s->has_passthrough = cs_passthrough_ring_ready || cs_mempools_count() > 0;
  if (!with_history) return;
  cs_snap_state_add_history(s, &cs_passthrough_ring); /* kinds kept in stack ids: cs_snap_entry_kind */
}

void cs_passthrough_snapshot(cs_snap_state_t *s, bool with_history) {
  pthread_mutex_lock(&cs_passthrough_lock);
  cs_passthrough_snapshot_locked(s, with_history);
  pthread_mutex_unlock(&cs_passthrough_lock);
}

bool cs_passthrough_snapshot_by(cs_snap_state_t *s, bool with_history, uint64_t deadline_ns) {
  if (!cs_deadline_lock(&cs_passthrough_lock, deadline_ns)) return false;
  cs_passthrough_snapshot_locked(s, with_history);
  pthread_mutex_unlock(&cs_passthrough_lock);
  return true;
}

void cs_passthrough_set_history(bool enabled) {
  pthread_mutex_lock(&cs_passthrough_lock);
  cs_passthrough_history_enabled = enabled;
  if (cs_passthrough_ring_ready) cs_ring_set_enabled(&cs_passthrough_ring, enabled);
  pthread_mutex_unlock(&cs_passthrough_lock);
}

void cs_passthrough_prefork(void) { pthread_mutex_lock(&cs_passthrough_lock); }

void cs_passthrough_postfork(bool child) {
  if (!child) {
    pthread_mutex_unlock(&cs_passthrough_lock);
    return;
  }
  pthread_mutex_init(&cs_passthrough_lock, NULL);
  for (size_t b = 0; b < CS_PASSTHROUGH_BUCKETS; b++) {
    while (cs_passthrough_table[b]) {
      cs_passthrough_entry_t *e = cs_passthrough_table[b];
      cs_passthrough_table[b] = e->next;
      free(e);
    }
  }
  for (int k = 0; k < CS_PASSTHROUGH_KINDS; k++) cs_passthrough_count[k] = cs_passthrough_bytes[k] = 0;
  memset(cs_passthrough_stat, 0, sizeof cs_passthrough_stat);
  cs_registry_reset_passthrough_ooms(-1);
  cs_passthrough_inflight = NULL; /* those calls were the parent's threads': their entries went above */
  cs_ring_clear(&cs_passthrough_ring);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "device/contexts.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "common/cs_deadline.h"
#include "common/cs_error.h"
#include "common/cs_log.h"
#include "device/backend_cuda.h"
#include "device/driver_watch.h"
#include "device/passthrough_mem.h"
#include "device/recorder.h"
#include "device/registry.h"
#include "device/streams.h"
#include "real/real.h"

enum { CS_MAX_CONTEXTS = 64 };

struct cs_context_s {
  _Atomic(CUcontext) ctx;   /* NULL: free, or retired (allocator kept for its device) */
  int device;
  bool primary;             /* the device's primary context (cudaMalloc's) */
  cs_allocator_t *allocator;
  cs_cuda_backend_t backend;
  cs_history_t history;     /* the allocator's events; kept with the slot when it is reused */
};

static cs_context_t cs_contexts[CS_MAX_CONTEXTS];
static atomic_int cs_context_count; /* slots [0, count) have been used */
static pthread_mutex_t cs_contexts_lock = PTHREAD_MUTEX_INITIALIZER;

/* The options, from activation on (cs_contexts_start): every context is made after it. */
static const cs_options_t *_Atomic cs_contexts_opts;

/* The last context this thread used: most programs have one, so the lookup is one compare. */
static CS_TLS cs_context_t *cs_context_last;

int cs_context_device(const cs_context_t *c) { return c->device; }

/* Is ctx the primary context of device? Asked without creating one: a primary context that is
 * not active cannot be ctx. */
static bool cs_context_is_primary(CUcontext ctx, CUdevice device) {
  unsigned flags = 0;
  int active = 0;
  if (CS_REAL_FN(cuDevicePrimaryCtxGetState, PFN_cuDevicePrimaryCtxGetState_v7000)(device, &flags, &active) !=
          CUDA_SUCCESS ||
      !active)
    return false;
  CUcontext primary = NULL;
  if (CS_REAL_FN(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000)(&primary, device) != CUDA_SUCCESS)
    return false;
  CS_REAL_FN(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000)(device);
  return primary == ctx;
}

static cs_context_t *cs_context_find(CUcontext ctx) {
  int n = atomic_load_explicit(&cs_context_count, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (atomic_load_explicit(&cs_contexts[i].ctx, memory_order_acquire) == ctx) return &cs_contexts[i];
  return NULL;
}

/* A slot for a new context: a retired one of the same device (its allocator is empty), or a new
 * one. pre: cs_contexts_lock held. */
static cs_context_t *cs_context_slot(int device) {
  int n = atomic_load_explicit(&cs_context_count, memory_order_relaxed);
  for (int i = 0; i < n; i++)
    if (!atomic_load(&cs_contexts[i].ctx) && cs_contexts[i].device == device) return &cs_contexts[i];
  if (n == CS_MAX_CONTEXTS) return NULL;
  return &cs_contexts[n];
}

/* Devices the driver reports, asked once (snapshots have one trace list per device). */
static atomic_int cs_device_count;

int cs_contexts_device_count(void) { return atomic_load_explicit(&cs_device_count, memory_order_relaxed); }

void cs_contexts_start(const cs_options_t *opts) {
  atomic_store_explicit(&cs_contexts_opts, opts, memory_order_release);
  cs_driver_watch_use(cs_contexts_with_device); /* the driver watch asks in a context of ours */
}

static CS_COLD cs_context_t *cs_context_create(CUcontext ctx) {
  const cs_options_t *opts = atomic_load_explicit(&cs_contexts_opts, memory_order_acquire);
  if (!opts) return NULL; /* not started: the call passes through */
  CUdevice device = 0;
  if (CS_REAL_FN(cuCtxGetDevice, PFN_cuCtxGetDevice_v2000)(&device) != CUDA_SUCCESS) return NULL;
  int count = 0;
  PFN_cuDeviceGetCount_v2000 get_count = CS_REAL_FN(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000);
  if (get_count && get_count(&count) == CUDA_SUCCESS && count > cs_contexts_device_count())
    atomic_store_explicit(&cs_device_count, count, memory_order_relaxed);
  pthread_mutex_lock(&cs_contexts_lock);
  cs_context_t *c = cs_context_find(ctx);
  if (!c && (c = cs_context_slot(device)) != NULL) {
    c->device = device;
    c->primary = cs_context_is_primary(ctx, device);
    c->backend = (cs_cuda_backend_t){.ctx = ctx, .device = device};
    if (!c->allocator) {
      cs_backend_t backend = cs_cuda_backend(&c->backend);
      cs_history_init(&c->history, device);
      cs_allocator_observer_t observer = cs_record_observer(&c->history);
      c->allocator = cs_allocator_create(&opts->alloc, &backend, &observer);
      if (c->allocator && cs_registry_add_allocator(device, c->allocator) != 0) {
        cs_allocator_destroy(c->allocator);
        c->allocator = NULL;
      }
      if (!c->allocator) cs_history_destroy(&c->history);
    }
    if (c->allocator) {
      int n = atomic_load_explicit(&cs_context_count, memory_order_relaxed);
      if (c == &cs_contexts[n]) atomic_store_explicit(&cs_context_count, n + 1, memory_order_release);
      atomic_store_explicit(&c->ctx, ctx, memory_order_release);
      cs_log_debug("context %p on device %d%s: caching allocator ready", (void *)ctx, device,
                   c->primary ? " (primary)" : "");
    } else {
      c = NULL;
    }
  }
  pthread_mutex_unlock(&cs_contexts_lock);
  if (!c) cs_log_warn("cannot serve CUDA context %p from the cache; its allocations pass through", (void *)ctx);
  return c;
}

cs_context_t *cs_contexts_current(void) {
  CUcontext ctx = NULL;
  PFN_cuCtxGetCurrent_v4000 get_current = CS_REAL_FN(cuCtxGetCurrent, PFN_cuCtxGetCurrent_v4000);
  if (!get_current || get_current(&ctx) != CUDA_SUCCESS || !ctx) return NULL;
  cs_context_t *c = cs_context_last;
  if (CS_LIKELY(c && atomic_load_explicit(&c->ctx, memory_order_acquire) == ctx)) return c;
  c = cs_context_find(ctx);
  if (!c) c = cs_context_create(ctx);
  cs_context_last = c;
  return c;
}

/* The device of the thread's current context, for NVTX annotations: no CUDA call is made unless the
 * driver is already in use, and none that could create anything. */
int cs_contexts_thread_device(void) {
  cs_any_fn get_current = atomic_load_explicit(&cs_real_slots[CS_FN_cuCtxGetCurrent], memory_order_acquire);
  CUcontext ctx = NULL;
  if (!get_current || ((PFN_cuCtxGetCurrent_v4000)get_current)(&ctx) != CUDA_SUCCESS || !ctx) return 0;
  cs_context_t *c = cs_context_last;
  if (!c || atomic_load_explicit(&c->ctx, memory_order_acquire) != ctx) c = cs_context_find(ctx);
  return c ? c->device : 0;
}

/* ---- allocations, frees and queries across contexts ---- */

int cs_contexts_malloc(cs_context_t *c, size_t bytes, uint32_t stack, uintptr_t *addr) {
  int rc = cs_allocator_malloc(c->allocator, bytes, 0, stack, addr);
  if (CS_UNLIKELY(rc == -CS_ENOMEM) && cs_contexts_release_device(c->device, c))
    rc = cs_allocator_malloc(c->allocator, bytes, 0, stack, addr);
  return rc;
}

int cs_contexts_free(uintptr_t addr) {
  int n = atomic_load_explicit(&cs_context_count, memory_order_acquire);
  cs_context_t *only = NULL;
  int live = 0;
  for (int i = 0; i < n; i++) {
    if (!atomic_load_explicit(&cs_contexts[i].ctx, memory_order_acquire)) continue;
    only = &cs_contexts[i];
    live++;
  }
  /* With one context, free directly (its allocator looks the address up before any
   * synchronization); with several, find the owner first so no other context is synchronized for
   * nothing. */
  if (live == 1) return cs_allocator_free(only->allocator, addr);
  /* The thread's last context first: a block is mostly freed in the context it was allocated in,
   * and one thread driving 8 devices would otherwise ask every context before its own, a cost
   * that grows with the devices (issue 33). */
  cs_context_t *last = cs_context_last;
  if (last && atomic_load_explicit(&last->ctx, memory_order_acquire) && cs_allocator_owns(last->allocator, addr))
    return cs_allocator_free(last->allocator, addr);
  for (int i = 0; i < n; i++) {
    cs_context_t *c = &cs_contexts[i];
    if (c != last && atomic_load_explicit(&c->ctx, memory_order_acquire) && cs_allocator_owns(c->allocator, addr))
      return cs_allocator_free(c->allocator, addr);
  }
  return -CS_EINVAL;
}

int cs_contexts_free_after_stream(uintptr_t addr, uintptr_t stream, bool per_thread) {
  if (cs_streams_is_capturing(stream, per_thread)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  PFN_cuStreamSynchronize_v2000 sync =
      per_thread ? CS_REAL_FN(cuStreamSynchronize_ptsz, PFN_cuStreamSynchronize_v2000)
                 : CS_REAL_FN(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000);
  CUresult r = sync ? sync((CUstream)stream) : CUDA_ERROR_NOT_INITIALIZED;
  if (r != CUDA_SUCCESS) return (int)r;
  return cs_contexts_free(addr);
}

bool cs_contexts_find_segment(uintptr_t addr, uintptr_t *base) {
  int n = atomic_load_explicit(&cs_context_count, memory_order_acquire);
  for (int i = 0; i < n; i++) {
    cs_context_t *c = &cs_contexts[i];
    if (c->allocator && cs_allocator_find_segment(c->allocator, addr, base)) return true;
  }
  return false;
}

bool cs_contexts_find_block(uintptr_t addr, uintptr_t *segment, uintptr_t *block) {
  int n = atomic_load_explicit(&cs_context_count, memory_order_acquire);
  for (int i = 0; i < n; i++) {
    cs_context_t *c = &cs_contexts[i];
    if (c->allocator && cs_allocator_find_block(c->allocator, addr, segment, block)) return true;
  }
  return false;
}

size_t cs_contexts_releasable_bytes(int device) {
  size_t bytes = 0;
  int n = atomic_load_explicit(&cs_context_count, memory_order_acquire);
  for (int i = 0; i < n; i++) {
    cs_context_t *c = &cs_contexts[i];
    if (atomic_load_explicit(&c->ctx, memory_order_acquire) && c->device == device)
      bytes += cs_allocator_releasable_bytes(c->allocator);
  }
  return bytes;
}

bool cs_contexts_release_device(int device, const cs_context_t *except) {
  bool released = false;
  int n = atomic_load_explicit(&cs_context_count, memory_order_acquire);
  for (int i = 0; i < n; i++) {
    cs_context_t *c = &cs_contexts[i];
    if (c == except || c->device != device || !atomic_load_explicit(&c->ctx, memory_order_acquire)) continue;
    size_t before = cs_allocator_releasable_bytes(c->allocator);
    if (before == 0) continue;
    (void)cs_allocator_empty_cache(c->allocator); /* a refusal leaves what it refused cached */
    released |= cs_allocator_releasable_bytes(c->allocator) < before;
  }
  return released;
}

/* The registry lock is held for the look-up only, and taken before deadline_ns: the driver calls
 * (which a hung device can stall) run without it. Holding it would not keep the context alive in
 * any case: teardown drops a context after the driver destroyed it. A context destroyed meanwhile
 * makes the push fail, and f is not called. */
void cs_contexts_with_device(int device, uint64_t deadline_ns, void (*f)(int device, void *arg), void *arg) {
  PFN_cuCtxPushCurrent_v4000 push = CS_REAL_FN(cuCtxPushCurrent_v2, PFN_cuCtxPushCurrent_v4000);
  PFN_cuCtxPopCurrent_v4000 pop = CS_REAL_FN(cuCtxPopCurrent_v2, PFN_cuCtxPopCurrent_v4000);
  if (!push || !pop) return;
  if (!cs_deadline_lock(&cs_contexts_lock, deadline_ns)) return;
  CUcontext ctx = NULL;
  int n = atomic_load_explicit(&cs_context_count, memory_order_relaxed);
  for (int i = 0; i < n && !ctx; i++)
    if (cs_contexts[i].device == device) ctx = atomic_load(&cs_contexts[i].ctx);
  pthread_mutex_unlock(&cs_contexts_lock);
  bool retained = false;
  if (!ctx) {
    unsigned flags = 0;
    int active = 0;
    PFN_cuDevicePrimaryCtxGetState_v7000 state = CS_REAL_FN(cuDevicePrimaryCtxGetState, PFN_cuDevicePrimaryCtxGetState_v7000);
    PFN_cuDevicePrimaryCtxRetain_v7000 retain = CS_REAL_FN(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000);
    retained = state && retain && state(device, &flags, &active) == CUDA_SUCCESS && active &&
               retain(&ctx, device) == CUDA_SUCCESS;
  }
  if (ctx && push(ctx) == CUDA_SUCCESS) {
    f(device, arg);
    CUcontext popped = NULL;
    pop(&popped);
  }
  if (retained) CS_REAL_FN(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000)(device);
}

/* ---- context teardown ---- */

static void cs_context_retire(cs_context_t *c, bool context_alive) {
  cs_allocator_drop_all(c->allocator, context_alive);
  cs_cuda_backend_forgot(&c->backend); /* what drop_all forgot without the driver */
  atomic_store_explicit(&c->ctx, NULL, memory_order_release);
}

void cs_contexts_drop(CUcontext ctx, bool context_alive) {
  pthread_mutex_lock(&cs_contexts_lock);
  cs_context_t *c = cs_context_find(ctx);
  if (c) cs_context_retire(c, context_alive);
  pthread_mutex_unlock(&cs_contexts_lock);
}

void cs_contexts_drop_primary(CUdevice device, bool context_alive) {
  pthread_mutex_lock(&cs_contexts_lock);
  int n = atomic_load_explicit(&cs_context_count, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    cs_context_t *c = &cs_contexts[i];
    if (atomic_load(&c->ctx) && c->primary && c->device == device) cs_context_retire(c, context_alive);
  }
  pthread_mutex_unlock(&cs_contexts_lock);
}

/* ---- snapshots ----
 *
 * A snapshot takes each lock before a deadline or leaves out what it guards, and never waits for
 * an allocator while holding the registry lock: a thread stuck in the driver under an allocator's
 * lock (a hung device) must stall neither the process's ending nor allocation on other devices
 * (cs_context_create and teardown take the registry lock). The registry lock is held only to list
 * the slots: a slot counted then keeps its allocator for the life of the process, and a context
 * retired afterwards is copied as its allocator's lock finds it (emptied, or not yet). */

typedef struct cs_slot_list_s {
  cs_context_t *slots[CS_MAX_CONTEXTS];
  int devices[CS_MAX_CONTEXTS];
  int count;
} cs_slot_list_t;

/* The slots that have an allocator, with their devices. Without the registry lock by deadline_ns
 * (its holder stuck), they are read without it: a context being set up is then not listed. */
static void cs_contexts_list(cs_slot_list_t *list, uint64_t deadline_ns) {
  bool listed = cs_deadline_lock(&cs_contexts_lock, deadline_ns);
  int n = atomic_load_explicit(&cs_context_count, memory_order_acquire);
  list->count = 0;
  for (int i = 0; i < n; i++) {
    if (!cs_contexts[i].allocator) continue;
    list->slots[list->count] = &cs_contexts[i];
    list->devices[list->count++] = cs_contexts[i].device;
  }
  if (listed) pthread_mutex_unlock(&cs_contexts_lock);
}

int64_t cs_contexts_allocations(unsigned wait_ms) {
  uint64_t deadline = cs_deadline_in_ms(wait_ms);
  cs_slot_list_t list;
  cs_contexts_list(&list, deadline);
  int64_t n = 0;
  for (int i = 0; i < list.count; i++) {
    cs_context_t *c = list.slots[i];
    if (!atomic_load(&c->ctx)) continue; /* as a snapshot counts them */
    if (!cs_allocator_lock_by(c->allocator, deadline)) return -1;
    cs_stats_t st;
    cs_allocator_get_stats_locked(c->allocator, &st);
    cs_allocator_unlock(c->allocator);
    n += st.allocation[CS_STAT_ALL].allocated;
  }
  return n;
}

/* Each allocator's lock in slot order (the only place that holds several), then the copies: while
 * all are held no allocator changes or emits, so the state and the histories agree. A retired
 * slot's history stays: its context's segments were freed in it, so it replays like any other. */
uint64_t cs_contexts_snapshot(cs_snap_state_t *state, bool with_history, uint64_t deadline_ns,
                              bool *passthrough_left_out) {
  cs_slot_list_t list;
  cs_contexts_list(&list, deadline_ns);
  size_t history_room = 0;
  for (int i = 0; with_history && i < list.count; i++) history_room += cs_history_room(&list.slots[i]->history);
  const cs_options_t *opts = atomic_load_explicit(&cs_contexts_opts, memory_order_acquire);
  if (with_history && opts) history_room += opts->max_entries; /* memory passed through */
  (void)cs_snap_state_reserve_history(state, history_room); /* on failure the copy reports it */
  bool locked[CS_MAX_CONTEXTS] = {false};
  uint64_t left_out = 0;
  for (int i = 0; i < list.count; i++) {
    locked[i] = cs_allocator_lock_by(list.slots[i]->allocator, deadline_ns);
    int device = list.devices[i];
    if (!locked[i] && device >= 0 && device < 64) left_out |= UINT64_C(1) << device;
  }
  for (int i = 0; i < list.count; i++) {
    cs_context_t *c = list.slots[i];
    if (!locked[i]) continue;
    if (atomic_load(&c->ctx)) cs_snap_state_add_allocator(state, list.devices[i], c->allocator);
    if (with_history) cs_history_copy(&c->history, state);
  }
  /* under the same locks: its history merges with theirs */
  *passthrough_left_out = !cs_passthrough_snapshot_by(state, with_history, deadline_ns);
  for (int i = list.count - 1; i >= 0; i--)
    if (locked[i]) cs_allocator_unlock(list.slots[i]->allocator);
  return left_out;
}

/* Calls f on every history, each under its allocator's lock, under the registry lock so that a
 * context set up meanwhile sees what f did (cudasnap_record_history; not a snapshot path). */
static void cs_contexts_each_history(void (*f)(cs_history_t *h, void *arg), void *arg) {
  pthread_mutex_lock(&cs_contexts_lock);
  int n = atomic_load_explicit(&cs_context_count, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    cs_context_t *c = &cs_contexts[i];
    if (!c->allocator) continue;
    cs_allocator_lock(c->allocator);
    f(&c->history, arg);
    cs_allocator_unlock(c->allocator);
  }
  pthread_mutex_unlock(&cs_contexts_lock);
}

typedef struct cs_history_mark_s {
  const cs_snap_state_t *state;
  bool marked[CS_SNAP_MAX_DEVICES];
} cs_history_mark_t;

/* One `snapshot` entry per device, in the first history of the device that keeps entries. */
static void cs_history_mark(cs_history_t *h, void *arg) {
  cs_history_mark_t *m = arg;
  if (h->device < 0 || h->device >= CS_SNAP_MAX_DEVICES || m->marked[h->device] || !cs_history_enabled(h)) return;
  m->marked[h->device] = true;
  cs_history_push(h, CS_ACTION_SNAPSHOT, 0, (uint64_t)m->state->stats[h->device].active_bytes[CS_STAT_ALL].current);
}

void cs_contexts_mark_snapshot(const cs_snap_state_t *state, uint64_t deadline_ns) {
  cs_history_mark_t m = {.state = state};
  cs_slot_list_t list;
  cs_contexts_list(&list, deadline_ns);
  for (int i = 0; i < list.count; i++) {
    cs_context_t *c = list.slots[i];
    if (!cs_allocator_lock_by(c->allocator, deadline_ns)) continue; /* that history goes without */
    cs_history_mark(&c->history, &m);
    cs_allocator_unlock(c->allocator);
  }
}

static void cs_history_enable(cs_history_t *h, void *arg) { cs_history_set_enabled(h, *(const bool *)arg); }

void cs_contexts_set_history(bool enabled) {
  cs_record_set_enabled(enabled);
  cs_passthrough_set_history(enabled);
  cs_contexts_each_history(cs_history_enable, &enabled);
}

/* ---- fork ---- */

void cs_contexts_prefork(void) {
  pthread_mutex_lock(&cs_contexts_lock);
  int n = atomic_load_explicit(&cs_context_count, memory_order_relaxed);
  for (int i = 0; i < n; i++)
    if (cs_contexts[i].allocator) cs_allocator_prefork(cs_contexts[i].allocator);
  cs_streams_prefork();
}

void cs_contexts_postfork(bool child) {
  cs_streams_postfork(child);
  int n = atomic_load_explicit(&cs_context_count, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    cs_context_t *c = &cs_contexts[i];
    if (!c->allocator) continue;
    cs_allocator_postfork(c->allocator, child);
    /* The parent's contexts do not exist in the child: forget their blocks without a driver
     * call, keeping the emptied allocators for the child's own contexts, and their history. */
    if (child) {
      cs_context_retire(c, false);
      cs_history_clear(&c->history);
    }
  }
  if (child) pthread_mutex_init(&cs_contexts_lock, NULL);
  else pthread_mutex_unlock(&cs_contexts_lock);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "device/streams.h"

#include <pthread.h>
#include <stdlib.h>

#include "real/cuda_api.h"
#include "real/real.h"

atomic_int cs_streams_capturing;

/* ctx 0: a stream of a green context, whose work may use any context's blocks on the device (its
 * context is not the one cudasnap allocates in), so it belongs to every context's fence set. */
typedef struct cs_stream_entry_s {
  uintptr_t stream;
  uintptr_t ctx;
  uintptr_t event;  /* retired streams: recorded as the stream was destroyed */
  uintptr_t thread; /* captures: the thread that began it */
  int mode;         /* captures: its CUstreamCaptureMode */
} cs_stream_entry_t;

/* A small set each: programs have tens of streams, not thousands. Past CS_STREAMS_TRACKED live
 * non-blocking streams (or when the set cannot grow) a stream goes untracked, and from then on
 * every fence is a synchronization: an untracked stream's work would be invisible to events. */
typedef struct cs_stream_set_s {
  cs_stream_entry_t *items;
  size_t count;
  size_t capacity;
} cs_stream_set_t;

enum { CS_STREAMS_TRACKED = 1024 };

static pthread_mutex_t cs_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_stream_set_t cs_nonblocking;
static cs_stream_set_t cs_retired; /* destroyed non-blocking streams whose last event is pending */
static cs_stream_set_t cs_capturing;
static bool cs_untracked;          /* a non-blocking stream was not tracked: fences synchronize */
/* Live green-context streams plus retired streams: while 0, a synchronization has nothing more to
 * wait for and takes no lock (sync mode synchronizes at every free). */
static atomic_size_t cs_streams_beyond_ctx;

static bool cs_set_add(cs_stream_set_t *set, cs_stream_entry_t entry) {
  if (set->count == set->capacity) {
    size_t capacity = set->capacity ? 2 * set->capacity : 16;
    cs_stream_entry_t *grown = realloc(set->items, capacity * sizeof *grown);
    if (!grown) return false;
    set->items = grown;
    set->capacity = capacity;
  }
  set->items[set->count++] = entry;
  return true;
}

static bool cs_set_remove(cs_stream_set_t *set, uintptr_t stream, cs_stream_entry_t *removed) {
  for (size_t i = 0; i < set->count; i++) {
    if (set->items[i].stream != stream) continue;
    if (removed) *removed = set->items[i];
    set->items[i] = set->items[--set->count];
    return true;
  }
  return false;
}

static void cs_track_nonblocking(uintptr_t stream, uintptr_t ctx) {
  pthread_mutex_lock(&cs_streams_lock);
  if (cs_nonblocking.count >= CS_STREAMS_TRACKED ||
      !cs_set_add(&cs_nonblocking, (cs_stream_entry_t){.stream = stream, .ctx = ctx}))
    cs_untracked = true;
  else if (ctx == 0)
    atomic_fetch_add(&cs_streams_beyond_ctx, 1);
  pthread_mutex_unlock(&cs_streams_lock);
}

void cs_streams_created(uintptr_t stream, uintptr_t ctx, unsigned flags) {
  /* Blocking streams are ordered by the legacy stream's event; only non-blocking ones need their
   * own (interposition.md section 7.2). */
  if (!(flags & CU_STREAM_NON_BLOCKING)) return;
  cs_track_nonblocking(stream, ctx);
}

void cs_streams_green_created(uintptr_t stream) { cs_track_nonblocking(stream, 0); }

/* An event on `stream` that completes when the work issued to it so far has: 0 when none could
 * be recorded (a capturing stream, no driver function, a failure). The event is made in the
 * stream's own context when the driver says which that is. */
static uintptr_t cs_event_on(uintptr_t stream) {
  PFN_cuEventCreate_v2000 create = CS_REAL_FN(cuEventCreate, PFN_cuEventCreate_v2000);
  PFN_cuEventRecord_v2000 record = CS_REAL_FN(cuEventRecord, PFN_cuEventRecord_v2000);
  PFN_cuEventDestroy_v4000 destroy = CS_REAL_FN(cuEventDestroy_v2, PFN_cuEventDestroy_v4000);
  PFN_cuStreamGetCtx_v9020 get_ctx = CS_REAL_FN(cuStreamGetCtx, PFN_cuStreamGetCtx_v9020);
  PFN_cuCtxPushCurrent_v4000 push = CS_REAL_FN(cuCtxPushCurrent_v2, PFN_cuCtxPushCurrent_v4000);
  PFN_cuCtxPopCurrent_v4000 pop = CS_REAL_FN(cuCtxPopCurrent_v2, PFN_cuCtxPopCurrent_v4000);
  if (!create || !record || !destroy) return 0;
  CUcontext ctx = NULL;
  bool pushed = get_ctx && push && pop && get_ctx((CUstream)stream, &ctx) == CUDA_SUCCESS && ctx &&
                push(ctx) == CUDA_SUCCESS;
  CUevent event = NULL;
  if (create(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) event = NULL;
  if (event && record(event, (CUstream)stream) != CUDA_SUCCESS) {
    destroy(event);
    event = NULL;
  }
  if (pushed) {
    CUcontext popped = NULL;
    pop(&popped);
  }
  return (uintptr_t)event;
}

/* Does the stream's work concern ctx's blocks: a stream of ctx, or of a green context (ctx 0),
 * whose work may use any context's blocks of the device? */
static bool cs_entry_covers(const cs_stream_entry_t *e, uintptr_t ctx) { return e->ctx == ctx || e->ctx == 0; }

/* Forgets retired stream i: its event is destroyed. pre: cs_streams_lock held. */
static void cs_retired_forget_locked(size_t i) {
  PFN_cuEventDestroy_v4000 destroy = CS_REAL_FN(cuEventDestroy_v2, PFN_cuEventDestroy_v4000);
  if (destroy) destroy((CUevent)cs_retired.items[i].event);
  cs_retired.items[i] = cs_retired.items[--cs_retired.count];
  atomic_fetch_sub(&cs_streams_beyond_ctx, 1);
}

static bool cs_stream_is_capturing_locked(uintptr_t stream) {
  for (size_t i = 0; i < cs_capturing.count; i++)
    if (cs_capturing.items[i].stream == stream) return true;
  return false;
}

/* cuStreamDestroy returns at once while the stream's work goes on: a block freed afterwards must
 * still wait for that work, so an event recorded now stands for the stream in every later fence
 * until it completes. Where none can be recorded the stream is synchronized first (correct, and
 * rare: a failing driver). A capturing stream's work is not run before its graph is launched. */
void cs_streams_destroyed(uintptr_t stream) {
  cs_stream_entry_t entry;
  pthread_mutex_lock(&cs_streams_lock);
  bool tracked = cs_set_remove(&cs_nonblocking, stream, &entry);
  if (tracked && entry.ctx == 0) atomic_fetch_sub(&cs_streams_beyond_ctx, 1);
  bool capturing = cs_stream_is_capturing_locked(stream);
  pthread_mutex_unlock(&cs_streams_lock);
  if (!tracked || capturing) return;
  entry.event = cs_event_on(stream);
  bool kept = false;
  if (entry.event) {
    pthread_mutex_lock(&cs_streams_lock);
    kept = cs_set_add(&cs_retired, entry);
    if (kept) atomic_fetch_add(&cs_streams_beyond_ctx, 1);
    pthread_mutex_unlock(&cs_streams_lock);
    if (!kept) CS_REAL_FN(cuEventDestroy_v2, PFN_cuEventDestroy_v4000)((CUevent)entry.event);
  }
  if (!kept) {
    PFN_cuStreamSynchronize_v2000 sync = CS_REAL_FN(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000);
    if (sync) (void)sync((CUstream)stream);
  }
}

static uintptr_t cs_thread_id(void) { return (uintptr_t)pthread_self(); }

void cs_streams_capture_began(uintptr_t stream, int mode) {
  pthread_mutex_lock(&cs_streams_lock);
  /* no room: counted all the same through the flag below, and judged as a global capture */
  (void)cs_set_add(&cs_capturing, (cs_stream_entry_t){.stream = stream, .thread = cs_thread_id(), .mode = mode});
  atomic_store_explicit(&cs_streams_capturing, (int)cs_capturing.count, memory_order_release);
  pthread_mutex_unlock(&cs_streams_lock);
}

void cs_streams_capture_ended(uintptr_t stream) {
  pthread_mutex_lock(&cs_streams_lock);
  cs_set_remove(&cs_capturing, stream, NULL);
  atomic_store_explicit(&cs_streams_capturing, (int)cs_capturing.count, memory_order_release);
  pthread_mutex_unlock(&cs_streams_lock);
}

/* The driver's rule for "potentially unsafe" calls such as cuMemAlloc and cuMemFree (the
 * documentation of cuStreamBeginCapture_v2 and cuThreadExchangeStreamCaptureMode): a thread
 * whose own mode is relaxed may make them; otherwise not while it has a capture of its own
 * begun in a mode other than relaxed, nor, if its mode is global, while any thread has a global
 * capture underway. */
bool cs_streams_is_capturing(uintptr_t stream, bool per_thread) {
  if (!cs_streams_capture_underway()) return false;
  PFN_cuStreamIsCapturing_v10000 is_capturing =
      per_thread ? CS_REAL_FN(cuStreamIsCapturing_ptsz, PFN_cuStreamIsCapturing_v10000)
                 : CS_REAL_FN(cuStreamIsCapturing, PFN_cuStreamIsCapturing_v10000);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return is_capturing && is_capturing((CUstream)stream, &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool cs_streams_capture_forbids_this_thread(void) {
  if (!cs_streams_capture_underway()) return false;
  PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange =
      CS_REAL_FN(cuThreadExchangeStreamCaptureMode, PFN_cuThreadExchangeStreamCaptureMode_v10010);
  CUstreamCaptureMode mine = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (!exchange || exchange(&mine) != CUDA_SUCCESS) return false;
  CUstreamCaptureMode back = mine;
  (void)exchange(&back); /* the thread's own mode, restored */
  if (mine == CU_STREAM_CAPTURE_MODE_RELAXED) return false;
  uintptr_t self = cs_thread_id();
  bool forbidden = false;
  pthread_mutex_lock(&cs_streams_lock);
  for (size_t i = 0; i < cs_capturing.count && !forbidden; i++) {
    const cs_stream_entry_t *c = &cs_capturing.items[i];
    if (c->mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
    if (c->thread == self) forbidden = true;
    else if (c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL && mine == CU_STREAM_CAPTURE_MODE_GLOBAL) forbidden = true;
  }
  pthread_mutex_unlock(&cs_streams_lock);
  return forbidden;
}

/* Drops the retired streams of ctx (or green ones) whose events have completed; returns whether
 * one is still pending. pre: cs_streams_lock held, no capture underway. */
static bool cs_retired_pending_locked(uintptr_t ctx) {
  PFN_cuEventQuery_v2000 query = CS_REAL_FN(cuEventQuery, PFN_cuEventQuery_v2000);
  bool pending = false;
  for (size_t i = 0; i < cs_retired.count;) {
    const cs_stream_entry_t *r = &cs_retired.items[i];
    /* a failed query counts as complete: the context is broken, and the program hears of it */
    if (!cs_entry_covers(r, ctx) || (query && query((CUevent)r->event) == CUDA_ERROR_NOT_READY)) {
      pending |= cs_entry_covers(r, ctx);
      i++;
      continue;
    }
    cs_retired_forget_locked(i);
  }
  return pending;
}

size_t cs_streams_fence_set(uintptr_t ctx, uintptr_t *out, size_t cap) {
  size_t n = 0;
  pthread_mutex_lock(&cs_streams_lock);
  /* A destroyed stream's pending work, or an untracked stream's, can only be waited for by a
   * synchronization: more streams than any fence holds says so. */
  if (cs_untracked || cs_retired_pending_locked(ctx)) {
    pthread_mutex_unlock(&cs_streams_lock);
    return SIZE_MAX;
  }
  if (cap > 0) out[0] = (uintptr_t)CU_STREAM_LEGACY;
  n++;
  for (size_t i = 0; i < cs_nonblocking.count; i++) {
    if (!cs_entry_covers(&cs_nonblocking.items[i], ctx)) continue;
    if (n < cap) out[n] = cs_nonblocking.items[i].stream;
    n++;
  }
  pthread_mutex_unlock(&cs_streams_lock);
  return n;
}

/* After cuCtxSynchronize of ctx: the green contexts' streams, live and retired, which that does
 * not wait for, are waited for too (a retired one's event under the lock: it is complete or
 * nearly, and nothing else waits on this lock long); then the retired streams are done with. Returns the first
 * failure of those waits (0 when none). */
int cs_streams_synchronized(uintptr_t ctx) {
  if (atomic_load_explicit(&cs_streams_beyond_ctx, memory_order_acquire) == 0) return 0;
  PFN_cuStreamSynchronize_v2000 sync = CS_REAL_FN(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000);
  uintptr_t green[64];
  size_t greens = 0;
  pthread_mutex_lock(&cs_streams_lock);
  for (size_t i = 0; i < cs_nonblocking.count && greens < 64; i++)
    if (cs_nonblocking.items[i].ctx == 0) green[greens++] = cs_nonblocking.items[i].stream;
  pthread_mutex_unlock(&cs_streams_lock);
  int first = 0;
  for (size_t i = 0; i < greens; i++) {
    CUresult r = sync ? sync((CUstream)green[i]) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_HANDLE && !first) first = (int)r; /* destroyed meanwhile */
  }
  PFN_cuEventSynchronize_v2000 wait = CS_REAL_FN(cuEventSynchronize, PFN_cuEventSynchronize_v2000);
  pthread_mutex_lock(&cs_streams_lock);
  for (size_t i = 0; i < cs_retired.count;) {
    const cs_stream_entry_t *r = &cs_retired.items[i];
    if (!cs_entry_covers(r, ctx)) {
      i++;
      continue;
    }
    if (r->ctx == 0 && wait) (void)wait((CUevent)r->event); /* a destroyed green stream's last work */
    cs_retired_forget_locked(i);
  }
  pthread_mutex_unlock(&cs_streams_lock);
  return first;
}

void cs_streams_prefork(void) { pthread_mutex_lock(&cs_streams_lock); }

void cs_streams_postfork(bool child) {
  if (!child) {
    pthread_mutex_unlock(&cs_streams_lock);
    return;
  }
  /* The parent's streams, events and captures do not exist in the child. */
  pthread_mutex_init(&cs_streams_lock, NULL);
  cs_nonblocking.count = 0;
  cs_retired.count = 0;
  cs_capturing.count = 0;
  cs_untracked = false;
  atomic_store(&cs_streams_beyond_ctx, 0);
  atomic_store(&cs_streams_capturing, 0);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* A fake CUDA driver, built as libcuda.so.1, for running cudasnap's interception tests without a
 * GPU (interposition.md, section 10.1 item 2).
 *
 * It exports the driver entry points the runtime and common loaders use, under their exact
 * exported names and with the signatures of the CUDA 13 cuda.h, and gives them real semantics
 * where cudasnap depends on them:
 *   - device memory is host memory from mmap, so programs can copy in and out; a free munmaps it,
 *     so a use after a real free faults. Each device has a capacity (FAKE_CUDA_CAPACITY);
 *   - primary and created contexts, a per-thread context stack; a primary context reset, a
 *     release to zero or a cuCtxDestroy frees everything the context owns;
 *   - streams, events whose completion the test controls, stream capture, and a counter of calls
 *     that are illegal while a capture is underway (tests assert it stays 0 under cudasnap);
 *   - cuGetProcAddress/_v2 with the real version, flag and status behaviour. The chosen export is
 *     resolved with dlsym on the driver's own handle, which reproduces the real-world case where
 *     the driver's internal dlsym re-enters a preloaded dlsym override (interposition.md 4.2,
 *     pitfall 2). Every other name the CUDA 13 runtime asks for is answered with a stub that
 *     returns CUDA_ERROR_NOT_SUPPORTED;
 *   - VMM, stream-ordered pools and arrays with their used bytes (fake_cuda_mem.c);
 *   - a call log (FAKE_CUDA_LOG) and a test-only control API (fake_cuda_control.h).
 *
 * Deliberate simplifications: no kernels, so a stream's only work is its recorded events;
 * cuStreamEndCapture returns a NULL graph; cuGetExportTable fails, so the real libcudart gives
 * up with error 801 on this driver (expected: the tests pair it with tests/fakes/fake_cudart.c).
 *
 * One mutex guards all state; the log is written outside it, and so is every dlsym call, because a
 * dlsym override may call back into this driver. */

/* Declares every exported variant (legacy v1, _v2, _ptsz, _ptds) with its real signature, as the
 * driver's own build does. Without it, cuda.h #defines cuMemAlloc to cuMemAlloc_v2 and so on, and
 * the legacy names could not be defined (interposition.md 3.1). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fakes/fake_cuda_control.h"
#include "tests/fakes/fake_cuda_internal.h"

/* The project builds with -fvisibility=hidden; every driver and control entry point says so. */
/* FC_EXPORT: fake_cuda_internal.h */

enum {
  FC_DRIVER_VERSION = 13000,
  FC_MAX_DEVICES = 16,
  FC_CTX_STACK = 32,    /* contexts a thread may push */
  FC_LOG_LINE = 512,
};

#define FC_DEFAULT_CAPACITY ((size_t)8 << 30)
#define FC_4GIB ((uintptr_t)1 << 32)

/* ---- objects behind the opaque handles ---- */

struct CUctx_st {
  int device;
  bool primary;
  bool active;       /* primary: retained and not released to zero; created: always */
  unsigned retains;  /* primary only */
  unsigned flags;
};

typedef enum fc_capture_e {
  FC_CAPTURE_NONE,
  FC_CAPTURE_ACTIVE,
  FC_CAPTURE_INVALIDATED, /* an illegal call happened during the capture */
} fc_capture_t;

struct CUstream_st {
  struct CUctx_st *ctx;
  unsigned flags;           /* CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING */
  int priority;
  fc_capture_t capture;
  CUstreamCaptureMode mode; /* of the capture underway */
  pthread_t capturer;       /* the thread that began it */
  struct CUgraph_st *captured; /* the graph the capture builds (fake_cuda_graph.c) */
};

typedef enum fc_event_state_e {
  FC_EVENT_UNRECORDED, /* queries succeed, as on a real driver */
  FC_EVENT_PENDING,
  FC_EVENT_COMPLETE,
} fc_event_state_t;

struct CUevent_st {
  struct CUctx_st *ctx;
  unsigned flags;
  fc_event_state_t state;
  uintptr_t stream; /* where it was last recorded: a stream key (fc_stream_key) */
};

typedef enum fc_mem_kind_e {
  FC_MEM_DEVICE,    /* cuMemAlloc_v2 */
  FC_MEM_DEVICE_V1, /* cuMemAlloc, cuMemAllocPitch (v1): below 4 GiB */
  FC_MEM_PITCH,     /* cuMemAllocPitch_v2 */
  FC_MEM_MANAGED,   /* cuMemAllocManaged */
  FC_MEM_ASYNC,     /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
  FC_MEM_HOST,      /* cuMemHostAlloc, cuMemAllocHost: pinned host memory, not device capacity */
  FC_MEM_IPC,       /* cuIpcOpenMemHandle: the exporter's memory, not ours */
} fc_mem_kind_t;

typedef struct fc_alloc_s {
  uintptr_t base;
  size_t size;     /* bytes requested */
  size_t map_size; /* bytes mapped: size rounded up to pages */
  struct CUctx_st *ctx;
  struct CUmemPoolHandle_st *pool; /* stream-ordered: the pool it came from */
  fc_mem_kind_t kind;
  uint64_t buffer_id;
} fc_alloc_t;

/* A sorted array of handle values, so a stale or foreign handle is rejected instead of being
 * dereferenced. */
typedef struct fc_set_s {
  uintptr_t *v;
  size_t n, cap;
} fc_set_t;

/* ---- global state: all of it under g.lock ---- */

static struct {
  pthread_mutex_t lock;
  bool initialized; /* cuInit succeeded */
  int device_count;
  size_t capacity;  /* bytes per device */
  size_t in_use[FC_MAX_DEVICES];
  size_t host_capacity; /* bytes of host memory the driver can pin, all pinned kinds together */
  size_t host_in_use;
  struct CUctx_st primary[FC_MAX_DEVICES];
  fc_alloc_t *allocs; /* sorted by base */
  size_t alloc_count, alloc_cap;
  fc_set_t ctxs; /* created (non-primary) contexts */
  fc_set_t streams;
  fc_set_t events;
  unsigned active_captures; /* streams in FC_CAPTURE_ACTIVE or _INVALIDATED */
  bool manual_events;
  CUresult sticky;
  uint64_t next_buffer_id;
  fake_cuda_counters_t counters;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .device_count = 2, .capacity = FC_DEFAULT_CAPACITY,
       .host_capacity = SIZE_MAX};

/* Written once by the constructor, before any call can arrive. */
static int fc_log_fd = -1;

/* The context stack of each thread; [depth - 1] is current. */
static _Thread_local struct CUctx_st *tls_ctx_stack[FC_CTX_STACK];
static _Thread_local unsigned tls_ctx_depth;
static _Thread_local CUstreamCaptureMode tls_capture_mode; /* 0: CU_STREAM_CAPTURE_MODE_GLOBAL */

void fc_lock(void) { pthread_mutex_lock(&g.lock); }
void fc_unlock(void) { pthread_mutex_unlock(&g.lock); }

/* ---- call log: one write(2) per line on an O_APPEND descriptor, so lines from several threads
 * and processes never interleave ---- */

void fc_log(const char *fmt, ...) {
  if (fc_log_fd < 0) return;
  char line[FC_LOG_LINE];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof line - 2 ? (size_t)n : sizeof line - 2;
  line[len++] = '\n';
  ssize_t w = write(fc_log_fd, line, len);
  (void)w; /* a lost log line must not change what the driver returns */
}

/* ---- environment, fork ---- */

static void fc_warn_env(const char *name, const char *value, const char *accepted) {
  char line[FC_LOG_LINE];
  int n = snprintf(line, sizeof line, "fake_cuda: ignoring %s=%s (accepted: %s)\n", name, value,
                   accepted);
  if (n > 0) {
    ssize_t w = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    (void)w;
  }
}

static bool fc_parse_u64(const char *s, unsigned long long *out) {
  if (!s || !*s) return false;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0' || s[0] == '-') return false;
  *out = v;
  return true;
}

static void fc_atfork_prepare(void) { fc_lock(); }
static void fc_atfork_release(void) { fc_unlock(); }

__attribute__((constructor)) static void fc_constructor(void) {
  unsigned long long v;
  const char *s = getenv("FAKE_CUDA_DEVICES");
  if (s) {
    if (fc_parse_u64(s, &v) && v <= FC_MAX_DEVICES) g.device_count = (int)v;
    else fc_warn_env("FAKE_CUDA_DEVICES", s, "0-16");
  }
  s = getenv("FAKE_CUDA_CAPACITY");
  if (s) {
    if (fc_parse_u64(s, &v) && (unsigned long long)(size_t)v == v) g.capacity = (size_t)v;
    else fc_warn_env("FAKE_CUDA_CAPACITY", s, "a byte count");
  }
  s = getenv("FAKE_CUDA_HOST_CAPACITY");
  if (s) {
    if (fc_parse_u64(s, &v) && (unsigned long long)(size_t)v == v) g.host_capacity = (size_t)v;
    else fc_warn_env("FAKE_CUDA_HOST_CAPACITY", s, "a byte count");
  }
  s = getenv("FAKE_CUDA_MANUAL_EVENTS");
  if (s) g.manual_events = strcmp(s, "0") != 0 && *s != '\0';
  s = getenv("FAKE_CUDA_LOG");
  if (s && *s) fc_log_fd = open(s, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  for (int d = 0; d < FC_MAX_DEVICES; d++)
    g.primary[d] = (struct CUctx_st){.device = d, .primary = true};
  /* A fork while another thread holds the lock would leave the child's copy locked forever. */
  pthread_atfork(fc_atfork_prepare, fc_atfork_release, fc_atfork_release);
}

/* ---- handle sets ---- */

static size_t fc_set_lower(const fc_set_t *s, uintptr_t k) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->v[mid] < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static bool fc_set_has(const fc_set_t *s, uintptr_t k) {
  size_t i = fc_set_lower(s, k);
  return i < s->n && s->v[i] == k;
}

static bool fc_set_add(fc_set_t *s, uintptr_t k) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    uintptr_t *v = realloc(s->v, cap * sizeof *v);
    if (!v) return false;
    s->v = v;
    s->cap = cap;
  }
  size_t i = fc_set_lower(s, k);
  memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
  s->v[i] = k;
  s->n++;
  return true;
}

static void fc_set_del_at(fc_set_t *s, size_t i) {
  memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
  s->n--;
}

static void fc_set_del(fc_set_t *s, uintptr_t k) {
  size_t i = fc_set_lower(s, k);
  if (i < s->n && s->v[i] == k) fc_set_del_at(s, i);
}

/* ---- contexts ---- */

bool fc_dev_ok(CUdevice d) { return d >= 0 && d < g.device_count; }

int fc_ctx_device(const struct CUctx_st *c) { return c->device; }

CUresult fc_charge_locked(int device, size_t bytes) {
  if (!fc_dev_ok(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (g.in_use[device] > g.capacity || bytes > g.capacity - g.in_use[device]) return CUDA_ERROR_OUT_OF_MEMORY;
  g.in_use[device] += bytes;
  g.counters.bytes_in_use += bytes;
  return CUDA_SUCCESS;
}

void fc_uncharge_locked(int device, size_t bytes) {
  g.in_use[device] -= bytes;
  g.counters.bytes_in_use -= bytes;
}

size_t fc_used_locked(int device) { return g.in_use[device]; }

CUresult fc_charge_host_locked(size_t bytes) {
  if (g.host_in_use > g.host_capacity || bytes > g.host_capacity - g.host_in_use) return CUDA_ERROR_OUT_OF_MEMORY;
  g.host_in_use += bytes;
  return CUDA_SUCCESS;
}

void fc_uncharge_host_locked(size_t bytes) { g.host_in_use -= bytes; }

static bool fc_ctx_live(const struct CUctx_st *c) {
  if (!c) return false;
  uintptr_t p = (uintptr_t)c;
  if (p >= (uintptr_t)&g.primary[0] && p < (uintptr_t)&g.primary[FC_MAX_DEVICES]) return c->active;
  return fc_set_has(&g.ctxs, (uintptr_t)c);
}

static struct CUctx_st *fc_current(void) {
  return tls_ctx_depth ? tls_ctx_stack[tls_ctx_depth - 1] : NULL;
}

/* The calling thread's current context, or why there is none usable. */
CUresult fc_require_ctx(struct CUctx_st **out) {
  if (!g.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  struct CUctx_st *c = fc_current();
  if (!fc_ctx_live(c)) return CUDA_ERROR_INVALID_CONTEXT;
  *out = c;
  return CUDA_SUCCESS;
}

/* ---- allocations ---- */

static size_t fc_alloc_lower(uintptr_t p) {
  size_t lo = 0, hi = g.alloc_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g.allocs[mid].base < p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Index of the allocation based exactly at p, or SIZE_MAX. */
static size_t fc_alloc_at(uintptr_t p) {
  size_t i = fc_alloc_lower(p);
  return i < g.alloc_count && g.allocs[i].base == p ? i : SIZE_MAX;
}

/* Index of the allocation whose [base, base + size) holds p, or SIZE_MAX. */
static size_t fc_alloc_containing(uintptr_t p) {
  size_t i = fc_alloc_lower(p);
  if (i < g.alloc_count && g.allocs[i].base == p) return i;
  if (i == 0) return SIZE_MAX;
  const fc_alloc_t *a = &g.allocs[i - 1];
  return p - a->base < a->size ? i - 1 : SIZE_MAX;
}

/* [p, p + n) lies inside one live allocation, a live graph allocation, or mapped VMM memory with
 * the access the copy needs (`write`: it is written): the check a real driver makes with its VA
 * map. */
static bool fc_range_ok(uintptr_t p, size_t n, bool write) {
  size_t i = fc_alloc_containing(p);
  if (i != SIZE_MAX) {
    const fc_alloc_t *a = &g.allocs[i];
    return n <= a->size - (p - a->base);
  }
  return fc_graph_range_ok_locked(p, n) || fc_vmm_range_ok_locked(p, n, write);
}

static bool fc_counts_as_device(fc_mem_kind_t k) { return k != FC_MEM_HOST && k != FC_MEM_IPC; }
/* Stream-ordered allocations are charged through their pool's reserved bytes instead. */
static bool fc_charged(fc_mem_kind_t k) { return fc_counts_as_device(k) && k != FC_MEM_ASYNC; }

static CUresult fc_alloc_locked(struct CUctx_st *ctx, size_t size, fc_mem_kind_t kind, bool low32,
                                uintptr_t *out) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = ctx->device;
  bool device_mem = fc_charged(kind);
  if (device_mem && (g.in_use[dev] > g.capacity || size > g.capacity - g.in_use[dev]))
    return CUDA_ERROR_OUT_OF_MEMORY;
  /* pinned host memory: the driver cannot pin more than the host lets it */
  if (kind == FC_MEM_HOST && (g.host_in_use > g.host_capacity || size > g.host_capacity - g.host_in_use))
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (size > SIZE_MAX - page) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t map_size = (size + page - 1) / page * page;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (low32) {
#ifdef MAP_32BIT
    flags |= MAP_32BIT;
#else
    return CUDA_ERROR_OUT_OF_MEMORY; /* no way to ask for an address below 4 GiB */
#endif
  }
  void *m = mmap(NULL, map_size, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t base = (uintptr_t)m;
  if (low32 && (base >= FC_4GIB || map_size > FC_4GIB - base)) {
    munmap(m, map_size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (g.alloc_count == g.alloc_cap) {
    size_t cap = g.alloc_cap ? g.alloc_cap * 2 : 256;
    fc_alloc_t *v = realloc(g.allocs, cap * sizeof *v);
    if (!v) {
      munmap(m, map_size);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g.allocs = v;
    g.alloc_cap = cap;
  }
  size_t i = fc_alloc_lower(base);
  memmove(&g.allocs[i + 1], &g.allocs[i], (g.alloc_count - i) * sizeof *g.allocs);
  g.allocs[i] = (fc_alloc_t){.base = base, .size = size, .map_size = map_size, .ctx = ctx,
                             .kind = kind, .buffer_id = ++g.next_buffer_id};
  g.alloc_count++;
  if (device_mem) {
    g.in_use[dev] += size;
    g.counters.bytes_in_use += size;
  }
  if (kind == FC_MEM_HOST) g.host_in_use += size;
  *out = base;
  return CUDA_SUCCESS;
}

static void fc_free_at_locked(size_t i) {
  fc_alloc_t a = g.allocs[i];
  memmove(&g.allocs[i], &g.allocs[i + 1], (g.alloc_count - i - 1) * sizeof *g.allocs);
  g.alloc_count--;
  if (fc_charged(a.kind)) {
    g.in_use[a.ctx->device] -= a.size;
    g.counters.bytes_in_use -= a.size;
  }
  if (a.kind == FC_MEM_ASYNC) fc_pool_give_back_locked(a.pool, a.size);
  if (a.kind == FC_MEM_HOST) g.host_in_use -= a.size;
  munmap((void *)a.base, a.map_size);
}

/* ---- capture ---- */

/* A call that is illegal during capture: counted, refused, and, as on a real driver, it
 * invalidates the captures underway (cuStreamEndCapture then fails). */
static CUresult fc_violation_locked(void) {
  g.counters.capture_violations++;
  for (size_t i = 0; i < g.streams.n; i++) {
    struct CUstream_st *s = (struct CUstream_st *)g.streams.v[i];
    if (s->capture == FC_CAPTURE_ACTIVE) s->capture = FC_CAPTURE_INVALIDATED;
  }
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* ---- streams and events ---- */

/* NULL means the legacy stream for the plain exports and the per-thread stream for _ptsz/_ptds
 * ones; CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are accepted everywhere. */
static uintptr_t fc_stream_key(CUstream s, bool per_thread) {
  if (!s) return per_thread ? (uintptr_t)CU_STREAM_PER_THREAD : (uintptr_t)CU_STREAM_LEGACY;
  return (uintptr_t)s;
}

static bool fc_stream_special(uintptr_t key) {
  return key == (uintptr_t)CU_STREAM_LEGACY || key == (uintptr_t)CU_STREAM_PER_THREAD;
}

static bool fc_stream_ok(uintptr_t key) {
  return fc_stream_special(key) || fc_set_has(&g.streams, key);
}

bool fc_stream_valid_locked(CUstream stream) { return fc_stream_ok(fc_stream_key(stream, false)); }

/* The driver's rule for potentially unsafe calls (cuMemAlloc, cuMemFree): allowed to a thread in
 * relaxed mode; otherwise refused while the thread has a capture of its own not begun relaxed,
 * or, for a thread in global mode, while any thread has a global capture underway. */
static bool fc_capture_forbids_locked(void) {
  if (!g.active_captures || tls_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return false;
  for (size_t i = 0; i < g.streams.n; i++) {
    const struct CUstream_st *s = (const struct CUstream_st *)g.streams.v[i];
    if (s->capture == FC_CAPTURE_NONE || s->mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
    if (pthread_equal(s->capturer, pthread_self())) return true;
    if (s->mode == CU_STREAM_CAPTURE_MODE_GLOBAL && tls_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL) return true;
  }
  return false;
}

static bool fc_stream_capturing(uintptr_t key) {
  return !fc_stream_special(key) && fc_set_has(&g.streams, key) &&
         ((struct CUstream_st *)key)->capture != FC_CAPTURE_NONE;
}

/* Completes the pending events a synchronization of `key` in `ctx` covers. A special stream
 * waits for the legacy and per-thread streams and every blocking stream, as the legacy stream's
 * implicit synchronization does; a created stream only for itself. */
static void fc_complete_stream_locked(struct CUctx_st *ctx, uintptr_t key) {
  for (size_t i = 0; i < g.events.n; i++) {
    struct CUevent_st *e = (struct CUevent_st *)g.events.v[i];
    if (e->state != FC_EVENT_PENDING || e->ctx != ctx) continue;
    bool covered = e->stream == key;
    if (!covered && fc_stream_special(key)) {
      covered = fc_stream_special(e->stream) ||
                (fc_set_has(&g.streams, e->stream) &&
                 !(((struct CUstream_st *)e->stream)->flags & CU_STREAM_NON_BLOCKING));
    }
    if (covered) e->state = FC_EVENT_COMPLETE;
  }
}

static void fc_complete_ctx_locked(struct CUctx_st *ctx) {
  for (size_t i = 0; i < g.events.n; i++) {
    struct CUevent_st *e = (struct CUevent_st *)g.events.v[i];
    if (e->ctx == ctx && e->state == FC_EVENT_PENDING) e->state = FC_EVENT_COMPLETE;
  }
}

/* Frees everything a context owns: what a primary reset, a release to zero and cuCtxDestroy do. */
static void fc_destroy_ctx_resources_locked(struct CUctx_st *ctx) {
  for (size_t i = g.alloc_count; i-- > 0;) {
    if (g.allocs[i].ctx == ctx) fc_free_at_locked(i);
  }
  fc_pools_trim_device_locked(ctx->device); /* what the pools cached for it goes back */
  for (size_t i = g.streams.n; i-- > 0;) {
    struct CUstream_st *s = (struct CUstream_st *)g.streams.v[i];
    if (s->ctx != ctx) continue;
    if (s->capture != FC_CAPTURE_NONE) g.active_captures--;
    fc_set_del_at(&g.streams, i);
    free(s);
  }
  for (size_t i = g.events.n; i-- > 0;) {
    struct CUevent_st *e = (struct CUevent_st *)g.events.v[i];
    if (e->ctx != ctx) continue;
    fc_set_del_at(&g.events, i);
    free(e);
  }
}

/* ======================================================================================== */
/* ---- initialization, devices ---- */

FC_EXPORT CUresult cuInit(unsigned int Flags) {
  CUresult rc = CUDA_SUCCESS;
  fc_lock();
  if (Flags != 0) rc = CUDA_ERROR_INVALID_VALUE;
  else if (g.device_count == 0) rc = CUDA_ERROR_NO_DEVICE;
  else __atomic_store_n(&g.initialized, true, __ATOMIC_RELEASE); /* cuCtxGetCurrent reads it unlocked */
  fc_unlock();
  fc_log("cuInit flags=%u status=%d", Flags, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = FC_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

/* Common checks of the device queries; the caller holds the lock. */
CUresult fc_device_check(CUdevice dev) {
  if (!g.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return fc_dev_ok(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FC_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  fc_lock();
  CUresult rc = fc_device_check(ordinal);
  if (rc == CUDA_SUCCESS && !device) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *device = ordinal;
  fc_unlock();
  return rc;
}

FC_EXPORT CUresult cuDeviceGetCount(int *count) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !count) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *count = g.device_count;
  fc_unlock();
  return rc;
}

FC_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS && (!name || len <= 0)) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) snprintf(name, (size_t)len, "Fake CUDA Device %d", (int)dev);
  fc_unlock();
  return rc;
}

FC_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS && !bytes) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *bytes = g.capacity;
  fc_unlock();
  return rc;
}

FC_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev) {
  size_t total = 0;
  CUresult rc = cuDeviceTotalMem_v2(&total, dev);
  if (rc == CUDA_SUCCESS && !bytes) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *bytes = total > UINT_MAX ? UINT_MAX : (unsigned int)total;
  return rc;
}

/* A plausible recent GPU for the attributes programs check; every other attribute is 0. */
FC_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  fc_unlock();
  if (rc != CUDA_SUCCESS) return rc;
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = (int)dev + 1; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *pi = 1; break;
  default: *pi = 0; break;
  }
  return CUDA_SUCCESS;
}

/* ---- primary contexts ---- */

FC_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS && !pctx) rc = CUDA_ERROR_INVALID_VALUE;
  struct CUctx_st *c = NULL;
  if (rc == CUDA_SUCCESS) {
    c = &g.primary[dev];
    c->retains++;
    c->active = true;
    *pctx = c;
  }
  fc_unlock();
  fc_log("cuDevicePrimaryCtxRetain dev=%d -> %p status=%d", (int)dev, (void *)c, (int)rc);
  return rc;
}

static CUresult fc_primary_release(const char *api, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS) {
    struct CUctx_st *c = &g.primary[dev];
    if (c->retains == 0) {
      rc = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--c->retains == 0) {
      fc_destroy_ctx_resources_locked(c);
      c->active = false;
    }
  }
  fc_unlock();
  fc_log("%s dev=%d status=%d", api, (int)dev, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return fc_primary_release("cuDevicePrimaryCtxRelease", dev);
}
FC_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return fc_primary_release("cuDevicePrimaryCtxRelease_v2", dev);
}

/* "Resetting the primary context does not release it" (cuda.h): the handle and its retain count
 * stay, and a retained context is at once usable again, empty. */
static CUresult fc_primary_reset(const char *api, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS) {
    fc_destroy_ctx_resources_locked(&g.primary[dev]);
    g.counters.primary_ctx_resets++;
  }
  fc_unlock();
  fc_log("%s dev=%d status=%d", api, (int)dev, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return fc_primary_reset("cuDevicePrimaryCtxReset", dev);
}
FC_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return fc_primary_reset("cuDevicePrimaryCtxReset_v2", dev);
}

FC_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS && (!flags || !active)) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    *flags = g.primary[dev].flags;
    *active = g.primary[dev].active;
  }
  fc_unlock();
  fc_log("cuDevicePrimaryCtxGetState dev=%d status=%d", (int)dev, (int)rc);
  return rc;
}

/* ---- created contexts and the context stack ---- */

static CUresult fc_ctx_create(const char *api, CUcontext *pctx, unsigned int flags, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS && !pctx) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && tls_ctx_depth == FC_CTX_STACK) rc = CUDA_ERROR_OUT_OF_MEMORY;
  struct CUctx_st *c = NULL;
  if (rc == CUDA_SUCCESS) {
    c = malloc(sizeof *c);
    if (!c || !fc_set_add(&g.ctxs, (uintptr_t)c)) {
      free(c);
      c = NULL;
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (rc == CUDA_SUCCESS) {
    *c = (struct CUctx_st){.device = dev, .active = true, .flags = flags};
    tls_ctx_stack[tls_ctx_depth++] = c; /* a new context is pushed on the calling thread */
    *pctx = c;
  }
  fc_unlock();
  fc_log("%s dev=%d flags=%u -> %p status=%d", api, (int)dev, flags, (void *)c, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  return fc_ctx_create("cuCtxCreate", pctx, flags, dev);
}
FC_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  return fc_ctx_create("cuCtxCreate_v2", pctx, flags, dev);
}
FC_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                  unsigned int flags, CUdevice dev) {
  (void)paramsArray; /* affinity has no meaning without SMs */
  (void)numParams;
  return fc_ctx_create("cuCtxCreate_v3", pctx, flags, dev);
}
FC_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                  unsigned int flags, CUdevice dev) {
  (void)ctxCreateParams; /* affinity and CIG parameters have no meaning here */
  return fc_ctx_create("cuCtxCreate_v4", pctx, flags, dev);
}

static CUresult fc_ctx_destroy(const char *api, CUcontext ctx) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  /* primary contexts go through cuDevicePrimaryCtxRelease */
  if (rc == CUDA_SUCCESS && !fc_set_has(&g.ctxs, (uintptr_t)ctx)) rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS) {
    fc_destroy_ctx_resources_locked(ctx);
    fc_set_del(&g.ctxs, (uintptr_t)ctx);
    if (fc_current() == ctx) tls_ctx_depth--;
    free(ctx);
  }
  fc_unlock();
  fc_log("%s ctx=%p status=%d", api, (void *)ctx, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuCtxDestroy(CUcontext ctx) { return fc_ctx_destroy("cuCtxDestroy", ctx); }
FC_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) { return fc_ctx_destroy("cuCtxDestroy_v2", ctx); }

/* No lock, as in the real driver, where the current context is the thread's own: a process-wide
 * lock here would serialize every thread of a multi-threaded benchmark in what is a thread-local
 * read (issue 27). */
FC_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
  CUresult rc = __atomic_load_n(&g.initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !pctx) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *pctx = fc_current();
  fc_log("cuCtxGetCurrent -> %p status=%d", (void *)(rc == CUDA_SUCCESS ? *pctx : NULL), (int)rc);
  return rc;
}

FC_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS) {
    if (!ctx) {
      if (tls_ctx_depth) tls_ctx_depth--; /* NULL unbinds the current context */
    } else if (!fc_ctx_live(ctx)) {
      rc = CUDA_ERROR_INVALID_CONTEXT;
    } else if (tls_ctx_depth) {
      tls_ctx_stack[tls_ctx_depth - 1] = ctx;
    } else {
      tls_ctx_stack[tls_ctx_depth++] = ctx;
    }
  }
  fc_unlock();
  fc_log("cuCtxSetCurrent ctx=%p status=%d", (void *)ctx, (int)rc);
  return rc;
}

static CUresult fc_ctx_push(const char *api, CUcontext ctx) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !fc_ctx_live(ctx)) rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS && tls_ctx_depth == FC_CTX_STACK) rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) tls_ctx_stack[tls_ctx_depth++] = ctx;
  fc_unlock();
  fc_log("%s ctx=%p status=%d", api, (void *)ctx, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) { return fc_ctx_push("cuCtxPushCurrent", ctx); }
FC_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return fc_ctx_push("cuCtxPushCurrent_v2", ctx);
}

static CUresult fc_ctx_pop(const char *api, CUcontext *pctx) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  struct CUctx_st *c = NULL;
  if (rc == CUDA_SUCCESS && tls_ctx_depth == 0) rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS) {
    c = tls_ctx_stack[--tls_ctx_depth];
    if (pctx) *pctx = c;
  }
  fc_unlock();
  fc_log("%s -> %p status=%d", api, (void *)c, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx) { return fc_ctx_pop("cuCtxPopCurrent", pctx); }
FC_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  return fc_ctx_pop("cuCtxPopCurrent_v2", pctx);
}

/* ctx NULL means the current context (the _v2 ABIs of CUDA 13 take an explicit one). */
static CUresult fc_ctx_get_device(const char *api, CUdevice *device, CUcontext ctx) {
  fc_lock();
  CUresult rc = CUDA_SUCCESS;
  struct CUctx_st *c = ctx;
  if (!c) rc = fc_require_ctx(&c);
  else if (!g.initialized) rc = CUDA_ERROR_NOT_INITIALIZED;
  else if (!fc_ctx_live(c)) rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS && !device) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *device = c->device;
  fc_unlock();
  fc_log("%s ctx=%p status=%d", api, (void *)ctx, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
  return fc_ctx_get_device("cuCtxGetDevice", device, NULL);
}
FC_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  return fc_ctx_get_device("cuCtxGetDevice_v2", device, ctx);
}

static CUresult fc_ctx_synchronize(const char *api, CUcontext ctx) {
  fc_lock();
  g.counters.ctx_synchronize++;
  CUresult rc = CUDA_SUCCESS;
  struct CUctx_st *c = ctx;
  if (!c) rc = fc_require_ctx(&c);
  else if (!g.initialized) rc = CUDA_ERROR_NOT_INITIALIZED;
  else if (!fc_ctx_live(c)) rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS && g.active_captures) rc = fc_violation_locked();
  if (rc == CUDA_SUCCESS) {
    fc_complete_ctx_locked(c);
    fc_pools_release_locked(c->device);
    rc = g.sticky; /* an asynchronous error surfaces at the next synchronization */
  }
  fc_unlock();
  fc_log("%s ctx=%p status=%d", api, (void *)ctx, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuCtxSynchronize(void) { return fc_ctx_synchronize("cuCtxSynchronize", NULL); }
FC_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return fc_ctx_synchronize("cuCtxSynchronize_v2", ctx);
}

/* ---- memory: allocation ---- */

/* Allocates in the current context; the caller logs. */
static CUresult fc_mem_alloc(size_t size, fc_mem_kind_t kind, bool low32, uintptr_t *out) {
  fc_lock();
  struct CUctx_st *c = NULL;
  CUresult rc = fc_require_ctx(&c);
  if (rc == CUDA_SUCCESS && !out) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) rc = fc_alloc_locked(c, size, kind, low32, out);
  fc_unlock();
  return rc;
}

static _Atomic(fake_cuda_alloc_hook_t) fc_alloc_hook;

FC_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  fake_cuda_alloc_hook_t hook = atomic_load(&fc_alloc_hook);
  if (hook) hook(bytesize);
  uintptr_t p = 0;
  fc_lock();
  CUresult rc = fc_capture_forbids_locked() ? fc_violation_locked() : CUDA_SUCCESS;
  fc_unlock();
  if (rc == CUDA_SUCCESS) rc = dptr ? fc_mem_alloc(bytesize, FC_MEM_DEVICE, false, &p) : CUDA_ERROR_INVALID_VALUE;
  fc_lock();
  if (rc == CUDA_SUCCESS) g.counters.mem_alloc++;
  else g.counters.mem_alloc_failed++;
  fc_unlock();
  if (rc == CUDA_SUCCESS) *dptr = p;
  fc_log("cuMemAlloc_v2 size=%zu -> 0x%" PRIxPTR " status=%d", bytesize, p, (int)rc);
  return rc;
}

/* The 32-bit ABI of binaries built before CUDA 3.2: the address must fit in 32 bits. */
FC_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
  uintptr_t p = 0;
  CUresult rc =
      dptr ? fc_mem_alloc(bytesize, FC_MEM_DEVICE_V1, true, &p) : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *dptr = (CUdeviceptr_v1)p;
  fc_log("cuMemAlloc size=%u -> 0x%" PRIxPTR " status=%d", bytesize, p, (int)rc);
  return rc;
}

/* ElementSizeBytes must be 4, 8 or 16, as on the real driver; rows are padded to 512 bytes. */
static CUresult fc_mem_alloc_pitch(size_t width, size_t height, unsigned int elem, bool low32,
                                   uintptr_t *p, size_t *pitch) {
  if ((elem != 4 && elem != 8 && elem != 16) || width == 0 || height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (width > SIZE_MAX - 511) return CUDA_ERROR_OUT_OF_MEMORY;
  *pitch = (width + 511) / 512 * 512;
  if (height > SIZE_MAX / *pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  return fc_mem_alloc(*pitch * height, low32 ? FC_MEM_DEVICE_V1 : FC_MEM_PITCH, low32, p);
}

FC_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                      size_t Height, unsigned int ElementSizeBytes) {
  uintptr_t p = 0;
  size_t pitch = 0;
  CUresult rc = dptr && pPitch ? fc_mem_alloc_pitch(WidthInBytes, Height, ElementSizeBytes, false,
                                                    &p, &pitch)
                               : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    *dptr = p;
    *pPitch = pitch;
  }
  fc_log("cuMemAllocPitch_v2 width=%zu height=%zu elem=%u -> 0x%" PRIxPTR " pitch=%zu status=%d",
         WidthInBytes, Height, ElementSizeBytes, p, pitch, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                   unsigned int WidthInBytes, unsigned int Height,
                                   unsigned int ElementSizeBytes) {
  uintptr_t p = 0;
  size_t pitch = 0;
  CUresult rc = dptr && pPitch ? fc_mem_alloc_pitch(WidthInBytes, Height, ElementSizeBytes, true,
                                                    &p, &pitch)
                               : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    *dptr = (CUdeviceptr_v1)p;
    *pPitch = (unsigned int)pitch;
  }
  fc_log("cuMemAllocPitch width=%u height=%u elem=%u -> 0x%" PRIxPTR " status=%d", WidthInBytes,
         Height, ElementSizeBytes, p, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  uintptr_t p = 0;
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  if (dptr && (flags == CU_MEM_ATTACH_GLOBAL || flags == CU_MEM_ATTACH_HOST))
    rc = fc_mem_alloc(bytesize, FC_MEM_MANAGED, false, &p);
  if (rc == CUDA_SUCCESS) *dptr = p;
  fc_log("cuMemAllocManaged size=%zu flags=%u -> 0x%" PRIxPTR " status=%d", bytesize, flags, p,
         (int)rc);
  return rc;
}

/* Stream-ordered allocation: with no device work to order against, it happens at once, from the
 * given pool or the device's current one (cuDeviceSetMemPool; the default pool unless set); the pool's reserved bytes are what the device
 * is charged (fake_cuda_mem.c). */
static CUresult fc_mem_alloc_async(const char *api, CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                   bool from_pool, CUstream hStream, bool per_thread) {
  uintptr_t p = 0;
  fc_lock();
  struct CUctx_st *c = NULL;
  CUresult rc = fc_require_ctx(&c);
  if (rc == CUDA_SUCCESS && !fc_stream_ok(fc_stream_key(hStream, per_thread))) rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS && (!dptr || bytesize == 0)) rc = CUDA_ERROR_INVALID_VALUE;
  uintptr_t key = fc_stream_key(hStream, per_thread);
  if (rc == CUDA_SUCCESS && fc_stream_capturing(key)) { /* a node of the capture's graph, no memory yet */
    rc = fc_graph_capture_alloc_locked(((struct CUstream_st *)key)->captured, bytesize, c->device, &p);
    fc_unlock();
    if (rc == CUDA_SUCCESS) *dptr = p;
    fc_log("%s size=%zu stream=%p captured -> 0x%" PRIxPTR " status=%d", api, bytesize, (void *)hStream, p, (int)rc);
    return rc;
  }
  struct CUmemPoolHandle_st *from = NULL;
  if (rc == CUDA_SUCCESS) {
    from = from_pool ? fc_pool_valid_locked(pool) : fc_pool_current_locked(c->device);
    if (!from) rc = CUDA_ERROR_INVALID_VALUE;
  }
  if (rc == CUDA_SUCCESS) rc = fc_pool_take_locked(from, bytesize);
  if (rc == CUDA_SUCCESS) {
    rc = fc_alloc_locked(c, bytesize, FC_MEM_ASYNC, false, &p);
    if (rc == CUDA_SUCCESS) g.allocs[fc_alloc_at(p)].pool = from;
    else fc_pool_give_back_locked(from, bytesize);
  }
  fc_unlock();
  if (rc == CUDA_SUCCESS) *dptr = p;
  fc_log("%s size=%zu pool=%p stream=%p -> 0x%" PRIxPTR " status=%d", api, bytesize, (void *)from,
         (void *)hStream, p, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  return fc_mem_alloc_async("cuMemAllocAsync", dptr, bytesize, NULL, false, hStream, false);
}
FC_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  return fc_mem_alloc_async("cuMemAllocAsync_ptsz", dptr, bytesize, NULL, false, hStream, true);
}
FC_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                           CUstream hStream) {
  return fc_mem_alloc_async("cuMemAllocFromPoolAsync", dptr, bytesize, pool, true, hStream, false);
}
FC_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream hStream) {
  return fc_mem_alloc_async("cuMemAllocFromPoolAsync_ptsz", dptr, bytesize, pool, true, hStream, true);
}

static CUresult fc_host_alloc(const char *api, void **pp, size_t bytesize, unsigned int flags) {
  uintptr_t p = 0;
  CUresult rc = pp ? fc_mem_alloc(bytesize, FC_MEM_HOST, false, &p) : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *pp = (void *)p;
  fc_log("%s size=%zu flags=%u -> 0x%" PRIxPTR " status=%d", api, bytesize, flags, p, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  return fc_host_alloc("cuMemHostAlloc", pp, bytesize, Flags);
}
FC_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
  return fc_host_alloc("cuMemAllocHost_v2", pp, bytesize, 0);
}
FC_EXPORT CUresult cuMemAllocHost(void **pp, unsigned int bytesize) {
  return fc_host_alloc("cuMemAllocHost", pp, bytesize, 0);
}

/* ---- memory: release ---- */

typedef enum fc_free_what_e { FC_FREE_DEVICE, FC_FREE_HOST, FC_FREE_IPC } fc_free_what_t;

static _Atomic(fake_cuda_free_hook_t) fc_free_hook;

/* The driver freed device memory at p; the call has not returned yet (outside the lock). */
void fc_freed_hook(uintptr_t p) {
  fake_cuda_free_hook_t hook = atomic_load(&fc_free_hook);
  if (hook) hook(p);
}

/* Frees the allocation based at p if its kind matches; 0 is a no-op that succeeds. *freed says
 * whether anything was freed. */
static CUresult fc_mem_free(uintptr_t p, fc_free_what_t what, bool *freed) {
  *freed = false;
  if (p == 0) return CUDA_SUCCESS;
  fc_lock();
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  size_t i = fc_alloc_at(p);
  if (i == SIZE_MAX && what == FC_FREE_DEVICE && fc_graph_free_locked(p)) {
    *freed = true;
    rc = CUDA_SUCCESS;
  } else if (i != SIZE_MAX) {
    fc_mem_kind_t k = g.allocs[i].kind;
    bool match = what == FC_FREE_HOST  ? k == FC_MEM_HOST
                 : what == FC_FREE_IPC ? k == FC_MEM_IPC
                                       : fc_counts_as_device(k);
    if (match) {
      fc_free_at_locked(i);
      *freed = true;
      rc = CUDA_SUCCESS;
    }
  }
  fc_unlock();
  if (*freed && what == FC_FREE_DEVICE) fc_freed_hook(p);
  return rc;
}

FC_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  bool freed = false;
  fc_lock();
  CUresult rc = fc_capture_forbids_locked() ? fc_violation_locked() : CUDA_SUCCESS;
  fc_unlock();
  if (rc == CUDA_SUCCESS) rc = fc_mem_free(dptr, FC_FREE_DEVICE, &freed);
  if (freed) {
    fc_lock();
    g.counters.mem_free++;
    fc_unlock();
  }
  fc_log("cuMemFree_v2 ptr=0x%llx status=%d", (unsigned long long)dptr, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  bool freed;
  CUresult rc = fc_mem_free(dptr, FC_FREE_DEVICE, &freed);
  fc_log("cuMemFree ptr=0x%x status=%d", dptr, (int)rc);
  return rc;
}

static CUresult fc_mem_free_async(const char *api, CUdeviceptr dptr, CUstream hStream,
                                  bool per_thread) {
  uintptr_t key = fc_stream_key(hStream, per_thread);
  fc_lock();
  bool stream_ok = fc_stream_ok(key);
  CUresult rc = CUDA_SUCCESS;
  bool captured = stream_ok && fc_stream_capturing(key);
  if (captured) rc = fc_graph_capture_free_locked(((struct CUstream_st *)key)->captured, dptr); /* a free node */
  fc_unlock();
  bool freed;
  if (!captured) rc = stream_ok ? fc_mem_free(dptr, FC_FREE_DEVICE, &freed) : CUDA_ERROR_INVALID_HANDLE;
  fc_log("%s ptr=0x%llx stream=%p status=%d", api, (unsigned long long)dptr, (void *)hStream,
         (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return fc_mem_free_async("cuMemFreeAsync", dptr, hStream, false);
}
FC_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return fc_mem_free_async("cuMemFreeAsync_ptsz", dptr, hStream, true);
}

FC_EXPORT CUresult cuMemFreeHost(void *p) {
  bool freed;
  CUresult rc = fc_mem_free((uintptr_t)p, FC_FREE_HOST, &freed);
  if (!p) rc = CUDA_ERROR_INVALID_VALUE;
  fc_log("cuMemFreeHost ptr=%p status=%d", p, (int)rc);
  return rc;
}

/* ---- memory: queries ---- */

FC_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  fc_lock();
  struct CUctx_st *c = NULL;
  CUresult rc = fc_require_ctx(&c);
  if (rc == CUDA_SUCCESS && (!free || !total)) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    size_t used = g.in_use[c->device];
    *total = g.capacity;
    *free = used < g.capacity ? g.capacity - used : 0;
  }
  fc_unlock();
  fc_log("cuMemGetInfo_v2 -> free=%zu total=%zu status=%d", rc == CUDA_SUCCESS ? *free : 0,
         rc == CUDA_SUCCESS ? *total : 0, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemGetInfo(unsigned int *free, unsigned int *total) {
  size_t f = 0, t = 0;
  CUresult rc = free && total ? cuMemGetInfo_v2(&f, &t) : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    *free = f > UINT_MAX ? UINT_MAX : (unsigned int)f;
    *total = t > UINT_MAX ? UINT_MAX : (unsigned int)t;
  }
  return rc;
}

FC_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  size_t i = fc_alloc_containing(dptr);
  if (rc == CUDA_SUCCESS && i == SIZE_MAX) rc = CUDA_ERROR_NOT_FOUND;
  if (rc == CUDA_SUCCESS) {
    if (pbase) *pbase = g.allocs[i].base;
    if (psize) *psize = g.allocs[i].size;
  }
  fc_unlock();
  fc_log("cuMemGetAddressRange_v2 ptr=0x%llx status=%d", (unsigned long long)dptr, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
                                        CUdeviceptr_v1 dptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult rc = cuMemGetAddressRange_v2(&base, &size, dptr);
  if (rc == CUDA_SUCCESS && (base >= FC_4GIB || size > UINT_MAX)) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    if (pbase) *pbase = (CUdeviceptr_v1)base;
    if (psize) *psize = (unsigned int)size;
  }
  return rc;
}

/* One attribute of the allocation holding `ptr` (i == SIZE_MAX: none); the caller holds the lock.
 * Booleans are written as int, like the other 4-byte attributes. */
static CUresult fc_pointer_attribute_locked(void *data, CUpointer_attribute attribute, size_t i) {
  const fc_alloc_t *a = i == SIZE_MAX ? NULL : &g.allocs[i];
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(CUcontext *)data = a->ctx;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(unsigned int *)data = a->kind == FC_MEM_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(CUdeviceptr *)data = a->base;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    /* only host-accessible memory has a host pointer */
    if (!a || (a->kind != FC_MEM_HOST && a->kind != FC_MEM_MANAGED))
      return CUDA_ERROR_INVALID_VALUE;
    *(void **)data = (void *)a->base;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(unsigned long long *)data = a->buffer_id;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(int *)data = a->kind == FC_MEM_MANAGED;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(int *)data = a->ctx->device;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(int *)data =
        a->kind == FC_MEM_DEVICE || a->kind == FC_MEM_DEVICE_V1 || a->kind == FC_MEM_PITCH;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
  case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(CUdeviceptr *)data = a->base;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
  case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(size_t *)data = a->size;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MAPPED:
    *(int *)data = a != NULL;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(int *)data = 1;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    *(CUmemoryPool *)data = NULL; /* the fake has no pools */
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

FC_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                         CUdeviceptr ptr) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !data) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    rc = fc_pointer_attribute_locked(data, attribute, fc_alloc_containing(ptr));
  fc_unlock();
  fc_log("cuPointerGetAttribute attr=%d ptr=0x%llx status=%d", (int)attribute,
         (unsigned long long)ptr, (int)rc);
  return rc;
}

/* Unlike the singular form, nothing about the pointer is an error: an attribute that does not
 * apply (or an unknown pointer) reads as zero of the attribute's width. */
FC_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                          CUpointer_attribute *attributes, void **data,
                                          CUdeviceptr ptr) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && (!attributes || !data)) rc = CUDA_ERROR_INVALID_VALUE;
  size_t i = fc_alloc_containing(ptr);
  for (unsigned int k = 0; rc == CUDA_SUCCESS && k < numAttributes; k++) {
    if (!data[k] || fc_pointer_attribute_locked(data[k], attributes[k], i) == CUDA_SUCCESS)
      continue;
    switch (attributes[k]) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(void **)data[k] = NULL; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *(CUdeviceptr *)data[k] = 0; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data[k] = 0; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *(size_t *)data[k] = 0; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[k] = -2; break; /* as the driver does */
    default: *(int *)data[k] = 0; break;
    }
  }
  fc_unlock();
  fc_log("cuPointerGetAttributes n=%u ptr=0x%llx status=%d", numAttributes,
         (unsigned long long)ptr, (int)rc);
  return rc;
}

/* ---- memory: copies and sets (synchronous; device ranges are checked against live
 * allocations, as a real driver checks its VA map) ---- */

static CUresult fc_copy(uintptr_t dst, bool dst_dev, uintptr_t src, bool src_dev, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  fc_lock();
  bool ok = g.initialized && (!dst_dev || fc_range_ok(dst, n, true)) && (!src_dev || fc_range_ok(src, n, false));
  CUresult rc = !g.initialized ? CUDA_ERROR_NOT_INITIALIZED
                : ok && dst && src ? CUDA_SUCCESS
                                   : CUDA_ERROR_INVALID_VALUE;
  /* copied under the lock so a concurrent free cannot unmap the range midway */
  if (rc == CUDA_SUCCESS) memmove((void *)dst, (const void *)src, n);
  fc_unlock();
  return rc;
}

#define FC_LOG_COPY(api, dst, src, n, rc)                                                          \
  fc_log("%s dst=0x%llx src=0x%llx size=%llu status=%d", api,                                      \
         (unsigned long long)(uintptr_t)(dst), (unsigned long long)(uintptr_t)(src),               \
         (unsigned long long)(n), (int)(rc))

FC_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
  CUresult rc = fc_copy(dstDevice, true, (uintptr_t)srcHost, false, ByteCount);
  FC_LOG_COPY("cuMemcpyHtoD_v2", dstDevice, srcHost, ByteCount, rc);
  return rc;
}
FC_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
                                        size_t ByteCount) {
  CUresult rc = fc_copy(dstDevice, true, (uintptr_t)srcHost, false, ByteCount);
  FC_LOG_COPY("cuMemcpyHtoD_v2_ptds", dstDevice, srcHost, ByteCount, rc);
  return rc;
}
FC_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost,
                                unsigned int ByteCount) {
  CUresult rc = fc_copy(dstDevice, true, (uintptr_t)srcHost, false, ByteCount);
  FC_LOG_COPY("cuMemcpyHtoD", dstDevice, srcHost, ByteCount, rc);
  return rc;
}

FC_EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  CUresult rc = fc_copy((uintptr_t)dstHost, false, srcDevice, true, ByteCount);
  FC_LOG_COPY("cuMemcpyDtoH_v2", dstHost, srcDevice, ByteCount, rc);
  return rc;
}
FC_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  CUresult rc = fc_copy((uintptr_t)dstHost, false, srcDevice, true, ByteCount);
  FC_LOG_COPY("cuMemcpyDtoH_v2_ptds", dstHost, srcDevice, ByteCount, rc);
  return rc;
}
FC_EXPORT CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  CUresult rc = fc_copy((uintptr_t)dstHost, false, srcDevice, true, ByteCount);
  FC_LOG_COPY("cuMemcpyDtoH", dstHost, srcDevice, ByteCount, rc);
  return rc;
}

FC_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  CUresult rc = fc_copy(dstDevice, true, srcDevice, true, ByteCount);
  FC_LOG_COPY("cuMemcpyDtoD_v2", dstDevice, srcDevice, ByteCount, rc);
  return rc;
}
FC_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                        size_t ByteCount) {
  CUresult rc = fc_copy(dstDevice, true, srcDevice, true, ByteCount);
  FC_LOG_COPY("cuMemcpyDtoD_v2_ptds", dstDevice, srcDevice, ByteCount, rc);
  return rc;
}
FC_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                                unsigned int ByteCount) {
  CUresult rc = fc_copy(dstDevice, true, srcDevice, true, ByteCount);
  FC_LOG_COPY("cuMemcpyDtoD", dstDevice, srcDevice, ByteCount, rc);
  return rc;
}

/* Unified addressing: either side may be host memory the driver does not know. */
FC_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  CUresult rc = fc_copy(dst, false, src, false, ByteCount);
  FC_LOG_COPY("cuMemcpy", dst, src, ByteCount, rc);
  return rc;
}
FC_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  CUresult rc = fc_copy(dst, false, src, false, ByteCount);
  FC_LOG_COPY("cuMemcpy_ptds", dst, src, ByteCount, rc);
  return rc;
}

static CUresult fc_memset8(const char *api, uintptr_t dst, unsigned char uc, size_t n) {
  fc_lock();
  CUresult rc = !g.initialized ? CUDA_ERROR_NOT_INITIALIZED
                : n == 0 || fc_range_ok(dst, n, true) ? CUDA_SUCCESS
                                                : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && n) memset((void *)dst, uc, n);
  fc_unlock();
  fc_log("%s dst=0x%" PRIxPTR " value=%u size=%zu status=%d", api, dst, uc, n, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return fc_memset8("cuMemsetD8_v2", dstDevice, uc, N);
}
FC_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return fc_memset8("cuMemsetD8_v2_ptds", dstDevice, uc, N);
}
FC_EXPORT CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N) {
  return fc_memset8("cuMemsetD8", dstDevice, uc, N);
}

/* ---- IPC ---- */

/* "Takes a pointer to the base of an existing device memory allocation" (cuda.h): anything else,
 * including an address inside an allocation, fails, which is what exposes a sub-allocating cache
 * (interposition.md 7.3). */
/* A pointer inside an allocation gets the whole allocation's handle, which the importer maps from
 * its start, as the real driver answers (UCX issue 11724). */
FC_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  size_t i = fc_alloc_containing(dptr);
  if (rc == CUDA_SUCCESS && (!pHandle || i == SIZE_MAX)) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    const fc_alloc_t *a = &g.allocs[i];
    if (a->kind != FC_MEM_DEVICE && a->kind != FC_MEM_DEVICE_V1 && a->kind != FC_MEM_PITCH) {
      rc = CUDA_ERROR_INVALID_VALUE; /* managed, pool, host and imported memory cannot be shared */
    } else {
      fake_cuda_ipc_payload_t pl = {.magic = FAKE_CUDA_IPC_MAGIC, .base = a->base, .size = a->size,
                                    .buffer_id = a->buffer_id, .pid = (int32_t)getpid(),
                                    .device = a->ctx->device};
      _Static_assert(sizeof pl <= sizeof pHandle->reserved, "payload fits the handle");
      memset(pHandle, 0, sizeof *pHandle);
      memcpy(pHandle->reserved, &pl, sizeof pl);
    }
  }
  fc_unlock();
  fc_log("cuIpcGetMemHandle ptr=0x%llx status=%d", (unsigned long long)dptr, (int)rc);
  return rc;
}

static CUresult fc_ipc_open(const char *api, CUdeviceptr *pdptr, CUipcMemHandle handle,
                            unsigned int flags) {
  fake_cuda_ipc_payload_t pl;
  memcpy(&pl, handle.reserved, sizeof pl);
  uintptr_t p = 0;
  CUresult rc = CUDA_SUCCESS;
  if (!pdptr || flags > CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS ||
      memcmp(pl.magic, FAKE_CUDA_IPC_MAGIC, sizeof pl.magic) != 0 || pl.size == 0 ||
      (uint64_t)(size_t)pl.size != pl.size)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (pl.pid == (int32_t)getpid())
    rc = CUDA_ERROR_INVALID_CONTEXT; /* a real driver refuses to import into the exporter */
  else
    rc = fc_mem_alloc((size_t)pl.size, FC_MEM_IPC, false, &p);
  if (rc == CUDA_SUCCESS) *pdptr = p;
  fc_log("%s base=0x%llx size=%llu -> 0x%" PRIxPTR " status=%d", api, (unsigned long long)pl.base,
         (unsigned long long)pl.size, p, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                      unsigned int Flags) {
  return fc_ipc_open("cuIpcOpenMemHandle", pdptr, handle, Flags);
}
FC_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                         unsigned int Flags) {
  return fc_ipc_open("cuIpcOpenMemHandle_v2", pdptr, handle, Flags);
}

FC_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  bool freed;
  CUresult rc = dptr ? fc_mem_free(dptr, FC_FREE_IPC, &freed) : CUDA_ERROR_INVALID_VALUE;
  fc_log("cuIpcCloseMemHandle ptr=0x%llx status=%d", (unsigned long long)dptr, (int)rc);
  return rc;
}

/* ---- streams ---- */

static CUresult fc_stream_create(const char *api, CUstream *phStream, unsigned int flags,
                                 int priority) {
  fc_lock();
  struct CUctx_st *c = NULL;
  CUresult rc = fc_require_ctx(&c);
  if (rc == CUDA_SUCCESS && (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *s = NULL;
  if (rc == CUDA_SUCCESS) {
    s = malloc(sizeof *s);
    if (!s || !fc_set_add(&g.streams, (uintptr_t)s)) {
      free(s);
      s = NULL;
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (rc == CUDA_SUCCESS) {
    *s = (struct CUstream_st){.ctx = c, .flags = flags, .priority = priority};
    *phStream = s;
  }
  fc_unlock();
  fc_log("%s flags=%u -> %p status=%d", api, flags, (void *)s, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  return fc_stream_create("cuStreamCreate", phStream, Flags, 0);
}
FC_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                              int priority) {
  return fc_stream_create("cuStreamCreateWithPriority", phStream, flags, priority);
}

/* Green contexts: a handle stands for the device's partition; its streams are non-blocking
 * streams of the current context, which is all cudasnap's fences need of them. */
struct CUgreenCtx_st {
  CUdevice device;
};

FC_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags) {
  (void)desc;
  (void)flags;
  if (!phCtx) return CUDA_ERROR_INVALID_VALUE;
  struct CUgreenCtx_st *g_ctx = malloc(sizeof *g_ctx);
  if (!g_ctx) return CUDA_ERROR_OUT_OF_MEMORY;
  g_ctx->device = dev;
  *phCtx = g_ctx;
  fc_log("cuGreenCtxCreate dev=%d -> %p", (int)dev, (void *)g_ctx);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  free(hCtx);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags,
                                          int priority) {
  if (!greenCtx || flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  return fc_stream_create("cuGreenCtxStreamCreate", phStream, flags, priority);
}

static CUresult fc_stream_destroy(const char *api, CUstream hStream) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !fc_set_has(&g.streams, (uintptr_t)hStream))
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS) {
    if (hStream->capture != FC_CAPTURE_NONE) g.active_captures--;
    if (hStream->captured) fc_graph_destroy_locked(hStream->captured);
    fc_set_del(&g.streams, (uintptr_t)hStream);
    free(hStream); /* events recorded on it keep only the handle value, for comparison */
  }
  fc_unlock();
  fc_log("%s stream=%p status=%d", api, (void *)hStream, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuStreamDestroy(CUstream hStream) {
  return fc_stream_destroy("cuStreamDestroy", hStream);
}
FC_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  return fc_stream_destroy("cuStreamDestroy_v2", hStream);
}

static CUresult fc_stream_synchronize(const char *api, CUstream hStream, bool per_thread) {
  uintptr_t key = fc_stream_key(hStream, per_thread);
  fc_lock();
  struct CUctx_st *c = NULL;
  CUresult rc = fc_require_ctx(&c);
  if (rc == CUDA_SUCCESS && !fc_stream_ok(key)) rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS && g.active_captures) rc = fc_violation_locked();
  if (rc == CUDA_SUCCESS) {
    struct CUctx_st *owner = fc_stream_special(key) ? c : ((struct CUstream_st *)key)->ctx;
    fc_complete_stream_locked(owner, key);
    fc_pools_release_locked(owner->device);
  }
  fc_unlock();
  fc_log("%s stream=%p status=%d", api, (void *)hStream, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
  return fc_stream_synchronize("cuStreamSynchronize", hStream, false);
}
FC_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  return fc_stream_synchronize("cuStreamSynchronize_ptsz", hStream, true);
}

/* NOT_READY while an event recorded on the stream is pending: a stream's only work in the fake.
 * Querying a capturing stream is illegal, as on a real driver. */
static CUresult fc_stream_query(const char *api, CUstream hStream, bool per_thread) {
  uintptr_t key = fc_stream_key(hStream, per_thread);
  fc_lock();
  struct CUctx_st *c = NULL;
  CUresult rc = fc_require_ctx(&c);
  if (rc == CUDA_SUCCESS && !fc_stream_ok(key)) rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS && fc_stream_capturing(key)) rc = fc_violation_locked();
  for (size_t i = 0; rc == CUDA_SUCCESS && i < g.events.n; i++) {
    const struct CUevent_st *e = (const struct CUevent_st *)g.events.v[i];
    if (e->stream == key && e->state == FC_EVENT_PENDING) rc = CUDA_ERROR_NOT_READY;
  }
  fc_unlock();
  fc_log("%s stream=%p status=%d", api, (void *)hStream, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuStreamQuery(CUstream hStream) {
  return fc_stream_query("cuStreamQuery", hStream, false);
}
FC_EXPORT CUresult cuStreamQuery_ptsz(CUstream hStream) {
  return fc_stream_query("cuStreamQuery_ptsz", hStream, true);
}

/* ---- events ---- */

FC_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  fc_lock();
  struct CUctx_st *c = NULL;
  CUresult rc = fc_require_ctx(&c);
  if (rc == CUDA_SUCCESS && !phEvent) rc = CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st *e = NULL;
  if (rc == CUDA_SUCCESS) {
    e = malloc(sizeof *e);
    if (!e || !fc_set_add(&g.events, (uintptr_t)e)) {
      free(e);
      e = NULL;
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (rc == CUDA_SUCCESS) {
    *e = (struct CUevent_st){.ctx = c, .flags = Flags, .state = FC_EVENT_UNRECORDED};
    *phEvent = e;
  }
  fc_unlock();
  fc_log("cuEventCreate flags=%u -> %p status=%d", Flags, (void *)e, (int)rc);
  return rc;
}

/* Recording on a capturing stream is refused and counted. A real driver would turn it into a
 * graph node; the fake treats it as illegal because cudasnap must never record its fences there
 * (interposition.md 7.6). */
static CUresult fc_event_record(const char *api, CUevent hEvent, CUstream hStream,
                                bool per_thread) {
  uintptr_t key = fc_stream_key(hStream, per_thread);
  fc_lock();
  g.counters.event_record++;
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && (!fc_set_has(&g.events, (uintptr_t)hEvent) || !fc_stream_ok(key)))
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS && fc_stream_capturing(key)) rc = fc_violation_locked();
  if (rc == CUDA_SUCCESS) {
    hEvent->state = g.manual_events ? FC_EVENT_PENDING : FC_EVENT_COMPLETE;
    hEvent->stream = key;
  }
  fc_unlock();
  fc_log("%s event=%p stream=%p status=%d", api, (void *)hEvent, (void *)hStream, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return fc_event_record("cuEventRecord", hEvent, hStream, false);
}
FC_EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return fc_event_record("cuEventRecord_ptsz", hEvent, hStream, true);
}

FC_EXPORT CUresult cuEventQuery(CUevent hEvent) {
  fc_lock();
  g.counters.event_query++;
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !fc_set_has(&g.events, (uintptr_t)hEvent))
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS && g.active_captures) rc = fc_violation_locked();
  if (rc == CUDA_SUCCESS && hEvent->state == FC_EVENT_PENDING) rc = CUDA_ERROR_NOT_READY;
  fc_unlock();
  fc_log("cuEventQuery event=%p status=%d", (void *)hEvent, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !fc_set_has(&g.events, (uintptr_t)hEvent))
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS && g.active_captures) rc = fc_violation_locked();
  if (rc == CUDA_SUCCESS && hEvent->state == FC_EVENT_PENDING) hEvent->state = FC_EVENT_COMPLETE;
  fc_unlock();
  fc_log("cuEventSynchronize event=%p status=%d", (void *)hEvent, (int)rc);
  return rc;
}

static CUresult fc_event_destroy(const char *api, CUevent hEvent) {
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !fc_set_has(&g.events, (uintptr_t)hEvent))
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS) {
    fc_set_del(&g.events, (uintptr_t)hEvent);
    free(hEvent);
  }
  fc_unlock();
  fc_log("%s event=%p status=%d", api, (void *)hEvent, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuEventDestroy(CUevent hEvent) {
  return fc_event_destroy("cuEventDestroy", hEvent);
}
FC_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
  return fc_event_destroy("cuEventDestroy_v2", hEvent);
}

/* ---- stream capture ---- */

/* Only created streams can be captured here; the legacy stream cannot be captured on a real
 * driver either, and the per-thread default stream is left out for simplicity. */
static CUresult fc_begin_capture(const char *api, CUstream hStream, CUstreamCaptureMode mode,
                                 bool per_thread) {
  uintptr_t key = fc_stream_key(hStream, per_thread);
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && (unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && fc_stream_special(key)) rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (rc == CUDA_SUCCESS && !fc_set_has(&g.streams, key)) rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS && ((struct CUstream_st *)key)->capture != FC_CAPTURE_NONE)
    rc = CUDA_ERROR_ILLEGAL_STATE;
  struct CUgraph_st *graph = NULL;
  if (rc == CUDA_SUCCESS && !(graph = fc_graph_new_locked())) rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    struct CUstream_st *s = (struct CUstream_st *)key;
    s->capture = FC_CAPTURE_ACTIVE;
    s->mode = mode;
    s->capturer = pthread_self();
    s->captured = graph;
    g.active_captures++;
  }
  fc_unlock();
  fc_log("%s stream=%p mode=%d status=%d", api, (void *)hStream, (int)mode, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuStreamBeginCapture(CUstream hStream) {
  return fc_begin_capture("cuStreamBeginCapture", hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}
FC_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  return fc_begin_capture("cuStreamBeginCapture_ptsz", hStream, CU_STREAM_CAPTURE_MODE_GLOBAL,
                          true);
}
FC_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return fc_begin_capture("cuStreamBeginCapture_v2", hStream, mode, false);
}
FC_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  return fc_begin_capture("cuStreamBeginCapture_v2_ptsz", hStream, mode, true);
}

/* The graph holds the memory nodes the capture made (the fake records no other work); an
 * invalidated capture gives none. */
static CUresult fc_end_capture(const char *api, CUstream hStream, CUgraph *phGraph,
                               bool per_thread) {
  uintptr_t key = fc_stream_key(hStream, per_thread);
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !phGraph) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && !fc_stream_capturing(key)) rc = CUDA_ERROR_ILLEGAL_STATE;
  if (rc == CUDA_SUCCESS) {
    struct CUstream_st *s = (struct CUstream_st *)key;
    if (s->capture == FC_CAPTURE_INVALIDATED) rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    s->capture = FC_CAPTURE_NONE;
    g.active_captures--;
    *phGraph = rc == CUDA_SUCCESS ? s->captured : NULL;
    if (rc != CUDA_SUCCESS) fc_graph_destroy_locked(s->captured);
    s->captured = NULL;
  }
  fc_unlock();
  fc_log("%s stream=%p status=%d", api, (void *)hStream, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
  return fc_end_capture("cuStreamEndCapture", hStream, phGraph, false);
}
FC_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) {
  return fc_end_capture("cuStreamEndCapture_ptsz", hStream, phGraph, true);
}

static CUresult fc_is_capturing(const char *api, CUstream hStream,
                                CUstreamCaptureStatus *captureStatus, bool per_thread) {
  uintptr_t key = fc_stream_key(hStream, per_thread);
  fc_lock();
  CUresult rc = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
  if (rc == CUDA_SUCCESS && !captureStatus) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && !fc_stream_ok(key)) rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS) {
    fc_capture_t cap =
        fc_stream_special(key) ? FC_CAPTURE_NONE : ((struct CUstream_st *)key)->capture;
    *captureStatus = cap == FC_CAPTURE_ACTIVE        ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                     : cap == FC_CAPTURE_INVALIDATED ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                     : CU_STREAM_CAPTURE_STATUS_NONE;
  }
  fc_unlock();
  fc_log("%s stream=%p status=%d", api, (void *)hStream, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  return fc_is_capturing("cuStreamIsCapturing", hStream, captureStatus, false);
}
FC_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
                                            CUstreamCaptureStatus *captureStatus) {
  return fc_is_capturing("cuStreamIsCapturing_ptsz", hStream, captureStatus, true);
}

/* Kept per thread, as on a real driver; cuMemAlloc_v2 and cuMemFree_v2 obey it (fc_capture_forbids_locked). */
FC_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  CUresult rc = CUDA_SUCCESS;
  if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else {
    CUstreamCaptureMode old = tls_capture_mode;
    tls_capture_mode = *mode;
    *mode = old;
  }
  fc_log("cuThreadExchangeStreamCaptureMode status=%d", (int)rc);
  return rc;
}

/* ---- errors ---- */

#define FC_ERRORS(X)                                                                               \
  X(CUDA_SUCCESS, "no error")                                                                      \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                                  \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                                     \
  X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                            \
  X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                              \
  X(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library")                                      \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                                    \
  X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                           \
  X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                          \
  X(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered")                           \
  X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                          \
  X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state")            \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                                \
  X(CUDA_ERROR_NOT_READY, "device not ready")                                                      \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                        \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                                       \
  X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                        \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                           \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing")     \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,                                                         \
    "operation failed due to a previous error during capture")                                    \
  X(CUDA_ERROR_UNKNOWN, "unknown error")

/* Unknown codes give CUDA_ERROR_INVALID_VALUE and a NULL string, as on the real driver. */
FC_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
#define FC_ERROR_STRING(code, text)                                                                \
  case code: *pStr = text; return CUDA_SUCCESS;
    FC_ERRORS(FC_ERROR_STRING)
#undef FC_ERROR_STRING
  default: *pStr = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

FC_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
#define FC_ERROR_NAME(code, text)                                                                  \
  case code: *pStr = #code; return CUDA_SUCCESS;
    FC_ERRORS(FC_ERROR_NAME)
#undef FC_ERROR_NAME
  default: *pStr = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

/* The private tables the real libcudart needs are not provided: the real runtime then stops with
 * error 801 (interposition.md 2.2), which tests that drive it through this driver expect. */
FC_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
  (void)pExportTableId;
  if (ppExportTable) *ppExportTable = NULL;
  fc_log("cuGetExportTable status=%d", (int)CUDA_ERROR_NOT_SUPPORTED);
  return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- cuGetProcAddress ---- */

/* The exported variant for each (base name, version, flags & PTDS); the rows of one name are
 * contiguous, newest first. A PTDS request below ptds_since gets the legacy-stream variant. */
typedef struct fc_variant_s {
  const char *name;
  int since;
  const char *export_name;
  const char *ptds_name;
  int ptds_since;
} fc_variant_t;

static const fc_variant_t fc_variants[] = {
    {"cuInit", 2000, "cuInit", NULL, 0},
    {"cuDriverGetVersion", 2020, "cuDriverGetVersion", NULL, 0},
    {"cuDeviceGet", 2000, "cuDeviceGet", NULL, 0},
    {"cuDeviceGetCount", 2000, "cuDeviceGetCount", NULL, 0},
    {"cuDeviceGetName", 2000, "cuDeviceGetName", NULL, 0},
    {"cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2", NULL, 0},
    {"cuDeviceTotalMem", 2000, "cuDeviceTotalMem", NULL, 0},
    {"cuDeviceGetAttribute", 2000, "cuDeviceGetAttribute", NULL, 0},
    {"cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain", NULL, 0},
    {"cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2", NULL, 0},
    {"cuDevicePrimaryCtxRelease", 7000, "cuDevicePrimaryCtxRelease", NULL, 0},
    {"cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2", NULL, 0},
    {"cuDevicePrimaryCtxReset", 7000, "cuDevicePrimaryCtxReset", NULL, 0},
    {"cuDevicePrimaryCtxGetState", 7000, "cuDevicePrimaryCtxGetState", NULL, 0},
    {"cuCtxCreate", 12050, "cuCtxCreate_v4", NULL, 0},
    {"cuCtxCreate", 11040, "cuCtxCreate_v3", NULL, 0},
    {"cuCtxCreate", 3020, "cuCtxCreate_v2", NULL, 0},
    {"cuCtxCreate", 2000, "cuCtxCreate", NULL, 0},
    {"cuCtxDestroy", 4000, "cuCtxDestroy_v2", NULL, 0},
    {"cuCtxDestroy", 2000, "cuCtxDestroy", NULL, 0},
    {"cuCtxGetCurrent", 4000, "cuCtxGetCurrent", NULL, 0},
    {"cuCtxSetCurrent", 4000, "cuCtxSetCurrent", NULL, 0},
    {"cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2", NULL, 0},
    {"cuCtxPushCurrent", 2000, "cuCtxPushCurrent", NULL, 0},
    {"cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2", NULL, 0},
    {"cuCtxPopCurrent", 2000, "cuCtxPopCurrent", NULL, 0},
    {"cuCtxGetDevice", 13000, "cuCtxGetDevice_v2", NULL, 0},
    {"cuCtxGetDevice", 2000, "cuCtxGetDevice", NULL, 0},
    {"cuCtxSynchronize", 13000, "cuCtxSynchronize_v2", NULL, 0},
    {"cuCtxSynchronize", 2000, "cuCtxSynchronize", NULL, 0},
    {"cuMemGetInfo", 3020, "cuMemGetInfo_v2", NULL, 0},
    {"cuMemGetInfo", 2000, "cuMemGetInfo", NULL, 0},
    {"cuMemAlloc", 3020, "cuMemAlloc_v2", NULL, 0},
    {"cuMemAlloc", 2000, "cuMemAlloc", NULL, 0},
    {"cuMemAllocPitch", 3020, "cuMemAllocPitch_v2", NULL, 0},
    {"cuMemAllocPitch", 2000, "cuMemAllocPitch", NULL, 0},
    {"cuMemFree", 3020, "cuMemFree_v2", NULL, 0},
    {"cuMemFree", 2000, "cuMemFree", NULL, 0},
    {"cuMemGetAddressRange", 3020, "cuMemGetAddressRange_v2", NULL, 0},
    {"cuMemGetAddressRange", 2000, "cuMemGetAddressRange", NULL, 0},
    {"cuMemAllocManaged", 6000, "cuMemAllocManaged", NULL, 0},
    {"cuMemAllocAsync", 11020, "cuMemAllocAsync", "cuMemAllocAsync_ptsz", 11020},
    {"cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz",
     11020},
    {"cuMemFreeAsync", 11020, "cuMemFreeAsync", "cuMemFreeAsync_ptsz", 11020},
    {"cuMemHostAlloc", 2020, "cuMemHostAlloc", NULL, 0},
    {"cuMemGetAllocationGranularity", 10020, "cuMemGetAllocationGranularity", NULL, 0},
    {"cuMemCreate", 10020, "cuMemCreate", NULL, 0},
    {"cuMemRelease", 10020, "cuMemRelease", NULL, 0},
    {"cuMemAddressReserve", 10020, "cuMemAddressReserve", NULL, 0},
    {"cuMemAddressFree", 10020, "cuMemAddressFree", NULL, 0},
    {"cuMemMap", 10020, "cuMemMap", NULL, 0},
    {"cuMemUnmap", 10020, "cuMemUnmap", NULL, 0},
    {"cuMemSetAccess", 10020, "cuMemSetAccess", NULL, 0},
    {"cuDeviceGetDefaultMemPool", 11020, "cuDeviceGetDefaultMemPool", NULL, 0},
    {"cuDeviceGetMemPool", 11020, "cuDeviceGetMemPool", NULL, 0},
    {"cuDeviceSetMemPool", 11020, "cuDeviceSetMemPool", NULL, 0},
    {"cuMemPoolCreate", 11020, "cuMemPoolCreate", NULL, 0},
    {"cuMemPoolDestroy", 11020, "cuMemPoolDestroy", NULL, 0},
    {"cuMemPoolTrimTo", 11020, "cuMemPoolTrimTo", NULL, 0},
    {"cuMemPoolGetAttribute", 11020, "cuMemPoolGetAttribute", NULL, 0},
    {"cuMemPoolSetAttribute", 11020, "cuMemPoolSetAttribute", NULL, 0},
    {"cuGraphCreate", 10000, "cuGraphCreate", NULL, 0},
    {"cuGraphAddMemAllocNode", 11040, "cuGraphAddMemAllocNode", NULL, 0},
    {"cuGraphAddMemFreeNode", 11040, "cuGraphAddMemFreeNode", NULL, 0},
    {"cuGraphInstantiateWithFlags", 11040, "cuGraphInstantiateWithFlags", NULL, 0},
    {"cuGraphInstantiate", 11000, "cuGraphInstantiate_v2", NULL, 0},
    {"cuGraphInstantiate", 10000, "cuGraphInstantiate", NULL, 0},
    {"cuGraphInstantiateWithParams", 12000, "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz", 12000},
    {"cuGraphLaunch", 10000, "cuGraphLaunch", "cuGraphLaunch_ptsz", 10000},
    {"cuGraphUpload", 11010, "cuGraphUpload", "cuGraphUpload_ptsz", 11010},
    {"cuGraphExecDestroy", 10000, "cuGraphExecDestroy", NULL, 0},
    {"cuGraphDestroy", 10000, "cuGraphDestroy", NULL, 0},
    {"cuDeviceGraphMemTrim", 11040, "cuDeviceGraphMemTrim", NULL, 0},
    {"cuDeviceGetGraphMemAttribute", 11040, "cuDeviceGetGraphMemAttribute", NULL, 0},
    {"cuDeviceSetGraphMemAttribute", 11040, "cuDeviceSetGraphMemAttribute", NULL, 0},
    {"cuArrayCreate", 3020, "cuArrayCreate_v2", NULL, 0},
    {"cuArray3DCreate", 3020, "cuArray3DCreate_v2", NULL, 0},
    {"cuArrayDestroy", 2000, "cuArrayDestroy", NULL, 0},
    {"cuMipmappedArrayCreate", 5000, "cuMipmappedArrayCreate", NULL, 0},
    {"cuMipmappedArrayDestroy", 5000, "cuMipmappedArrayDestroy", NULL, 0},
    {"cuMemAllocHost", 3020, "cuMemAllocHost_v2", NULL, 0},
    {"cuMemAllocHost", 2000, "cuMemAllocHost", NULL, 0},
    {"cuMemFreeHost", 2000, "cuMemFreeHost", NULL, 0},
    {"cuMemcpy", 4000, "cuMemcpy", "cuMemcpy_ptds", 7000},
    {"cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", 7000},
    {"cuMemcpyHtoD", 2000, "cuMemcpyHtoD", NULL, 0},
    {"cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds", 7000},
    {"cuMemcpyDtoH", 2000, "cuMemcpyDtoH", NULL, 0},
    {"cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds", 7000},
    {"cuMemcpyDtoD", 2000, "cuMemcpyDtoD", NULL, 0},
    {"cuMemsetD8", 3020, "cuMemsetD8_v2", "cuMemsetD8_v2_ptds", 7000},
    {"cuMemsetD8", 2000, "cuMemsetD8", NULL, 0},
    {"cuPointerGetAttribute", 4000, "cuPointerGetAttribute", NULL, 0},
    {"cuPointerGetAttributes", 7000, "cuPointerGetAttributes", NULL, 0},
    {"cuIpcGetMemHandle", 4010, "cuIpcGetMemHandle", NULL, 0},
    {"cuIpcOpenMemHandle", 11000, "cuIpcOpenMemHandle_v2", NULL, 0},
    {"cuIpcOpenMemHandle", 4010, "cuIpcOpenMemHandle", NULL, 0},
    {"cuIpcCloseMemHandle", 4010, "cuIpcCloseMemHandle", NULL, 0},
    {"cuStreamCreate", 2000, "cuStreamCreate", NULL, 0},
    {"cuStreamCreateWithPriority", 5050, "cuStreamCreateWithPriority", NULL, 0},
    {"cuGreenCtxStreamCreate", 12050, "cuGreenCtxStreamCreate", NULL, 0},
    {"cuStreamDestroy", 4000, "cuStreamDestroy_v2", NULL, 0},
    {"cuStreamDestroy", 2000, "cuStreamDestroy", NULL, 0},
    {"cuStreamSynchronize", 2000, "cuStreamSynchronize", "cuStreamSynchronize_ptsz", 7000},
    {"cuStreamQuery", 2000, "cuStreamQuery", "cuStreamQuery_ptsz", 7000},
    {"cuEventCreate", 2000, "cuEventCreate", NULL, 0},
    {"cuEventRecord", 2000, "cuEventRecord", "cuEventRecord_ptsz", 7000},
    {"cuEventQuery", 2000, "cuEventQuery", NULL, 0},
    {"cuEventSynchronize", 2000, "cuEventSynchronize", NULL, 0},
    {"cuEventDestroy", 4000, "cuEventDestroy_v2", NULL, 0},
    {"cuEventDestroy", 2000, "cuEventDestroy", NULL, 0},
    {"cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz",
     10010},
    {"cuStreamBeginCapture", 10000, "cuStreamBeginCapture", "cuStreamBeginCapture_ptsz", 10000},
    {"cuStreamEndCapture", 10000, "cuStreamEndCapture", "cuStreamEndCapture_ptsz", 10000},
    {"cuStreamIsCapturing", 10000, "cuStreamIsCapturing", "cuStreamIsCapturing_ptsz", 10000},
    {"cuThreadExchangeStreamCaptureMode", 10010, "cuThreadExchangeStreamCaptureMode", NULL, 0},
    {"cuGetErrorString", 6000, "cuGetErrorString", NULL, 0},
    {"cuGetErrorName", 6000, "cuGetErrorName", NULL, 0},
    {"cuGetProcAddress", 12000, "cuGetProcAddress_v2", NULL, 0},
    {"cuGetProcAddress", 11030, "cuGetProcAddress", NULL, 0},
    {"cuGetExportTable", 3000, "cuGetExportTable", NULL, 0},
};

/* Every base name the CUDA 13.0 runtime asks for (cudart13-getprocaddress-requests.txt),
 * generated by tests/fakes/CMakeLists.txt. */
static const char *const fc_known_names[] = {
#include "fake_cuda_known_names.inc"
};

/* The answer to every known name the fake does not implement. Called through a pointer of the
 * caller's type; on the x86-64 and AArch64 ABIs ignoring the arguments is harmless. */
static CUresult fc_not_supported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

/* The driver's own handle. RTLD_NOLOAD finds the copy already loaded (by its SONAME), whichever
 * path loaded it; the reference it takes is kept for the life of the process. */
static void *fc_self;
static pthread_once_t fc_self_once = PTHREAD_ONCE_INIT;

static void fc_self_open(void) {
  fc_self = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (!fc_self) {
    Dl_info info;
    if (dladdr((void *)&fc_self, &info) && info.dli_fname)
      fc_self = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  }
}

/* Resolved by name through dlsym on purpose: a preloaded dlsym override sees this call, as it sees
 * the real driver's internal lookups (interposition.md 4.2, pitfall 2). */
static void *fc_self_sym(const char *name) {
  pthread_once(&fc_self_once, fc_self_open);
  return dlsym(fc_self ? fc_self : RTLD_DEFAULT, name);
}

static CUresult fc_resolve(const char *api, const char *symbol, void **pfn, int cudaVersion,
                           cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus) {
  fc_lock();
  g.counters.proc_address_lookups++;
  fc_unlock();

  CUresult rc = CUDA_SUCCESS;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const char *export_name = NULL;
  void *p = NULL;
  if (!symbol || !pfn) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else if (cudaVersion > FC_DRIVER_VERSION) {
    rc = CUDA_ERROR_INVALID_VALUE; /* "greater than the driver version" (cuda.h) */
  } else {
    bool named = false;
    for (size_t i = 0; i < sizeof fc_variants / sizeof *fc_variants; i++) {
      const fc_variant_t *v = &fc_variants[i];
      if (strcmp(v->name, symbol) != 0) continue;
      named = true;
      if (cudaVersion < v->since) continue;
      bool ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && v->ptds_name &&
                  cudaVersion >= v->ptds_since;
      export_name = ptds ? v->ptds_name : v->export_name;
      break;
    }
    if (export_name) {
      p = fc_self_sym(export_name);
      status = p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    } else if (named) {
      status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    } else if (*symbol) {
      for (size_t i = 0; i < sizeof fc_known_names / sizeof *fc_known_names; i++) {
        if (strcmp(fc_known_names[i], symbol) != 0) continue;
        CUresult (*stub)(void) = fc_not_supported;
        memcpy(&p, &stub, sizeof p); /* ISO C has no cast from function to object pointer */
        export_name = "(not supported)";
        status = CU_GET_PROC_ADDRESS_SUCCESS;
        break;
      }
    }
  }
  /* Not found and too old still succeed with NULL: callers decide from symbolStatus (cuda.h). */
  if (pfn) *pfn = p;
  if (symbolStatus) *symbolStatus = status;
  fc_log("%s name=%s ver=%d flags=%llu status=%d found=%d symbol_status=%d export=%s", api,
         symbol ? symbol : "(null)", cudaVersion, (unsigned long long)flags, (int)rc, p != NULL,
         (int)status, export_name ? export_name : "-");
  return rc;
}

FC_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus) {
  return fc_resolve("cuGetProcAddress_v2", symbol, pfn, cudaVersion, flags, symbolStatus);
}

FC_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags) {
  return fc_resolve("cuGetProcAddress", symbol, pfn, cudaVersion, flags, NULL);
}

/* ======================================================================================== */
/* ---- control API (fake_cuda_control.h) ---- */

FC_EXPORT void fake_cuda_get_counters(fake_cuda_counters_t *out) {
  if (!out) return;
  fc_lock();
  *out = g.counters;
  fc_unlock();
}

FC_EXPORT void fake_cuda_reset_counters(void) {
  fc_lock();
  size_t in_use = g.counters.bytes_in_use;
  g.counters = (fake_cuda_counters_t){.bytes_in_use = in_use};
  fc_unlock();
}

FC_EXPORT void fake_cuda_set_manual_events(int manual) {
  fc_lock();
  g.manual_events = manual != 0;
  fc_unlock();
}

FC_EXPORT void fake_cuda_complete_events(void) {
  fc_lock();
  for (size_t i = 0; i < g.events.n; i++) {
    struct CUevent_st *e = (struct CUevent_st *)g.events.v[i];
    if (e->state == FC_EVENT_PENDING) e->state = FC_EVENT_COMPLETE;
  }
  fc_unlock();
}

FC_EXPORT void fake_cuda_set_sticky_error(int status) {
  fc_lock();
  g.sticky = (CUresult)status;
  fc_unlock();
}

FC_EXPORT void fake_cuda_set_capacity(size_t bytes) {
  fc_lock();
  g.capacity = bytes;
  fc_unlock();
}

/* fc_alloc_hook: called by cuMemAlloc_v2 first, outside the driver's lock, so that a test can stop
 * or crash a thread inside the driver (and so inside whatever its caller holds). */
FC_EXPORT void fake_cuda_set_alloc_hook(fake_cuda_alloc_hook_t hook) { atomic_store(&fc_alloc_hook, hook); }

FC_EXPORT void fake_cuda_set_free_hook(fake_cuda_free_hook_t hook) { atomic_store(&fc_free_hook, hook); }

/* SPDX-License-Identifier: Apache-2.0 */
#include "device/driver_watch.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/cs_deadline.h"
#include "device/driver_query.h"
#include "device/streams.h"

/* What one device's readers see. */
typedef struct cs_dw_record_s {
  cs_snap_driver_last_t last;
  cs_snap_driver_peak_t peak;
} cs_dw_record_t;

enum { CS_DW_WORDS = (sizeof(cs_dw_record_t) + sizeof(uint64_t) - 1) / sizeof(uint64_t) };

/* The seen bytes in three parts: the remainder at the peak needs the first two apart from the
 * third, which the driver reports inside its pools' reserved bytes. */
typedef enum { CS_DW_CACHE, CS_DW_COUNTED, CS_DW_POOLED, CS_DW_PARTS } cs_dw_part_t;

/* Writers (the slow paths, snapshots) hold `writing`, a spin flag held for a few stores and never
 * across a driver call; they change `cur` and publish it through the latch: seq odd, copy[0]
 * written, seq even, copy[1] written. A reader reads copy[seq & 1], which is never the one being
 * written, and retries when seq moved meanwhile. No signal handler writes. */
typedef struct cs_dw_device_s {
  _Atomic int64_t seen[CS_DW_PARTS];   /* bytes now */
  _Atomic uint64_t last_query_ns;      /* CLOCK_MONOTONIC of the last slow-path query; 0: none */
  atomic_bool writing;
  cs_dw_record_t cur;                  /* under `writing` */
  atomic_uint seq;
  _Atomic uint64_t copy[2][CS_DW_WORDS];
} cs_dw_device_t;

static cs_dw_device_t cs_dw[CS_SNAP_MAX_DEVICES];
static _Atomic uint64_t cs_dw_pending; /* bit d: device d's high has no answer */
static _Atomic(cs_driver_watch_with_device_fn) cs_dw_with_device; /* cs_driver_watch_use */

void cs_driver_watch_use(cs_driver_watch_with_device_fn with_device) {
  atomic_store_explicit(&cs_dw_with_device, with_device, memory_order_release);
}

static cs_dw_device_t *cs_dw_of(int device) {
  return device >= 0 && device < CS_SNAP_MAX_DEVICES ? &cs_dw[device] : NULL;
}

static uint64_t cs_dw_now_us(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

/* Seen bytes; *accounted: of those, the cache's and the kinds the driver counts directly. */
static uint64_t cs_dw_seen(cs_dw_device_t *d, uint64_t *accounted) {
  int64_t cache = atomic_load_explicit(&d->seen[CS_DW_CACHE], memory_order_relaxed);
  int64_t counted = atomic_load_explicit(&d->seen[CS_DW_COUNTED], memory_order_relaxed);
  int64_t pooled = atomic_load_explicit(&d->seen[CS_DW_POOLED], memory_order_relaxed);
  *accounted = cache + counted > 0 ? (uint64_t)(cache + counted) : 0;
  return cache + counted + pooled > 0 ? (uint64_t)(cache + counted + pooled) : 0;
}

static void cs_dw_lock(cs_dw_device_t *d) {
  while (atomic_exchange_explicit(&d->writing, true, memory_order_acquire)) cs_deadline_pause();
}

static void cs_dw_unlock(cs_dw_device_t *d) { atomic_store_explicit(&d->writing, false, memory_order_release); }

/* pre: d locked. */
static void cs_dw_publish(cs_dw_device_t *d) {
  uint64_t w[CS_DW_WORDS] = {0};
  memcpy(w, &d->cur, sizeof d->cur);
  for (int k = 0; k < 2; k++) {
    /* release: the other copy's stores are seen by whoever sees this count */
    atomic_fetch_add_explicit(&d->seq, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release); /* the count before this copy's stores */
    for (size_t i = 0; i < CS_DW_WORDS; i++) atomic_store_explicit(&d->copy[k][i], w[i], memory_order_relaxed);
  }
}

/* A whole record, or false when writers kept moving (never so far: at most two publishes can
 * overlap one read). */
static bool cs_dw_read(cs_dw_device_t *d, cs_dw_record_t *out) {
  for (int tries = 0; tries < 16; tries++) {
    unsigned seq = atomic_load_explicit(&d->seq, memory_order_acquire);
    uint64_t w[CS_DW_WORDS];
    for (size_t i = 0; i < CS_DW_WORDS; i++) w[i] = atomic_load_explicit(&d->copy[seq & 1][i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&d->seq, memory_order_relaxed) == seq) {
      memcpy(out, w, sizeof *out);
      return true;
    }
  }
  return false;
}

static bool cs_dw_peak_unanswered(const cs_snap_driver_peak_t *p) {
  return p->peak_seen > 0 && !(p->answered && p->answer_seen == p->peak_seen);
}

/* pre: d locked. */
static void cs_dw_set_pending(int device, const cs_snap_driver_peak_t *p) {
  uint64_t bit = UINT64_C(1) << device;
  if (cs_dw_peak_unanswered(p)) atomic_fetch_or_explicit(&cs_dw_pending, bit, memory_order_relaxed);
  else atomic_fetch_and_explicit(&cs_dw_pending, ~bit, memory_order_relaxed);
}

/* The seen bytes grew to `seen`: a new high raises the peak. Returns whether seen is the peak's
 * level and that peak has no answer. */
static bool cs_dw_note(cs_dw_device_t *d, int device, uint64_t seen) {
  cs_dw_lock(d);
  cs_snap_driver_peak_t *p = &d->cur.peak;
  if (seen > p->peak_seen) {
    p->peak_seen = seen;
    p->peak_time_us = cs_dw_now_us();
    cs_dw_set_pending(device, p);
    cs_dw_publish(d);
  }
  bool ask = seen == p->peak_seen && cs_dw_peak_unanswered(p);
  cs_dw_unlock(d);
  return ask;
}

/* Whether this thread may ask the driver now: once per interval per device, whoever comes first. */
static bool cs_dw_claim(cs_dw_device_t *d) {
  uint64_t now = cs_deadline_now_ns();
  uint64_t last = atomic_load_explicit(&d->last_query_ns, memory_order_relaxed);
  if (last && now - last < (uint64_t)CS_DRIVER_WATCH_INTERVAL_MS * 1000000u) return false;
  return atomic_compare_exchange_strong_explicit(&d->last_query_ns, &last, now, memory_order_relaxed,
                                                 memory_order_relaxed);
}

/* An answer taken while `seen` bytes (accounted of them) were seen: the last answer; and the
 * peak's when seen was the high when it was asked (at_high) and comes closer to the peak than the
 * one kept. */
static void cs_dw_store(cs_dw_device_t *d, int device, const cs_snap_driver_t *a, uint64_t seen, uint64_t accounted,
                        bool at_high) {
  uint64_t now = cs_dw_now_us();
  cs_dw_lock(d);
  d->cur.last = (cs_snap_driver_last_t){.known = true, .time_us = now, .accounted = accounted, .answer = *a};
  cs_snap_driver_peak_t *p = &d->cur.peak;
  if (at_high && seen <= p->peak_seen && (!p->answered || seen > p->answer_seen)) {
    p->answered = true;
    p->answer_seen = seen;
    p->answer_accounted = accounted;
    p->answer_time_us = now;
    p->answer = *a;
  }
  cs_dw_set_pending(device, p);
  cs_dw_publish(d);
  cs_dw_unlock(d);
}

/* pre: a context of device is current. */
static void cs_dw_ask(cs_dw_device_t *d, int device, uint64_t seen, uint64_t accounted) {
  cs_snap_driver_t a;
  cs_driver_query_device(device, &a);
  if (a.driver_known) cs_dw_store(d, device, &a, seen, accounted, true);
}

/* ---- the cache (device/backend_cuda.c) ---- */

void cs_driver_watch_cache_grew(int device, uint64_t bytes, bool may_ask) {
  cs_dw_device_t *d = cs_dw_of(device);
  if (!d) return;
  atomic_fetch_add_explicit(&d->seen[CS_DW_CACHE], (int64_t)bytes, memory_order_relaxed);
  uint64_t accounted, seen = cs_dw_seen(d, &accounted);
  if (cs_dw_note(d, device, seen) && may_ask && cs_dw_claim(d)) cs_dw_ask(d, device, seen, accounted);
}

void cs_driver_watch_cache_releasing(int device) {
  cs_dw_device_t *d = cs_dw_of(device);
  if (!d || !(atomic_load_explicit(&cs_dw_pending, memory_order_relaxed) & (UINT64_C(1) << device))) return;
  uint64_t accounted, seen = cs_dw_seen(d, &accounted);
  if (cs_dw_note(d, device, seen) && cs_dw_claim(d)) cs_dw_ask(d, device, seen, accounted);
}

void cs_driver_watch_cache_released(int device, uint64_t bytes) {
  cs_dw_device_t *d = cs_dw_of(device);
  if (d) atomic_fetch_sub_explicit(&d->seen[CS_DW_CACHE], (int64_t)bytes, memory_order_relaxed);
}

/* ---- memory passed through (device/passthrough_mem.c) ---- */

void cs_driver_watch_passthrough(int device, cs_passthrough_kind_t kind, int64_t delta) {
  cs_dw_device_t *d = cs_dw_of(device);
  if (!d) return;
  cs_dw_part_t part;
  if (cs_passthrough_kind_counted(kind)) part = CS_DW_COUNTED;
  else if (cs_passthrough_kind_pooled(kind)) part = CS_DW_POOLED;
  else return; /* mappings (of counted handles), IPC imports (another process's), host memory */
  atomic_fetch_add_explicit(&d->seen[part], delta, memory_order_relaxed);
  if (delta <= 0) return;
  uint64_t accounted, seen = cs_dw_seen(d, &accounted);
  (void)cs_dw_note(d, device, seen); /* asked in cs_driver_watch_poll, out of passthrough_mem.c's lock */
}

typedef struct cs_dw_poll_s {
  cs_dw_device_t *d;
  uint64_t seen, accounted;
} cs_dw_poll_t;

static void cs_dw_poll_device(int device, void *arg) {
  cs_dw_poll_t *p = arg;
  cs_dw_ask(p->d, device, p->seen, p->accounted);
}

void cs_driver_watch_poll(void) {
  uint64_t pending = atomic_load_explicit(&cs_dw_pending, memory_order_relaxed);
  cs_driver_watch_with_device_fn with_device = atomic_load_explicit(&cs_dw_with_device, memory_order_acquire);
  if (!pending || !with_device || cs_streams_capture_underway()) return;
  while (pending) {
    int device = __builtin_ctzll(pending);
    pending &= pending - 1;
    cs_dw_device_t *d = &cs_dw[device];
    cs_dw_poll_t p = {.d = d};
    p.seen = cs_dw_seen(d, &p.accounted);
    if (!cs_dw_note(d, device, p.seen) || !cs_dw_claim(d)) continue;
    /* one try at the registry lock: the caller may hold anything (never wait here) */
    with_device(device, cs_deadline_now_ns(), cs_dw_poll_device, &p);
  }
}

/* ---- snapshots ---- */

void cs_driver_watch_answer(int device, const cs_snap_driver_t *answer) {
  cs_dw_device_t *d = cs_dw_of(device);
  if (!d) return;
  uint64_t accounted, seen = cs_dw_seen(d, &accounted);
  bool at_high = cs_dw_note(d, device, seen);
  cs_dw_store(d, device, answer, seen, accounted, at_high);
}

void cs_driver_watch_copy(cs_snap_state_t *s, bool with_last) {
  for (int device = 0; device < s->device_count && device < CS_SNAP_MAX_DEVICES; device++) {
    cs_dw_record_t r;
    if (!cs_dw_read(&cs_dw[device], &r)) continue;
    s->memory[device].peak = r.peak;
    if (with_last) s->memory[device].last = r.last;
  }
}

bool cs_driver_watch_last_used(int device, uint64_t *used, uint64_t *time_us) {
  cs_dw_device_t *d = cs_dw_of(device);
  cs_dw_record_t r;
  if (!d || !cs_dw_read(d, &r) || !r.last.known || !r.last.answer.driver_known) return false;
  const cs_snap_driver_t *a = &r.last.answer;
  *used = a->driver_total > a->driver_free ? a->driver_total - a->driver_free : 0;
  *time_us = r.last.time_us;
  return true;
}

void cs_driver_watch_postfork_child(void) {
  memset(cs_dw, 0, sizeof cs_dw);
  atomic_store(&cs_dw_pending, 0);
}

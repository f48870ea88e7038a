/* SPDX-License-Identifier: Apache-2.0 */
/* 16 threads allocating and freeing on one allocator, each checking that its blocks are never
 * handed to anyone else meanwhile (it writes a tag into a host shadow of each block), while the
 * allocator's events go to a history in per-thread chunks (record/thread_log.h, as
 * device/recorder.c keeps one per context) with no lock of its own, and another thread copies
 * that history now and then under the allocator's lock, as a snapshot does. Every copy must replay:
 * per block, alloc, free_requested and free_completed in turn, whichever threads made them. Built
 * under TSan by scripts/test.sh, where a missing lock (an event emitted outside the allocator's
 * lock) shows up as a data race. */
#include "tests/unit/alloc_check.h"

#include <pthread.h>
#include <stdatomic.h>

#include "common/cs_error.h"
#include <stdlib.h>

#include "record/thread_log.h"
#include "snapshot/snapshot.h"

#define MiB CS_MiB

enum { THREADS = 16, ROUNDS = 3000, HELD = 8 };

/* Who holds each 512-byte unit of the fake address space (a host shadow of the device). */
#define SHADOW_UNITS ((size_t)(1u << 22)) /* 2 GiB of fake address space */
static _Atomic int shadow[SHADOW_UNITS];
static uintptr_t shadow_base;

static alloc_fixture_t *fixture;
static pthread_mutex_t backend_lock = PTHREAD_MUTEX_INITIALIZER;

/* The history, as device/recorder.c keeps one per context: small, so it wraps many times. */
enum { HISTORY = 4096 };
static cs_thread_log_t history;
static atomic_bool workers_done;

static void record(void *ctx, const cs_trace_event_t *ev) {
  (void)ctx;
  cs_snap_log_event(&history, 0, ev);
}

typedef struct block_event_s {
  uint64_t addr;
  size_t at;
  cs_action_t action;
} block_event_t;

static int by_block_then_time(const void *pa, const void *pb) {
  const block_event_t *a = pa, *b = pb;
  if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
  return a->at < b->at ? -1 : a->at > b->at;
}

/* Each block's events in the copy follow alloc -> free_requested -> free_completed -> alloc ...:
 * the merge of the threads' chunks kept the allocator's order. */
static void assert_replays(const cs_ring_entry_t *copy, size_t n) {
  block_event_t *ev = calloc(n + 1, sizeof *ev);
  assert_non_null(ev);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    cs_action_t a = cs_ring_entry_action(&copy[i]);
    if (a == CS_ACTION_ALLOC || a == CS_ACTION_FREE_REQUESTED || a == CS_ACTION_FREE_COMPLETED)
      ev[m++] = (block_event_t){.addr = copy[i].addr, .at = i, .action = a};
  }
  qsort(ev, m, sizeof *ev, by_block_then_time);
  static const cs_action_t next[CS_ACTION_COUNT] = {[CS_ACTION_ALLOC] = CS_ACTION_FREE_REQUESTED,
                                                    [CS_ACTION_FREE_REQUESTED] = CS_ACTION_FREE_COMPLETED,
                                                    [CS_ACTION_FREE_COMPLETED] = CS_ACTION_ALLOC};
  for (size_t i = 1; i < m; i++)
    if (ev[i].addr == ev[i - 1].addr) assert_int_equal(ev[i].action, next[ev[i - 1].action]);
  free(ev);
}

/* What a snapshot does, over and over while the workers run. */
static void *copier(void *arg) {
  (void)arg;
  size_t room = (HISTORY / CS_THREAD_LOG_CHUNK + CS_THREAD_LOG_SPARE + 1) * CS_THREAD_LOG_CHUNK;
  cs_ring_entry_t *copy = calloc(room, sizeof *copy);
  assert_non_null(copy);
  while (!atomic_load(&workers_done)) {
    uint64_t dropped;
    cs_allocator_lock(fixture->a);
    size_t n = cs_thread_log_copy(&history, copy, NULL, &dropped);
    cs_allocator_unlock(fixture->a);
    for (size_t i = 0; i < n; i++) assert_true(cs_ring_entry_action(&copy[i]) < CS_ACTION_COUNT);
    assert_replays(copy, n);
  }
  free(copy);
  return NULL;
}

static size_t unit_of(uintptr_t addr) { return (size_t)((addr - shadow_base) / 512) % SHADOW_UNITS; }

static void claim(uintptr_t p, size_t size, int tag) {
  for (size_t u = 0; u < (size + 511) / 512; u++) {
    int expected = 0;
    bool free_unit = atomic_compare_exchange_strong(&shadow[(unit_of(p) + u) % SHADOW_UNITS], &expected, tag);
    assert_true(free_unit); /* nobody else may hold this byte */
  }
}

static void release(uintptr_t p, size_t size) {
  for (size_t u = 0; u < (size + 511) / 512; u++) atomic_store(&shadow[(unit_of(p) + u) % SHADOW_UNITS], 0);
}

static void *worker(void *arg) {
  int tag = (int)(intptr_t)arg;
  uint64_t seed = 0x1234567u * (uint64_t)tag + 1;
  uintptr_t held[HELD] = {0};
  size_t sizes[HELD] = {0};
  for (int round = 0; round < ROUNDS; round++) {
    int slot = round % HELD;
    if (held[slot]) {
      release(held[slot], sizes[slot]);
      assert_int_equal(cs_allocator_free(fixture->a, held[slot]), 0);
      held[slot] = 0;
    }
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    size_t size = (seed & 3) ? (size_t)(seed >> 16) % 65536 + 1 : (size_t)(seed >> 16) % (3 * MiB) + 1;
    uintptr_t p = 0;
    int rc = cs_allocator_malloc(fixture->a, size, 0, 0, &p);
    if (rc == -CS_ENOMEM) continue;
    assert_int_equal(rc, 0);
    claim(p, size, tag);
    held[slot] = p;
    sizes[slot] = size;
  }
  for (int i = 0; i < HELD; i++)
    if (held[i]) {
      release(held[i], sizes[i]);
      assert_int_equal(cs_allocator_free(fixture->a, held[i]), 0);
    }
  return NULL;
}

/* The fake backend is not thread-safe; the allocator calls synchronize outside its lock. */
static int locked_sync(void *self) {
  pthread_mutex_lock(&backend_lock);
  int rc = fake_backend_as_backend(self).ops->synchronize(self);
  pthread_mutex_unlock(&backend_lock);
  return rc;
}

static void run_threads(cs_free_mode_t mode) {
  fixture = fixture_new(256 * MiB);
  fixture->conf.free_mode = mode;
  fixture->fb.events_complete_on_record = true;
  static cs_backend_ops_t ops;
  cs_backend_t base = fake_backend_as_backend(&fixture->fb);
  ops = *base.ops;
  ops.synchronize = locked_sync;
  cs_backend_t backend = {.ops = &ops, .self = &fixture->fb};
  assert_int_equal(cs_thread_log_init(&history, HISTORY), 0);
  cs_allocator_observer_t observer = {.on_event = record};
  fixture->a = cs_allocator_create(&fixture->conf, &backend, &observer);
  assert_non_null(fixture->a);
  shadow_base = 0x7f0000000000u;
  atomic_store(&workers_done, false);
  pthread_t t[THREADS], snapshots;
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i + 1)), 0);
  assert_int_equal(pthread_create(&snapshots, NULL, copier, NULL), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  atomic_store(&workers_done, true);
  pthread_join(snapshots, NULL);
  assert_int_equal(stats_of(fixture->a).allocation[CS_STAT_ALL].current, 0);
  uint64_t dropped = 0;
  cs_ring_entry_t *last = calloc(cs_thread_log_room(&history), sizeof *last);
  assert_non_null(last);
  assert_int_equal(cs_thread_log_copy(&history, last, NULL, &dropped), HISTORY); /* every pair left entries */
  assert_true(dropped > 0);
  assert_replays(last, HISTORY);
  free(last);
  cs_thread_log_destroy(&history);
  fixture_free(fixture);
}

static void test_threads_sync_mode(void **state) {
  (void)state;
  run_threads(CS_FREE_SYNC);
}

static void test_threads_fence_mode(void **state) {
  (void)state;
  run_threads(CS_FREE_FENCE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_sync_mode),
      cmocka_unit_test(test_threads_fence_mode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The three free modes against a fake device whose events the test holds incomplete, and the
 * stream-capture rules: no synchronization and no event while a capture is underway. */
#include "tests/unit/alloc_check.h"

#include <pthread.h>

#include "common/cs_error.h"

#define MiB CS_MiB

static alloc_fixture_t *start(cs_free_mode_t mode) {
  alloc_fixture_t *f = fixture_new(64 * MiB);
  f->conf.free_mode = mode;
  fixture_start(f, NULL);
  return f;
}

static cs_block_state_t state_of(cs_allocator_t *a, uintptr_t addr);

typedef struct find_s {
  uintptr_t addr;
  cs_block_state_t state;
  bool found;
} find_t;

static void find_visit(void *ctx, const cs_segment_info_t *s, const cs_block_info_t *b) {
  (void)s;
  find_t *f = ctx;
  if (b->addr == f->addr) {
    f->state = b->state;
    f->found = true;
  }
}

static cs_block_state_t state_of(cs_allocator_t *a, uintptr_t addr) {
  find_t f = {.addr = addr};
  cs_allocator_visit(a, find_visit, &f);
  assert_true(f.found);
  return f.state;
}

/* ---- sync ---- */

static void test_sync_mode_synchronizes_like_cudafree(void **state) {
  (void)state;
  alloc_fixture_t *f = start(CS_FREE_SYNC);
  uintptr_t p = must_alloc(f->a, 4096);
  assert_int_equal(f->fb.syncs, 0);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_int_equal(f->fb.syncs, 1);
  assert_int_equal(f->fb.records, 0);
  /* reusable at once: the synchronization already happened */
  assert_int_equal(state_of(f->a, p), CS_BLOCK_FREE);
  assert_int_equal(must_alloc(f->a, 4096), p);
  fixture_free(f);
}

static void test_sync_mode_reports_earlier_errors_at_free(void **state) {
  (void)state;
  alloc_fixture_t *f = start(CS_FREE_SYNC);
  uintptr_t p = must_alloc(f->a, 4096);
  f->fb.sync_status = 700; /* CUDA_ERROR_ILLEGAL_ADDRESS from an earlier kernel */
  assert_int_equal(cs_allocator_free(f->a, p), 700);
  /* the block is freed all the same: the error belongs to earlier work */
  assert_int_equal(stats_of(f->a).allocation[CS_STAT_ALL].current, 0);
  assert_false(cs_allocator_owns(f->a, p));
  /* a pointer that is not ours is still refused as such */
  assert_int_equal(cs_allocator_free(f->a, 0x1234000), -CS_EINVAL);
  f->fb.sync_status = 0;
  fixture_free(f);
}

/* A free waits only for an address the allocator handed out (issue 36: a thread's last block is
 * known without the lookup, while no segment has been released since): not for one freed twice,
 * nor for one freed by another thread whose segment was released meanwhile. */
typedef struct other_free_s {
  cs_allocator_t *a;
  uintptr_t p;
  int rc;
} other_free_t;

static void *free_in_other_thread(void *arg) {
  other_free_t *o = arg;
  o->rc = cs_allocator_free(o->a, o->p);
  return NULL;
}

static void test_sync_mode_waits_only_for_its_own_blocks(void **state) {
  (void)state;
  alloc_fixture_t *f = start(CS_FREE_SYNC);
  uintptr_t p = must_alloc(f->a, 4096);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_int_equal(f->fb.syncs, 1);
  assert_int_equal(cs_allocator_free(f->a, p), -CS_EINVAL); /* twice */
  assert_int_equal(f->fb.syncs, 1);
  /* this thread's last block, freed by another thread, its segment released */
  uintptr_t q = must_alloc(f->a, 4096);
  other_free_t o = {.a = f->a, .p = q};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, free_in_other_thread, &o), 0);
  pthread_join(t, NULL);
  assert_int_equal(o.rc, 0);
  assert_int_equal(f->fb.syncs, 2);
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  assert_int_equal(stats_of(f->a).segment[CS_STAT_ALL].current, 0);
  assert_int_equal(cs_allocator_free(f->a, q), -CS_EINVAL);
  assert_int_equal(f->fb.syncs, 2);
  fixture_free(f);
}

/* ---- fence ---- */

static void test_fence_mode_reuses_nothing_before_events_complete(void **state) {
  (void)state;
  alloc_fixture_t *f = start(CS_FREE_FENCE);
  f->fb.streams[1] = 0x5000; /* a live non-blocking stream beside the legacy one */
  f->fb.stream_count = 2;
  uintptr_t p = must_alloc(f->a, 4096);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_int_equal(f->fb.syncs, 0);
  assert_int_equal(f->fb.records, 2);               /* one event per fence stream */
  assert_int_equal(fake_backend_incomplete_events(&f->fb), 2);
  assert_int_equal(state_of(f->a, p), CS_BLOCK_PENDING);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.allocation[CS_STAT_ALL].current, 0);   /* at the free request */
  assert_int_equal(st.active[CS_STAT_ALL].current, 1);       /* until the free completes */

  /* the device is still busy: the same size must come from elsewhere */
  uintptr_t q = must_alloc(f->a, 4096);
  assert_true(q != p);
  assert_int_equal(state_of(f->a, p), CS_BLOCK_PENDING);
  /* one query per allocation at most while the oldest fence is incomplete */
  int queries = f->fb.queries;
  uintptr_t r = must_alloc(f->a, 512);
  assert_int_equal(f->fb.queries - queries, 1);

  fake_backend_complete_events(&f->fb);
  uintptr_t s = must_alloc(f->a, 4096);
  assert_int_equal(s, p);                           /* reused once the events completed */
  assert_int_equal(f->fb.syncs, 0);
  assert_int_equal(cs_allocator_free(f->a, q), 0);
  assert_int_equal(cs_allocator_free(f->a, r), 0);
  assert_int_equal(cs_allocator_free(f->a, s), 0);
  fake_backend_complete_events(&f->fb);
  must_alloc(f->a, 512);                            /* processes the completed fences */
  /* events are reused, not created per free */
  assert_true(f->fb.creates <= 6);
  fixture_free(f);
}

static void test_fence_mode_synchronizes_before_oom(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(8 * MiB);
  f->conf.free_mode = CS_FREE_FENCE;
  fixture_start(f, NULL);
  uintptr_t a = must_alloc(f->a, 3 * MiB);
  uintptr_t b = must_alloc(f->a, 3 * MiB);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  /* the device is full and a's fence incomplete: wait, release a's segment, retry */
  uintptr_t c = must_alloc(f->a, 3 * MiB);
  assert_int_equal(f->fb.syncs, 1);
  assert_int_equal(f->fb.frees, 1);
  assert_false(cs_allocator_owns(f->a, a) && a != c);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.num_sync_all_streams, 1);
  assert_int_equal(st.num_alloc_retries, 1);
  assert_int_equal(st.num_ooms, 0);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_free(f->a, c), 0);
  fixture_free(f);
}

/* A device with `streams` fence streams (past 64, more than a free fences: the allocator falls
 * back to a synchronization), whose synchronize notes whether the allocator's lock was held
 * meanwhile. */
enum { MANY_STREAMS = 100 };
static cs_allocator_t *probed;
static int syncs_under_lock;
static size_t probed_streams;

static int probe_sync(void *self) {
  if (cs_allocator_trylock(probed)) cs_allocator_unlock(probed);
  else syncs_under_lock++;
  return fake_backend_as_backend(self).ops->synchronize(self);
}

static size_t many_streams(void *self, uintptr_t *streams, size_t cap) {
  (void)self;
  for (size_t i = 0; i < cap && i < probed_streams; i++) streams[i] = 0x5000 + 16 * i;
  return probed_streams;
}

static alloc_fixture_t *start_probed(size_t capacity, size_t streams) {
  alloc_fixture_t *f = fixture_new(capacity);
  f->conf.free_mode = CS_FREE_FENCE;
  static cs_backend_ops_t ops;
  ops = *fake_backend_as_backend(&f->fb).ops;
  ops.synchronize = probe_sync;
  ops.fence_streams = many_streams;
  cs_backend_t backend = {.ops = &ops, .self = &f->fb};
  f->a = cs_allocator_create(&f->conf, &backend, NULL);
  assert_non_null(f->a);
  probed = f->a;
  syncs_under_lock = 0;
  probed_streams = streams;
  return f;
}

static void test_fence_mode_past_the_stream_limit_synchronizes_outside_the_lock(void **state) {
  (void)state;
  alloc_fixture_t *f = start_probed(64 * MiB, MANY_STREAMS);
  uintptr_t p = must_alloc(f->a, 4096);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_int_equal(f->fb.syncs, 1);
  assert_int_equal(syncs_under_lock, 0);
  assert_int_equal(f->fb.records, 0);
  /* reusable at once: the synchronization already happened */
  assert_int_equal(state_of(f->a, p), CS_BLOCK_FREE);
  assert_int_equal(must_alloc(f->a, 4096), p);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  fixture_free(f);
}

/* Blocks that could not be fenced and were not synchronized at their free (parked during a
 * capture, fenced after it) wait for the next synchronization: another free's, or the one before
 * an out-of-memory retry. */
static void test_fence_mode_past_the_stream_limit_unfenced_blocks_wait_for_a_sync(void **state) {
  (void)state;
  alloc_fixture_t *f = start_probed(10 * MiB, MANY_STREAMS);
  uintptr_t a = must_alloc(f->a, 3 * MiB);
  uintptr_t b = must_alloc(f->a, 3 * MiB);
  f->fb.capturing = true;
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  f->fb.capturing = false;
  assert_int_equal(f->fb.syncs, 0);
  assert_int_equal(state_of(f->a, a), CS_BLOCK_PENDING);
  /* the allocation after the capture tries to fence a and cannot; the device is full, so the
   * release before the retry synchronizes and a's segment goes back */
  uintptr_t c = must_alloc(f->a, 3 * MiB);
  assert_int_equal(f->fb.syncs, 1);
  assert_int_equal(stats_of(f->a).num_ooms, 0);
  uintptr_t small = must_alloc(f->a, 4096);
  f->fb.capturing = true;
  assert_int_equal(cs_allocator_free(f->a, small), 0);
  f->fb.capturing = false;
  uintptr_t d = must_alloc(f->a, 512); /* tries to fence small, cannot: it waits */
  assert_int_equal(state_of(f->a, small), CS_BLOCK_PENDING);
  assert_int_equal(cs_allocator_free(f->a, d), 0); /* this free's synchronization covers both */
  assert_int_equal(state_of(f->a, small), CS_BLOCK_FREE);
  assert_int_equal(syncs_under_lock, 0);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_free(f->a, c), 0);
  fixture_free(f);
}

/* The waits before releasing the cache (out of memory, empty_cache) let go of the lock too: a
 * thread stuck there (a hung kernel) must not stall the others, nor the process's ending. */
static void test_fence_mode_release_waits_outside_the_lock(void **state) {
  (void)state;
  alloc_fixture_t *f = start_probed(10 * MiB, 2);
  uintptr_t a = must_alloc(f->a, 3 * MiB);
  uintptr_t b = must_alloc(f->a, 3 * MiB);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  assert_int_equal(f->fb.syncs, 0); /* fenced: two events, incomplete */
  uintptr_t c = must_alloc(f->a, 3 * MiB);
  assert_int_equal(f->fb.syncs, 1);
  assert_int_equal(syncs_under_lock, 0);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.num_sync_all_streams, 1);
  assert_int_equal(st.num_alloc_retries, 1);
  assert_int_equal(st.num_ooms, 0);
  assert_int_equal(f->fb.frees, 1); /* a's segment, released before the retry */
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  assert_int_equal(f->fb.syncs, 2);
  assert_int_equal(syncs_under_lock, 0);
  assert_int_equal(f->fb.frees, 2); /* b's segment: the wait covered its fence */
  assert_int_equal(cs_allocator_free(f->a, c), 0);
  fixture_free(f);
}

/* ---- stream ---- */

static void test_stream_mode_reuses_at_once(void **state) {
  (void)state;
  alloc_fixture_t *f = start(CS_FREE_STREAM);
  uintptr_t p = must_alloc(f->a, 4096);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_int_equal(must_alloc(f->a, 4096), p);
  assert_int_equal(f->fb.syncs, 0);
  assert_int_equal(f->fb.records, 0);
  fixture_free(f);
}

/* ---- stream capture ---- */

static void capture_parks_then_fences(cs_free_mode_t mode) {
  alloc_fixture_t *f = start(mode);
  uintptr_t p = must_alloc(f->a, 4096);
  f->fb.capturing = true;
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_int_equal(state_of(f->a, p), CS_BLOCK_PENDING); /* parked */
  uintptr_t q = must_alloc(f->a, 4096);                  /* allocation during capture works */
  assert_true(q != p);
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);   /* a no-op while capturing */
  assert_int_equal(f->fb.syncs + f->fb.records + f->fb.queries, 0);
  f->fb.capturing = false;

  /* the first allocation after the capture fences the parked block ... */
  uintptr_t r = must_alloc(f->a, 512);
  assert_int_equal(f->fb.records, 1);
  assert_int_equal(f->fb.syncs, 0);
  assert_int_equal(state_of(f->a, p), CS_BLOCK_PENDING);
  /* ... which becomes reusable when the fence completes */
  fake_backend_complete_events(&f->fb);
  assert_int_equal(must_alloc(f->a, 4096), p);
  assert_int_equal(cs_allocator_free(f->a, q), 0);
  assert_int_equal(cs_allocator_free(f->a, r), 0);
  fixture_free(f);
}

static void test_capture_in_sync_mode(void **state) {
  (void)state;
  capture_parks_then_fences(CS_FREE_SYNC);
}

static void test_capture_in_fence_mode(void **state) {
  (void)state;
  capture_parks_then_fences(CS_FREE_FENCE);
}

static void test_no_release_during_capture(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(8 * MiB);
  fixture_start(f, NULL);
  uintptr_t a = must_alloc(f->a, 3 * MiB);
  uintptr_t b = must_alloc(f->a, 3 * MiB);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  f->fb.capturing = true;
  /* releasing the cache would synchronize: during a capture the request fails instead */
  uintptr_t c = 0;
  assert_int_equal(cs_allocator_malloc(f->a, 5 * MiB, 0, 0, &c), -CS_ENOMEM);
  assert_int_equal(f->fb.syncs, 1); /* only the free before the capture */
  assert_int_equal(stats_of(f->a).num_ooms, 1);
  f->fb.capturing = false;
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  fixture_free(f);
}

static void test_drop_all_destroys_fence_events(void **state) {
  (void)state;
  alloc_fixture_t *f = start(CS_FREE_FENCE);
  uintptr_t p = must_alloc(f->a, 4096);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  cs_allocator_drop_all(f->a, true);
  assert_int_equal(f->fb.destroys, f->fb.creates);
  assert_int_equal(f->fb.used, 0);
  fixture_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sync_mode_synchronizes_like_cudafree),
      cmocka_unit_test(test_sync_mode_reports_earlier_errors_at_free),
      cmocka_unit_test(test_sync_mode_waits_only_for_its_own_blocks),
      cmocka_unit_test(test_fence_mode_reuses_nothing_before_events_complete),
      cmocka_unit_test(test_fence_mode_synchronizes_before_oom),
      cmocka_unit_test(test_fence_mode_past_the_stream_limit_synchronizes_outside_the_lock),
      cmocka_unit_test(test_fence_mode_past_the_stream_limit_unfenced_blocks_wait_for_a_sync),
      cmocka_unit_test(test_fence_mode_release_waits_outside_the_lock),
      cmocka_unit_test(test_stream_mode_reuses_at_once),
      cmocka_unit_test(test_capture_in_sync_mode),
      cmocka_unit_test(test_capture_in_fence_mode),
      cmocka_unit_test(test_no_release_during_capture),
      cmocka_unit_test(test_drop_all_destroys_fence_events),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

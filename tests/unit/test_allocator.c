/* SPDX-License-Identifier: Apache-2.0 */
/* The caching allocator against a fake device: split, merge, reuse, streams, the large-pool
 * policies, max_split_size, garbage collection, OOM release-and-retry, errors, reset, and
 * record-only mode. Every test ends with the whole-state consistency check of alloc_check.h. */
#include "tests/unit/alloc_check.h"

#include "common/cs_error.h"

#define MiB CS_MiB

/* ---- a recorder of trace events ---- */

enum { REC_MAX = 64 };
typedef struct recorder_s {
  cs_trace_event_t events[REC_MAX];
  size_t count;
  cs_oom_note_t oom; /* the last OOM's note (its event's addr points at it during the call only) */
  size_t ooms_noted;
} recorder_t;

static void record_event(void *ctx, const cs_trace_event_t *ev) {
  recorder_t *r = ctx;
  if (r->count < REC_MAX) r->events[r->count] = *ev;
  r->count++;
  if (ev->action == CS_TRACE_OOM && ev->addr != 0) {
    r->oom = *(const cs_oom_note_t *)ev->addr;
    r->ooms_noted++;
  }
}

/* ---- small pool ---- */

static void test_small_split_and_merge(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t p1 = must_alloc(f->a, 1000);
  uintptr_t p2 = must_alloc(f->a, 3000);
  assert_int_equal(f->fb.allocs, 1);       /* one 2 MiB segment holds both */
  assert_int_equal(p2, p1 + 1024);         /* carved from the front of the remainder */
  assert_allocator_consistent(f->a);
  assert_int_equal(cs_allocator_free(f->a, p1), 0);
  assert_allocator_consistent(f->a);
  assert_int_equal(cs_allocator_free(f->a, p2), 0);
  assert_allocator_consistent(f->a);       /* merged back into one free block */
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.inactive_split[CS_STAT_ALL].current, 0);
  /* the merged segment serves the largest small request from its start */
  uintptr_t p3 = must_alloc(f->a, MiB);
  assert_int_equal(p3, p1);
  assert_int_equal(f->fb.allocs, 1);
  assert_int_equal(cs_allocator_free(f->a, p3), 0);
  fixture_free(f);
}

static void test_best_fit_smallest_then_lowest_address(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t p[6];
  static const size_t sizes[6] = {4096, 512, 2048, 512, 2048, 512};
  for (int i = 0; i < 6; i++) p[i] = must_alloc(f->a, sizes[i]);
  /* free the 4096 block, and the two 2048 blocks; their 512 neighbours stay allocated */
  assert_int_equal(cs_allocator_free(f->a, p[0]), 0);
  assert_int_equal(cs_allocator_free(f->a, p[2]), 0);
  assert_int_equal(cs_allocator_free(f->a, p[4]), 0);
  /* 1500 -> 1536: the smallest fitting free blocks are the 2048 ones; the lower one wins */
  uintptr_t q = must_alloc(f->a, 1500);
  assert_int_equal(q, p[2]);
  uintptr_t r = must_alloc(f->a, 1500);
  assert_int_equal(r, p[4]);
  uintptr_t s = must_alloc(f->a, 3000); /* only the 4096 block fits below the tail */
  assert_int_equal(s, p[0]);
  assert_allocator_consistent(f->a);
  fixture_free(f);
}

static void test_reuse_mixed_sizes_reaches_device_rarely(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new((size_t)8 << 30);
  fixture_start(f, NULL);
  static const size_t sizes[] = {512, 4000, 70000, 1 << 20, 3 << 20, 12 << 20, 100, 250000};
  uintptr_t live[8];
  for (int round = 0; round < 10000 / 8; round++) {
    for (int i = 0; i < 8; i++) live[i] = must_alloc(f->a, sizes[i]);
    for (int i = 7; i >= 0; i--) assert_int_equal(cs_allocator_free(f->a, live[i]), 0);
  }
  /* one segment per large size, two small ones at most */
  assert_true(f->fb.allocs <= 6);
  assert_int_equal(f->fb.frees, 0);
  fixture_free(f);
}

static void test_blocks_are_reused_per_stream(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t a1 = 0, b1 = 0, a2 = 0;
  assert_int_equal(cs_allocator_malloc(f->a, 4096, 1, 0, &a1), 0);
  assert_int_equal(cs_allocator_free(f->a, a1), 0);
  /* another stream never gets stream 1's cached block */
  assert_int_equal(cs_allocator_malloc(f->a, 4096, 2, 0, &b1), 0);
  assert_int_equal(f->fb.allocs, 2);
  assert_true(b1 != a1);
  /* the same stream does */
  assert_int_equal(cs_allocator_malloc(f->a, 4096, 1, 0, &a2), 0);
  assert_int_equal(a2, a1);
  assert_int_equal(f->fb.allocs, 2);
  assert_int_equal(cs_allocator_free(f->a, a2), 0);
  assert_int_equal(cs_allocator_free(f->a, b1), 0);
  fixture_free(f);
}

/* ---- large pool ---- */

static void test_ipc_safe_large_blocks_own_their_segment(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(256 * MiB);
  fixture_start(f, NULL);
  uintptr_t a = must_alloc(f->a, 3 * MiB);
  uintptr_t b = must_alloc(f->a, 3 * MiB);
  assert_int_equal(f->fb.allocs, 2);  /* never two large blocks in one segment */
  assert_int_equal(f->fb.segments[0].size, 4 * MiB);
  assert_int_equal(f->fb.segments[0].addr, a);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  /* whole-segment reuse within the slack: 3.5 MiB fits the free 4 MiB segment */
  uintptr_t c = must_alloc(f->a, 3 * MiB + 512 * 1024);
  assert_int_equal(c, a);
  assert_int_equal(cs_allocator_free(f->a, c), 0);
  /* but a 1.5 MiB request would waste 2.5 MiB of it: it gets a 2 MiB segment of its own */
  uintptr_t d = must_alloc(f->a, 3 * MiB / 2);
  assert_true(d != a);
  assert_int_equal(f->fb.allocs, 3);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.segment[CS_STAT_LARGE_POOL].current, 3);
  assert_int_equal(st.inactive_split[CS_STAT_ALL].current, 0);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_free(f->a, d), 0);
  fixture_free(f);
}

static void test_split_large_uses_pytorch_large_pool(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(256 * MiB);
  f->conf.split_large = true;
  fixture_start(f, NULL);
  /* >= 10 MiB: a segment of its own, rounded to 2 MiB */
  uintptr_t c = must_alloc(f->a, 11 * MiB);
  assert_int_equal(f->fb.segments[0].size, 12 * MiB);
  /* 1-10 MiB requests share 20 MiB segments */
  uintptr_t a = must_alloc(f->a, 3 * MiB);
  uintptr_t b = must_alloc(f->a, 3 * MiB);
  assert_int_equal(f->fb.allocs, 2);
  assert_int_equal(f->fb.segments[1].size, 20 * MiB);
  assert_int_equal(b, a + 3 * MiB);
  /* best fit prefers c's 12 MiB over the 14 MiB tail, and a remainder of 1 MiB or less is not
   * split off a large block */
  assert_int_equal(cs_allocator_free(f->a, c), 0);
  uintptr_t d = must_alloc(f->a, 11 * MiB + 512 * 1024);
  assert_int_equal(d, c);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.allocated_bytes[CS_STAT_LARGE_POOL].current, 12 * MiB + 6 * MiB);
  assert_int_equal(st.inactive_split[CS_STAT_LARGE_POOL].current, 1); /* the 14 MiB tail */
  assert_int_equal(st.inactive_split_bytes[CS_STAT_LARGE_POOL].current, 14 * MiB);
  /* a request >= 10 MiB is carved from a cached tail when one fits (PyTorch does the same) */
  uintptr_t e = must_alloc(f->a, 12 * MiB);
  assert_int_equal(e, b + 3 * MiB);
  assert_int_equal(f->fb.allocs, 2);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_free(f->a, d), 0);
  assert_int_equal(cs_allocator_free(f->a, e), 0);
  fixture_free(f);
}

static void test_max_split_size_rules(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(512 * MiB);
  f->conf.split_large = true;
  f->conf.max_split_size = 40 * MiB;
  fixture_start(f, NULL);
  uintptr_t big = must_alloc(f->a, 50 * MiB);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.oversize_allocations.current, 1);
  assert_int_equal(st.oversize_segments.current, 1);
  assert_int_equal(st.max_split_size, 40 * MiB);
  assert_int_equal(cs_allocator_free(f->a, big), 0);
  /* a small request is never carved from an oversize block */
  uintptr_t small = must_alloc(f->a, 3 * MiB);
  assert_true(small != big);
  assert_int_equal(f->fb.allocs, 2);
  /* an oversize request takes a cached oversize block within max_non_split_rounding, unsplit */
  uintptr_t again = must_alloc(f->a, 45 * MiB);
  assert_int_equal(again, big);
  assert_int_equal(f->fb.allocs, 2);
  st = stats_of(f->a);
  assert_int_equal(st.allocated_bytes[CS_STAT_ALL].current, 50 * MiB + 3 * MiB);
  /* but not one 20 MiB or more larger than it: with `again` held, the smallest cached block
   * for 55 MiB is an 80 MiB one */
  uintptr_t x = must_alloc(f->a, 80 * MiB);
  assert_int_equal(cs_allocator_free(f->a, x), 0);
  uintptr_t other = must_alloc(f->a, 55 * MiB);
  assert_true(other != x);
  assert_int_equal(f->fb.allocs, 4);
  assert_int_equal(cs_allocator_free(f->a, other), 0);
  assert_int_equal(cs_allocator_free(f->a, again), 0);
  assert_int_equal(cs_allocator_free(f->a, small), 0);
  st = stats_of(f->a);
  assert_int_equal(st.oversize_allocations.current, 0);
  assert_int_equal(st.oversize_allocations.allocated, 4);
  fixture_free(f);
}

static void test_roundup_power2_divisions_apply(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  for (int i = 0; i < CS_ROUNDUP_INTERVALS; i++) f->conf.roundup_power2_divisions[i] = 4;
  f->conf.split_large = true;
  fixture_start(f, NULL);
  uintptr_t p = must_alloc(f->a, 1258291);
  uintptr_t q = must_alloc(f->a, 100);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.allocated_bytes[CS_STAT_LARGE_POOL].current, 1310720); /* 1.25 MiB */
  assert_int_equal(st.requested_bytes[CS_STAT_ALL].current, 1258291 + 100);
  assert_int_equal(st.allocated_bytes[CS_STAT_SMALL_POOL].current, 512);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_int_equal(cs_allocator_free(f->a, q), 0);
  fixture_free(f);
}

static void test_ipc_safe_block_is_its_whole_segment(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t p = must_alloc(f->a, 1258291);
  cs_stats_t st = stats_of(f->a);
  /* the program holds the whole 2 MiB segment: nobody else may use its tail */
  assert_int_equal(st.allocated_bytes[CS_STAT_LARGE_POOL].current, 2 * MiB);
  assert_int_equal(st.requested_bytes[CS_STAT_LARGE_POOL].current, 1258291);
  assert_int_equal(st.inactive_split[CS_STAT_ALL].current, 0);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  fixture_free(f);
}

/* ---- releasing memory ---- */

static void test_oom_releases_cache_and_retries(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(10 * MiB);
  recorder_t rec = {0};
  cs_allocator_observer_t obs = {.on_event = record_event, .ctx = &rec};
  fixture_start(f, &obs);
  uintptr_t a = must_alloc(f->a, 3 * MiB);
  uintptr_t b = must_alloc(f->a, 3 * MiB);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  /* 5 MiB needs a 6 MiB segment: only after releasing the free 4 MiB one */
  uintptr_t c = must_alloc(f->a, 5 * MiB);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.num_alloc_retries, 1);
  assert_int_equal(st.num_sync_all_streams, 1);
  assert_int_equal(st.num_device_free, 1);
  assert_int_equal(st.num_ooms, 0);
  assert_int_equal(f->fb.used, 4 * MiB + 6 * MiB); /* b's and c's segments */
  /* nothing left to release: a real OOM */
  uintptr_t d = 0;
  size_t before = rec.count;
  assert_int_equal(cs_allocator_malloc(f->a, 3 * MiB, 0, 7, &d), -CS_ENOMEM);
  st = stats_of(f->a);
  assert_int_equal(st.num_ooms, 1);
  assert_int_equal(st.num_alloc_retries, 2);
  assert_true(rec.count > before);
  cs_trace_event_t *last = &rec.events[rec.count - 1];
  assert_int_equal(last->action, CS_TRACE_OOM);
  assert_int_equal(last->size, 3 * MiB);
  assert_int_equal(last->device_free, 0);
  assert_int_equal(last->stack_id, 7);
  /* the cache as it answered (issue 46): b's and c's segments, both blocks handed out, nothing free */
  assert_int_equal(rec.ooms_noted, 1);
  assert_int_equal(rec.oom.cache.reserved, 10 * MiB);
  assert_int_equal(rec.oom.cache.allocated, (uint64_t)st.active_bytes[CS_STAT_ALL].current);
  assert_int_equal(rec.oom.cache.largest_free, 0);
  assert_int_equal(rec.oom.cache.small_free, 0);
  assert_int_equal(rec.oom.device_total, 10 * MiB);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_free(f->a, c), 0);
  fixture_free(f);
}

/* The cache's figures an OOM carries (issue 46): free bytes between small blocks, the largest. */
static void test_oom_note_small_fragments(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(6 * MiB);
  recorder_t rec = {0};
  cs_allocator_observer_t obs = {.on_event = record_event, .ctx = &rec};
  fixture_start(f, &obs);
  uintptr_t p[4];
  for (int i = 0; i < 4; i++) p[i] = must_alloc(f->a, 512 * 1024); /* one 2 MiB small segment */
  assert_int_equal(cs_allocator_free(f->a, p[0]), 0);
  assert_int_equal(cs_allocator_free(f->a, p[2]), 0);
  uintptr_t big = 0;
  assert_int_equal(cs_allocator_malloc(f->a, 5 * MiB, 0, 9, &big), -CS_ENOMEM); /* 4 MiB left on the device */
  assert_int_equal(rec.ooms_noted, 1);
  assert_int_equal(rec.oom.cache.reserved, 2 * MiB);
  assert_int_equal(rec.oom.cache.allocated, 1 * MiB);
  assert_int_equal(rec.oom.cache.small_free, 1 * MiB);
  assert_int_equal(rec.oom.cache.largest_free, 512 * 1024);
  assert_int_equal(rec.oom.device_total, 6 * MiB);
  assert_int_equal(cs_allocator_free(f->a, p[1]), 0);
  assert_int_equal(cs_allocator_free(f->a, p[3]), 0);
  fixture_free(f);
}

static void test_release_available_frees_oversize_first(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(80 * MiB);
  f->conf.split_large = true;
  f->conf.max_split_size = 40 * MiB;
  fixture_start(f, NULL);
  uintptr_t big = must_alloc(f->a, 60 * MiB);
  assert_int_equal(cs_allocator_free(f->a, big), 0);
  /* 30 MiB does not fit beside the cached 60 MiB: the oversize block is released, no retry */
  uintptr_t p = must_alloc(f->a, 30 * MiB);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.num_alloc_retries, 0);
  assert_int_equal(st.num_sync_all_streams, 0);
  assert_int_equal(st.num_device_free, 1);
  assert_int_equal(st.oversize_segments.current, 0);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  fixture_free(f);
}

static void test_garbage_collection_frees_oldest(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(200 * MiB);
  f->conf.garbage_collection_threshold = 0.4; /* 80 MiB */
  fixture_start(f, NULL);
  uintptr_t a = must_alloc(f->a, 40 * MiB);
  uintptr_t b = must_alloc(f->a, 40 * MiB);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  uintptr_t x = must_alloc(f->a, 3 * MiB);  /* 80 MiB reserved: not above the limit yet */
  assert_int_equal(cs_allocator_free(f->a, x), 0);
  uintptr_t y = must_alloc(f->a, 3 * MiB);  /* reuses x */
  assert_int_equal(y, x);
  assert_int_equal(cs_allocator_free(f->a, y), 0);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(f->fb.frees, 0);
  /* 84 MiB reserved > 80: GC frees blocks at least as old as the average; only a is */
  uintptr_t z = must_alloc(f->a, 30 * MiB);
  assert_int_equal(f->fb.frees, 1);
  for (size_t i = 0; i < f->fb.segment_count; i++) assert_true(f->fb.segments[i].addr != a);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.reserved_bytes[CS_STAT_ALL].current, 40 * MiB + 4 * MiB + 30 * MiB);
  assert_int_equal(st.num_sync_all_streams, 0); /* GC does not synchronize */
  assert_int_equal(cs_allocator_free(f->a, z), 0);
  fixture_free(f);
}

static void test_no_garbage_collection_by_default(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(200 * MiB);
  fixture_start(f, NULL);
  for (int i = 0; i < 5; i++) {
    uintptr_t p = must_alloc(f->a, (size_t)(10 + 8 * i) * MiB);
    assert_int_equal(cs_allocator_free(f->a, p), 0);
  }
  assert_int_equal(f->fb.frees, 0);
  fixture_free(f);
}

static void test_empty_cache_keeps_live_segments(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  recorder_t rec = {0};
  cs_allocator_observer_t obs = {.on_event = record_event, .ctx = &rec};
  fixture_start(f, &obs);
  uintptr_t s1 = must_alloc(f->a, 1000);
  uintptr_t s2 = must_alloc(f->a, 1000);
  uintptr_t l1 = must_alloc(f->a, 5 * MiB);
  uintptr_t l2 = must_alloc(f->a, 7 * MiB);
  assert_int_equal(cs_allocator_free(f->a, s1), 0);
  assert_int_equal(cs_allocator_free(f->a, l1), 0);
  rec.count = 0;
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  /* the free large segment goes; the small segment still holds s2; l2 stays */
  assert_int_equal(f->fb.frees, 1);
  assert_int_equal(rec.count, 1);
  assert_int_equal(rec.events[0].action, CS_TRACE_SEGMENT_FREE);
  assert_int_equal(rec.events[0].addr, l1);
  assert_int_equal(rec.events[0].size, 6 * MiB);
  assert_int_equal(cs_allocator_free(f->a, s2), 0);
  assert_int_equal(cs_allocator_free(f->a, l2), 0);
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  assert_int_equal(f->fb.used, 0);
  assert_int_equal(stats_of(f->a).num_sync_all_streams, 2);
  fixture_free(f);
}

/* cuMemGetInfo's addition counts whole segments only: the free rest of a small segment that
 * still holds a live block is no use to any other allocation (issue 39, item 2). */
static void test_releasable_bytes_for_meminfo(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t a = must_alloc(f->a, 1000);
  uintptr_t b = must_alloc(f->a, 5 * MiB);
  /* reserved 2 + 6 MiB; the 2 MiB segment holds a, the 6 MiB one b */
  assert_int_equal(cs_allocator_releasable_bytes(f->a), 0);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_releasable_bytes(f->a), 6 * MiB);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  assert_int_equal(cs_allocator_releasable_bytes(f->a), 8 * MiB);
  fixture_free(f);
}

/* ---- errors ---- */

static void test_bad_frees_change_nothing(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t p = must_alloc(f->a, 4096);
  cs_stats_t before = stats_of(f->a);
  assert_int_equal(cs_allocator_free(f->a, 0xdead000), -CS_EINVAL); /* never allocated */
  assert_int_equal(cs_allocator_free(f->a, p + 512), -CS_EINVAL);   /* inside a block */
  cs_stats_t after = stats_of(f->a);
  assert_memory_equal(&before, &after, sizeof before);
  assert_true(cs_allocator_owns(f->a, p));
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_false(cs_allocator_owns(f->a, p));
  before = stats_of(f->a);
  assert_int_equal(cs_allocator_free(f->a, p), -CS_EINVAL);         /* twice */
  after = stats_of(f->a);
  assert_memory_equal(&before, &after, sizeof before);
  fixture_free(f);
}

static void test_bad_sizes_and_backend_errors(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t p = 0;
  assert_int_equal(cs_allocator_malloc(f->a, 0, 0, 0, &p), -CS_EINVAL);
  assert_int_equal(cs_allocator_malloc(f->a, SIZE_MAX, 0, 0, &p), -CS_ENOMEM);
  assert_int_equal(stats_of(f->a).num_ooms, 1);
  /* a backend failure other than OOM is returned as it is, without retrying */
  f->fb.fail_next_alloc = 201; /* CUDA_ERROR_INVALID_CONTEXT */
  assert_int_equal(cs_allocator_malloc(f->a, 4096, 0, 0, &p), 201);
  assert_int_equal(f->fb.allocs, 1);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.num_alloc_retries, 0);
  assert_int_equal(st.segment[CS_STAT_ALL].allocated, 0);
  p = must_alloc(f->a, 4096);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  fixture_free(f);
}

/* ---- context reset ---- */

static void test_drop_all_with_live_context(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t a = must_alloc(f->a, 1000);
  must_alloc(f->a, 2000);
  uintptr_t c = must_alloc(f->a, 5 * MiB);
  must_alloc(f->a, 9 * MiB);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  assert_int_equal(cs_allocator_free(f->a, c), 0);
  cs_allocator_drop_all(f->a, true);
  assert_int_equal(f->fb.used, 0);        /* every segment went back to the device */
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.allocated_bytes[CS_STAT_ALL].current, 0);
  assert_int_equal(st.reserved_bytes[CS_STAT_ALL].current, 0);
  assert_int_equal(st.active[CS_STAT_ALL].current, 0);
  assert_int_equal(st.inactive_split[CS_STAT_ALL].current, 0);
  /* still usable afterwards */
  uintptr_t d = must_alloc(f->a, 1000);
  assert_int_equal(cs_allocator_free(f->a, d), 0);
  fixture_free(f);
}

static void test_drop_all_after_context_is_gone(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  must_alloc(f->a, 1000);
  must_alloc(f->a, 5 * MiB);
  cs_allocator_drop_all(f->a, false);
  assert_int_equal(f->fb.frees, 0);       /* no call into a destroyed context */
  assert_int_equal(stats_of(f->a).segment[CS_STAT_ALL].current, 0);
  f->fb.used = 0;                         /* the driver reclaimed it with the context */
  f->fb.segment_count = 0;
  fixture_free(f);
}

/* A segment the backend refuses to free (a sticky error: cuMemFree returns it) stays cached, and
 * the trace and the statistics say so: replaying the trace gives the segments the allocator
 * holds. The release by drop_all forgets it once, whatever the backend says. */
static size_t replayed_segments(const recorder_t *rec) {
  size_t held = 0;
  for (size_t i = 0; i < rec->count && i < REC_MAX; i++) {
    if (rec->events[i].action == CS_TRACE_SEGMENT_ALLOC) held++;
    if (rec->events[i].action == CS_TRACE_SEGMENT_FREE) {
      assert_true(held > 0);
      held--;
    }
  }
  return held;
}

static void test_failed_segment_release_stays_cached(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  recorder_t rec = {0};
  cs_allocator_observer_t obs = {.on_event = record_event, .ctx = &rec};
  fixture_start(f, &obs);
  uintptr_t l1 = must_alloc(f->a, 5 * MiB);
  assert_int_equal(cs_allocator_free(f->a, l1), 0);
  f->fb.fail_next_free = 700; /* CUDA_ERROR_ILLEGAL_ADDRESS */
  assert_int_equal(cs_allocator_empty_cache(f->a), 700);
  assert_int_equal(stats_of(f->a).segment[CS_STAT_ALL].current, 1);
  assert_int_equal(stats_of(f->a).num_device_free, 0);
  assert_int_equal(replayed_segments(&rec), 1);
  assert_allocator_consistent(f->a);

  /* drop_all: the backend refuses again; the segment is forgotten, reported gone exactly once */
  f->fb.fail_next_free = 700;
  cs_allocator_drop_all(f->a, true);
  assert_int_equal(stats_of(f->a).segment[CS_STAT_ALL].current, 0);
  assert_int_equal(replayed_segments(&rec), 0);
  size_t segment_frees = 0;
  for (size_t i = 0; i < rec.count; i++) segment_frees += rec.events[i].action == CS_TRACE_SEGMENT_FREE;
  size_t segment_allocs = 0;
  for (size_t i = 0; i < rec.count; i++) segment_allocs += rec.events[i].action == CS_TRACE_SEGMENT_ALLOC;
  assert_int_equal(segment_frees, segment_allocs);
  f->fb.used = 0; /* the driver reclaims it with the context */
  f->fb.segment_count = 0;
  fixture_free(f);
}

/* ---- record only ---- */

static void test_record_only_passes_everything_through(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  f->conf.cache = false;
  recorder_t rec = {0};
  cs_allocator_observer_t obs = {.on_event = record_event, .ctx = &rec};
  fixture_start(f, &obs);
  uintptr_t a = must_alloc(f->a, 1000);
  uintptr_t b = must_alloc(f->a, 1000);
  assert_int_equal(f->fb.allocs, 2);
  assert_int_equal(f->fb.segments[0].size, 1024);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  assert_int_equal(f->fb.frees, 1);
  assert_int_equal(f->fb.syncs, 0);       /* the driver's own free synchronizes */
  uintptr_t c = must_alloc(f->a, 1000);
  assert_int_equal(f->fb.allocs, 3);
  static const cs_trace_action_t expected[] = {
      CS_TRACE_SEGMENT_ALLOC, CS_TRACE_ALLOC, CS_TRACE_SEGMENT_ALLOC, CS_TRACE_ALLOC,
      CS_TRACE_FREE_REQUESTED, CS_TRACE_FREE_COMPLETED, CS_TRACE_SEGMENT_FREE,
      CS_TRACE_SEGMENT_ALLOC, CS_TRACE_ALLOC};
  assert_int_equal(rec.count, sizeof expected / sizeof expected[0]);
  for (size_t i = 0; i < rec.count; i++) assert_int_equal(rec.events[i].action, expected[i]);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_free(f->a, c), 0);
  assert_int_equal(f->fb.used, 0);
  cs_stats_t st = stats_of(f->a);
  assert_int_equal(st.num_device_alloc, 3);
  assert_int_equal(st.num_device_free, 3);
  assert_int_equal(st.allocated_bytes[CS_STAT_ALL].peak, 2048);
  fixture_free(f);
}

/* ---- trace order ---- */

static void test_trace_events_in_state_order(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  recorder_t rec = {0};
  cs_allocator_observer_t obs = {.on_event = record_event, .ctx = &rec};
  fixture_start(f, &obs);
  uintptr_t p = 0;
  assert_int_equal(cs_allocator_malloc(f->a, 1000, 5, 42, &p), 0);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_int_equal(rec.count, 4);
  assert_int_equal(rec.events[0].action, CS_TRACE_SEGMENT_ALLOC);
  assert_int_equal(rec.events[0].size, 2 * MiB);
  assert_int_equal(rec.events[0].stream, 5);
  assert_int_equal(rec.events[0].stack_id, 42);
  assert_int_equal(rec.events[1].action, CS_TRACE_ALLOC);
  assert_int_equal(rec.events[1].addr, p);
  assert_int_equal(rec.events[1].size, 1000); /* the request, as memory_viz expects */
  assert_int_equal(rec.events[2].action, CS_TRACE_FREE_REQUESTED);
  assert_int_equal(rec.events[2].stack_id, 42);
  assert_int_equal(rec.events[3].action, CS_TRACE_FREE_COMPLETED);
  assert_int_equal(rec.events[3].size, 1000);
  fixture_free(f);
}

/* ---- a long random run: invariants and no overlapping live blocks ---- */

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void run_random(cs_alloc_conf_t conf_overrides, bool split_large) {
  alloc_fixture_t *f = fixture_new((size_t)1 << 30);
  f->conf.split_large = split_large;
  f->conf.max_split_size = conf_overrides.max_split_size;
  f->conf.free_mode = conf_overrides.free_mode;
  f->fb.events_complete_on_record = true;
  fixture_start(f, NULL);
  enum { SLOTS = 96 };
  uintptr_t addr[SLOTS] = {0};
  size_t size[SLOTS] = {0};
  uint64_t seed = 0x9e3779b97f4a7c15u;
  for (int step = 0; step < 20000; step++) {
    size_t i = (size_t)(rng_next(&seed) % SLOTS);
    if (addr[i]) {
      assert_int_equal(cs_allocator_free(f->a, addr[i]), 0);
      addr[i] = 0;
    } else {
      uint64_t r = rng_next(&seed);
      size_t s = (r & 1) ? (size_t)(r >> 8) % (1 << 20) + 1 : (size_t)(r >> 8) % (24 << 20) + 1;
      uintptr_t p = 0;
      int rc = cs_allocator_malloc(f->a, s, (r >> 4) & 1, 0, &p);
      if (rc == -CS_ENOMEM) continue;
      assert_int_equal(rc, 0);
      for (size_t j = 0; j < SLOTS; j++) /* no live block overlaps another */
        if (addr[j]) assert_true(p + s <= addr[j] || addr[j] + size[j] <= p);
      addr[i] = p;
      size[i] = s;
    }
    if (step % 1000 == 0) assert_allocator_consistent(f->a);
  }
  for (size_t i = 0; i < SLOTS; i++)
    if (addr[i]) assert_int_equal(cs_allocator_free(f->a, addr[i]), 0);
  assert_allocator_consistent(f->a);
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  assert_int_equal(f->fb.used, 0);
  fixture_free(f);
}

static void test_random_default_policy(void **state) {
  (void)state;
  cs_alloc_conf_t c;
  cs_alloc_conf_init(&c);
  run_random(c, false);
}

static void test_random_split_large_with_max_split(void **state) {
  (void)state;
  cs_alloc_conf_t c;
  cs_alloc_conf_init(&c);
  c.max_split_size = 20 * MiB;
  c.free_mode = CS_FREE_FENCE;
  run_random(c, true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_split_and_merge),
      cmocka_unit_test(test_best_fit_smallest_then_lowest_address),
      cmocka_unit_test(test_reuse_mixed_sizes_reaches_device_rarely),
      cmocka_unit_test(test_blocks_are_reused_per_stream),
      cmocka_unit_test(test_ipc_safe_large_blocks_own_their_segment),
      cmocka_unit_test(test_split_large_uses_pytorch_large_pool),
      cmocka_unit_test(test_max_split_size_rules),
      cmocka_unit_test(test_roundup_power2_divisions_apply),
      cmocka_unit_test(test_ipc_safe_block_is_its_whole_segment),
      cmocka_unit_test(test_oom_releases_cache_and_retries),
      cmocka_unit_test(test_release_available_frees_oversize_first),
      cmocka_unit_test(test_garbage_collection_frees_oldest),
      cmocka_unit_test(test_no_garbage_collection_by_default),
      cmocka_unit_test(test_empty_cache_keeps_live_segments),
      cmocka_unit_test(test_releasable_bytes_for_meminfo),
      cmocka_unit_test(test_bad_frees_change_nothing),
      cmocka_unit_test(test_bad_sizes_and_backend_errors),
      cmocka_unit_test(test_drop_all_with_live_context),
      cmocka_unit_test(test_drop_all_after_context_is_gone),
      cmocka_unit_test(test_failed_segment_release_stays_cached),
      cmocka_unit_test(test_record_only_passes_everything_through),
      cmocka_unit_test(test_oom_note_small_fragments),
      cmocka_unit_test(test_trace_events_in_state_order),
      cmocka_unit_test(test_random_default_policy),
      cmocka_unit_test(test_random_split_large_with_max_split),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

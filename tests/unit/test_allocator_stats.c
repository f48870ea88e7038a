/* SPDX-License-Identifier: Apache-2.0 */
/* memory_stats() values after scripted sequences, worked out by hand from PyTorch's update points
 * (snapshot-format.md section 5.3), including the net-change rule of inactive_split. */
#include "tests/unit/alloc_check.h"

#define MiB CS_MiB
#define SEG (2 * MiB) /* a small-pool segment */

/* Expected {current, peak, allocated, freed}. */
static void assert_stat(const cs_stat_t *s, int64_t cur, int64_t peak, int64_t alloc, int64_t freed) {
  assert_int_equal(s->current, cur);
  assert_int_equal(s->peak, peak);
  assert_int_equal(s->allocated, alloc);
  assert_int_equal(s->freed, freed);
}

/* all and small_pool agree and large_pool is untouched when only small blocks are used */
static void assert_small_only(const cs_stat_t a[CS_STAT_POOLS], int64_t cur, int64_t peak,
                              int64_t alloc, int64_t freed) {
  assert_stat(&a[CS_STAT_ALL], cur, peak, alloc, freed);
  assert_stat(&a[CS_STAT_SMALL_POOL], cur, peak, alloc, freed);
  assert_stat(&a[CS_STAT_LARGE_POOL], 0, 0, 0, 0);
}

static void test_small_pool_sequence(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);

  /* 1. 1000 B -> a 1024 B block split from a new 2 MiB segment */
  uintptr_t p1 = must_alloc(f->a, 1000);
  cs_stats_t st = stats_of(f->a);
  assert_small_only(st.segment, 1, 1, 1, 0);
  assert_small_only(st.reserved_bytes, SEG, SEG, SEG, 0);
  assert_small_only(st.allocation, 1, 1, 1, 0);
  assert_small_only(st.allocated_bytes, 1024, 1024, 1024, 0);
  assert_small_only(st.requested_bytes, 1000, 1000, 1000, 0);
  assert_small_only(st.inactive_split, 1, 1, 1, 0);
  assert_small_only(st.inactive_split_bytes, SEG - 1024, SEG - 1024, SEG - 1024, 0);
  assert_int_equal(st.num_device_alloc, 1);

  /* 2. 3000 B -> 3072 B from the already split remainder: only the bytes shrink */
  uintptr_t p2 = must_alloc(f->a, 3000);
  st = stats_of(f->a);
  assert_small_only(st.allocation, 2, 2, 2, 0);
  assert_small_only(st.allocated_bytes, 4096, 4096, 4096, 0);
  assert_small_only(st.active, 2, 2, 2, 0);
  assert_small_only(st.active_bytes, 4096, 4096, 4096, 0);
  assert_small_only(st.requested_bytes, 4000, 4000, 4000, 0);
  assert_small_only(st.inactive_split, 1, 1, 1, 0);
  assert_small_only(st.inactive_split_bytes, SEG - 4096, SEG - 1024, SEG - 1024, 3072);

  /* 3. free p1: it cannot merge (p2 is live), so one more inactive split block */
  assert_int_equal(cs_allocator_free(f->a, p1), 0);
  st = stats_of(f->a);
  assert_small_only(st.allocation, 1, 2, 2, 1);
  assert_small_only(st.allocated_bytes, 3072, 4096, 4096, 1024);
  assert_small_only(st.active, 1, 2, 2, 1);
  assert_small_only(st.active_bytes, 3072, 4096, 4096, 1024);
  assert_small_only(st.requested_bytes, 3000, 4000, 4000, 1000);
  assert_small_only(st.inactive_split, 2, 2, 2, 0);
  assert_small_only(st.inactive_split_bytes, SEG - 3072, SEG - 1024, SEG, 3072);

  /* 4. free p2: it absorbs both neighbours and the segment is whole again: one decrease of 2
   * blocks and of all the split bytes */
  assert_int_equal(cs_allocator_free(f->a, p2), 0);
  st = stats_of(f->a);
  assert_small_only(st.allocation, 0, 2, 2, 2);
  assert_small_only(st.allocated_bytes, 0, 4096, 4096, 4096);
  assert_small_only(st.active, 0, 2, 2, 2);
  assert_small_only(st.active_bytes, 0, 4096, 4096, 4096);
  assert_small_only(st.requested_bytes, 0, 4000, 4000, 4000);
  assert_small_only(st.inactive_split, 0, 2, 2, 2);
  assert_small_only(st.inactive_split_bytes, 0, SEG - 1024, SEG, SEG);
  assert_small_only(st.reserved_bytes, SEG, SEG, SEG, 0);

  /* 5. empty_cache returns the segment */
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  st = stats_of(f->a);
  assert_small_only(st.segment, 0, 1, 1, 1);
  assert_small_only(st.reserved_bytes, 0, SEG, SEG, SEG);
  assert_int_equal(st.num_device_free, 1);
  assert_int_equal(st.num_sync_all_streams, 1);
  assert_int_equal(st.num_alloc_retries, 0);
  assert_int_equal(st.num_ooms, 0);
  assert_int_equal(st.max_split_size, -1);
  assert_stat(&st.oversize_allocations, 0, 0, 0, 0);
  assert_stat(&st.oversize_segments, 0, 0, 0, 0);
  fixture_free(f);
}

/* snapshot-format.md 5.3: a block of size b merging with one free neighbour into a block that is
 * still split changes the count by 0 (none of its values move) and the bytes by +b (one
 * increase of b). */
static void test_inactive_split_net_change(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t p1 = must_alloc(f->a, 1000);
  uintptr_t p2 = must_alloc(f->a, 1000);
  uintptr_t p3 = must_alloc(f->a, 1000);
  assert_int_equal(cs_allocator_free(f->a, p1), 0);
  cs_stats_t before = stats_of(f->a);
  assert_stat(&before.inactive_split[CS_STAT_ALL], 2, 2, 2, 0);
  assert_int_equal(cs_allocator_free(f->a, p2), 0);
  cs_stats_t after = stats_of(f->a);
  assert_memory_equal(&after.inactive_split, &before.inactive_split, sizeof before.inactive_split);
  const cs_stat_t *b0 = &before.inactive_split_bytes[CS_STAT_ALL];
  assert_stat(&after.inactive_split_bytes[CS_STAT_ALL], b0->current + 1024, SEG - 1024,
              b0->allocated + 1024, b0->freed);
  assert_int_equal(after.inactive_split_bytes[CS_STAT_ALL].current, SEG - 1024);
  assert_int_equal(cs_allocator_free(f->a, p3), 0);
  fixture_free(f);
}

static void test_large_pool_and_oversize(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(256 * MiB);
  f->conf.max_split_size = 20 * MiB;
  fixture_start(f, NULL);
  uintptr_t a = must_alloc(f->a, 3 * MiB);        /* IPC-safe: a 4 MiB segment, the whole block */
  uintptr_t b = must_alloc(f->a, 25 * MiB);       /* oversize: a 26 MiB segment */
  cs_stats_t st = stats_of(f->a);
  assert_stat(&st.segment[CS_STAT_LARGE_POOL], 2, 2, 2, 0);
  assert_stat(&st.reserved_bytes[CS_STAT_LARGE_POOL], 30 * MiB, 30 * MiB, 30 * MiB, 0);
  assert_stat(&st.allocated_bytes[CS_STAT_LARGE_POOL], 30 * MiB, 30 * MiB, 30 * MiB, 0);
  assert_stat(&st.requested_bytes[CS_STAT_LARGE_POOL], 28 * MiB, 28 * MiB, 28 * MiB, 0);
  assert_stat(&st.segment[CS_STAT_SMALL_POOL], 0, 0, 0, 0);
  assert_stat(&st.oversize_allocations, 1, 1, 1, 0);
  assert_stat(&st.oversize_segments, 1, 1, 1, 0);
  assert_int_equal(st.max_split_size, 20 * MiB);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  st = stats_of(f->a);
  assert_stat(&st.oversize_allocations, 0, 1, 1, 1);
  assert_stat(&st.oversize_segments, 1, 1, 1, 0);  /* still cached */
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  st = stats_of(f->a);
  assert_stat(&st.oversize_segments, 0, 1, 1, 1);
  assert_stat(&st.segment[CS_STAT_ALL], 1, 2, 2, 1);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  fixture_free(f);
}

static void test_resets(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  fixture_start(f, NULL);
  uintptr_t a = must_alloc(f->a, 4096);
  uintptr_t b = must_alloc(f->a, 4096);
  assert_int_equal(cs_allocator_free(f->a, b), 0);
  assert_int_equal(cs_allocator_empty_cache(f->a), 0); /* keeps the live segment */
  cs_allocator_reset_peak_stats(f->a);
  cs_stats_t st = stats_of(f->a);
  assert_stat(&st.allocated_bytes[CS_STAT_ALL], 4096, 4096, 8192, 4096);
  assert_stat(&st.allocation[CS_STAT_ALL], 1, 1, 2, 1);
  cs_allocator_reset_accumulated_stats(f->a);
  st = stats_of(f->a);
  assert_stat(&st.allocated_bytes[CS_STAT_ALL], 4096, 4096, 0, 0);
  assert_stat(&st.segment[CS_STAT_ALL], 1, 1, 0, 0);
  assert_int_equal(st.num_sync_all_streams, 0);
  assert_int_equal(st.num_device_alloc, 0);
  assert_int_equal(cs_allocator_free(f->a, a), 0);
  /* current survives the reset, so the free brings it back to 0 */
  st = stats_of(f->a);
  assert_stat(&st.allocated_bytes[CS_STAT_ALL], 0, 4096, 0, 4096);
  fixture_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_pool_sequence),
      cmocka_unit_test(test_inactive_split_net_change),
      cmocka_unit_test(test_large_pool_and_oversize),
      cmocka_unit_test(test_resets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator's live blocks and bytes by stack id (allocator/stack_live.h), which the live
 * record publishes instead of walking the blocks (issue 45): under a mixed workload in every free
 * mode, with captures, out-of-memory failures, empty_cache and drop_all, the counts stay what a
 * walk of the blocks finds (assert_allocator_consistent compares them page by page). */
#include "tests/unit/alloc_check.h"

#include "common/cs_error.h"

#define MiB CS_MiB

enum { LIVE_SLOTS = 256 };

/* Stack ids of several pages, 0 ("no stack") among them. */
static const uint32_t stack_ids[] = {0, 1, 2, 7, 1023, 1024, 1500, 3000};

static uint64_t next_random(uint64_t *seed) {
  *seed ^= *seed << 13, *seed ^= *seed >> 7, *seed ^= *seed << 17;
  return *seed;
}

/* 1 B to 8 MiB, mostly small: splits of small and large segments, whole large segments. */
static size_t random_size(uint64_t *seed) {
  uint64_t r = next_random(seed);
  switch (r % 4) {
  case 0: return (size_t)(r >> 8) % 512 + 1;
  case 1: return (size_t)(r >> 8) % MiB + 1;
  case 2: return (size_t)(r >> 8) % (8 * MiB) + 1;
  default: return (size_t)(r >> 8) % (64 * 1024) + 1;
  }
}

typedef struct live_slot_s {
  uintptr_t addr;
} live_slot_t;

static size_t live_total_blocks(cs_allocator_t *a) {
  cs_stack_live_t page[CS_STACK_LIVE_PAGE];
  size_t blocks = 0;
  cs_allocator_lock(a);
  size_t pages = cs_allocator_stack_live_locked(a, 0, page);
  for (size_t p = 0; p < pages; p++) {
    cs_allocator_stack_live_locked(a, p, page);
    for (size_t i = 0; i < CS_STACK_LIVE_PAGE; i++) blocks += page[i].blocks;
  }
  cs_allocator_unlock(a);
  return blocks;
}

/* 3,000 random steps: allocate in a random slot (freeing what it held), free one, capture on or
 * off, complete the device's events, empty the cache; the counts checked every 50 steps. */
static void run_mixed(cs_free_mode_t mode, bool cache, bool captures) {
  alloc_fixture_t *f = fixture_new(192 * MiB); /* small enough for out-of-memory failures */
  f->conf.free_mode = mode;
  f->conf.cache = cache;
  fixture_start(f, NULL);
  live_slot_t slots[LIVE_SLOTS] = {{0}};
  uint64_t seed = 0x9E3779B97F4A7C15u ^ (uint64_t)mode ^ ((uint64_t)cache << 8);
  int ooms = 0, frees = 0, allocs = 0;
  for (int step = 1; step <= 3000; step++) {
    uint64_t r = next_random(&seed);
    live_slot_t *s = &slots[(r >> 16) % LIVE_SLOTS];
    switch (r % 16) {
    case 0: /* a capture starts or ends (no synchronization, no event meanwhile: parked blocks) */
      if (captures) f->fb.capturing = !f->fb.capturing;
      break;
    case 1:
      fake_backend_complete_events(&f->fb);
      break;
    case 2:
      if (!f->fb.capturing) (void)cs_allocator_empty_cache(f->a);
      break;
    case 3: case 4: case 5: case 6:
      if (s->addr) {
        assert_int_equal(cs_allocator_free(f->a, s->addr), 0);
        s->addr = 0;
        frees++;
      }
      break;
    default: {
      if (s->addr) {
        assert_int_equal(cs_allocator_free(f->a, s->addr), 0);
        s->addr = 0;
        frees++;
      }
      uint32_t stack = stack_ids[(r >> 32) % CS_ARRAY_SIZE(stack_ids)];
      int rc = cs_allocator_malloc(f->a, random_size(&seed), 0, stack, &s->addr);
      if (rc == 0) allocs++;
      else {
        assert_int_equal(rc, -CS_ENOMEM);
        s->addr = 0;
        ooms++;
      }
    }
    }
    if (step % 50 == 0) {
      assert_allocator_consistent(f->a);
      assert_int_equal(live_total_blocks(f->a), (size_t)stats_of(f->a).allocation[CS_STAT_ALL].current);
    }
  }
  /* the workload did what it says: allocations, frees and failures */
  assert_true(allocs > 1000 && frees > 1000 && ooms > 0);
  f->fb.capturing = false;
  /* the context goes: every live block is dropped, and every count with it */
  cs_allocator_drop_all(f->a, true);
  assert_allocator_consistent(f->a);
  assert_int_equal(live_total_blocks(f->a), 0);
  fixture_free(f);
}

static void test_counts_match_the_walk_sync(void **state) {
  (void)state;
  run_mixed(CS_FREE_SYNC, true, true);
}

static void test_counts_match_the_walk_fence(void **state) {
  (void)state;
  run_mixed(CS_FREE_FENCE, true, true);
}

static void test_counts_match_the_walk_stream(void **state) {
  (void)state;
  run_mixed(CS_FREE_STREAM, true, true);
}

static void test_counts_match_the_walk_record_only(void **state) {
  (void)state;
  run_mixed(CS_FREE_SYNC, false, false);
}

/* Blocks pending free (fence mode, the device behind) are no longer the program's: not counted,
 * as the walk of the live record never counted them. */
static void test_pending_blocks_are_not_counted(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(64 * MiB);
  f->conf.free_mode = CS_FREE_FENCE;
  fixture_start(f, NULL);
  uintptr_t p = 0, q = 0;
  assert_int_equal(cs_allocator_malloc(f->a, 1000, 0, 5, &p), 0);
  assert_int_equal(cs_allocator_malloc(f->a, 3000, 0, 5, &q), 0);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  assert_true(fake_backend_incomplete_events(&f->fb) > 0); /* p waits for the device */
  cs_stack_live_t page[CS_STACK_LIVE_PAGE];
  cs_allocator_lock(f->a);
  size_t pages = cs_allocator_stack_live_locked(f->a, 0, page);
  cs_allocator_unlock(f->a);
  assert_int_equal(pages, 1);
  assert_int_equal(page[5].blocks, 1);
  assert_int_equal(page[5].bytes, 3000);
  assert_allocator_consistent(f->a);
  fake_backend_complete_events(&f->fb);
  assert_int_equal(cs_allocator_free(f->a, q), 0);
  fixture_free(f);
}

/* The copy is a page whatever the number of blocks: 20,000 live blocks of one stack are one count,
 * and the pages are as many as the stack ids ask for. */
static void test_pages_follow_the_ids_not_the_blocks(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new(512 * MiB);
  fixture_start(f, NULL);
  enum { N = 20000 };
  uintptr_t *p = calloc(N, sizeof *p);
  assert_non_null(p);
  for (int i = 0; i < N; i++) assert_int_equal(cs_allocator_malloc(f->a, 512, 0, 3, &p[i]), 0);
  cs_stack_live_t page[CS_STACK_LIVE_PAGE];
  cs_allocator_lock(f->a);
  size_t pages = cs_allocator_stack_live_locked(f->a, 0, page);
  cs_allocator_unlock(f->a);
  assert_int_equal(pages, 1);
  assert_int_equal(page[3].blocks, N);
  assert_int_equal(page[3].bytes, (uint64_t)N * 512);
  uintptr_t far = 0;
  assert_int_equal(cs_allocator_malloc(f->a, 512, 0, 5 * CS_STACK_LIVE_PAGE + 9, &far), 0);
  cs_allocator_lock(f->a);
  pages = cs_allocator_stack_live_locked(f->a, 5, page);
  cs_allocator_unlock(f->a);
  assert_true(pages >= 6);
  assert_int_equal(page[9].blocks, 1);
  assert_allocator_consistent(f->a);
  for (int i = 0; i < N; i++) assert_int_equal(cs_allocator_free(f->a, p[i]), 0);
  assert_int_equal(cs_allocator_free(f->a, far), 0);
  free(p);
  fixture_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counts_match_the_walk_sync),
      cmocka_unit_test(test_counts_match_the_walk_fence),
      cmocka_unit_test(test_counts_match_the_walk_stream),
      cmocka_unit_test(test_counts_match_the_walk_record_only),
      cmocka_unit_test(test_pending_blocks_are_not_counted),
      cmocka_unit_test(test_pages_follow_the_ids_not_the_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

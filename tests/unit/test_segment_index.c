/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator's segments by address (allocator/segment_index.h): against a plain list, through
 * random additions and removals, every address asked about is found in the segment a walk of the
 * list finds, at both ends of a segment, in the gaps between them, below the first and past the
 * last; and the allocator answers cs_allocator_find_segment from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "allocator/segment_index.h"
#include "tests/unit/alloc_check.h"

enum { SLOTS = 400, STEPS = 6000, GRAIN = 0x200000 };

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* What a walk of every segment in the index finds. */
static cs_segment_t *walk_find(cs_segment_t *slots, const bool *in, uintptr_t addr) {
  for (size_t i = 0; i < SLOTS; i++)
    if (in[i] && slots[i].addr <= addr && addr < slots[i].addr + slots[i].size) return &slots[i];
  return NULL;
}

static void test_against_a_walk(void **state) {
  (void)state;
  /* slot i may hold a segment at GRAIN * (2i + 1), of 1 to 2 grains: never overlapping, with gaps */
  cs_segment_t *slots = calloc(SLOTS, sizeof *slots);
  bool *in = calloc(SLOTS, sizeof *in);
  assert_non_null(slots);
  assert_non_null(in);
  cs_segment_index_t x;
  cs_segment_index_init(&x);
  assert_null(cs_segment_index_find(&x, GRAIN));
  uint64_t seed = 12345;
  size_t count = 0;
  for (int step = 0; step < STEPS; step++) {
    size_t i = (size_t)(rng_next(&seed) % SLOTS);
    if (in[i]) {
      cs_segment_index_remove(&x, &slots[i]);
      count--;
    } else {
      slots[i].addr = (uintptr_t)GRAIN * (2 * i + 1);
      slots[i].size = (size_t)GRAIN * (1 + rng_next(&seed) % 2) - (rng_next(&seed) % 2) * 512;
      assert_int_equal(cs_segment_index_reserve(&x, count + 1), 0);
      cs_segment_index_add(&x, &slots[i]);
      count++;
    }
    in[i] = !in[i];
    assert_int_equal(x.count, count);
    for (int q = 0; q < 8; q++) {
      size_t j = (size_t)(rng_next(&seed) % SLOTS);
      const uintptr_t base = (uintptr_t)GRAIN * (2 * j + 1);
      const uintptr_t probes[] = {base - 1, base, base + 1, base + GRAIN - 1, base + GRAIN,
                                  base + 2 * GRAIN - 512, base + 2 * GRAIN - 1, base + 2 * GRAIN, 0,
                                  UINTPTR_MAX};
      for (size_t k = 0; k < sizeof probes / sizeof *probes; k++)
        assert_ptr_equal(cs_segment_index_find(&x, probes[k]), walk_find(slots, in, probes[k]));
    }
  }
  for (size_t i = 1; i < x.count; i++) assert_true(x.by_addr[i - 1]->addr < x.by_addr[i]->addr);
  cs_segment_index_destroy(&x);
  free(in);
  free(slots);
}

/* The allocator's own question, over many segments: inside each, and not between them. */
static void test_allocator_finds_segments(void **state) {
  (void)state;
  alloc_fixture_t *f = fixture_new((size_t)4 << 30);
  fixture_start(f, NULL);
  enum { LIVE = 100 };
  uintptr_t p[LIVE];
  for (int i = 0; i < LIVE; i++) p[i] = must_alloc(f->a, (size_t)11 << 20);
  for (int i = 0; i < LIVE; i++) {
    uintptr_t base = 0;
    assert_true(cs_allocator_find_segment(f->a, p[i] + 4096, &base));
    assert_int_equal(base, p[i]); /* 11 MiB: a 12 MiB segment each, not split */
  }
  for (int i = 0; i < LIVE; i += 2) assert_int_equal(cs_allocator_free(f->a, p[i]), 0);
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  for (int i = 0; i < LIVE; i++) assert_int_equal(cs_allocator_find_segment(f->a, p[i], NULL), i % 2 == 1);
  for (int i = 1; i < LIVE; i += 2) assert_int_equal(cs_allocator_free(f->a, p[i]), 0);
  fixture_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_against_a_walk),
      cmocka_unit_test(test_allocator_finds_segments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

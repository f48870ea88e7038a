/* SPDX-License-Identifier: Apache-2.0 */
/* The address -> block map: lookups after inserts, removals in every order (unlinking from a chain
 * must keep every other entry reachable), growth, and clear. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "allocator/block_map.h"

enum { N = 5000 };

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void test_insert_find_remove(void **state) {
  (void)state;
  cs_block_t *blocks = calloc(N, sizeof *blocks);
  assert_non_null(blocks);
  cs_block_map_t map;
  cs_block_map_init(&map);
  assert_null(cs_block_map_find(&map, 0x1000));
  assert_null(cs_block_map_remove(&map, 0x1000));
  for (size_t i = 0; i < N; i++) {
    /* same low bits for many: segments 2 MiB apart collide in naive hashes */
    blocks[i].addr = 0x7f0000000000u + (uintptr_t)(i % 50) * 0x200000u + (uintptr_t)(i / 50) * 512u;
    assert_int_equal(cs_block_map_insert(&map, &blocks[i]), 0);
  }
  assert_int_equal(map.count, N);
  assert_true(map.capacity >= N);     /* at most one block per bucket on average */
  assert_true(map.capacity < 4 * N);  /* and no more than doubling past that */
  for (size_t i = 0; i < N; i++) assert_ptr_equal(cs_block_map_find(&map, blocks[i].addr), &blocks[i]);
  assert_null(cs_block_map_find(&map, 0x7f0000000000u + 256));

  /* remove in a random order; after each removal everything else is still found */
  uint64_t seed = 12345;
  bool *gone = calloc(N, sizeof *gone);
  assert_non_null(gone);
  for (size_t k = 0; k < N; k++) {
    size_t i = (size_t)(rng_next(&seed) % N);
    while (gone[i]) i = (i + 1) % N;
    assert_ptr_equal(cs_block_map_remove(&map, blocks[i].addr), &blocks[i]);
    gone[i] = true;
    if (k % 97 == 0)
      for (size_t j = 0; j < N; j++)
        assert_ptr_equal(cs_block_map_find(&map, blocks[j].addr), gone[j] ? NULL : &blocks[j]);
  }
  assert_int_equal(map.count, 0);
  for (size_t i = 0; i < N; i++) assert_null(cs_block_map_find(&map, blocks[i].addr));
  cs_block_map_destroy(&map);
  free(gone);
  free(blocks);
}

static void test_clear_keeps_table(void **state) {
  (void)state;
  cs_block_t b[3] = {{.addr = 512}, {.addr = 1024}, {.addr = 1536}};
  cs_block_map_t map;
  cs_block_map_init(&map);
  for (int i = 0; i < 3; i++) assert_int_equal(cs_block_map_insert(&map, &b[i]), 0);
  size_t capacity = map.capacity;
  cs_block_map_clear(&map);
  assert_int_equal(map.count, 0);
  assert_int_equal(map.capacity, capacity);
  assert_null(cs_block_map_find(&map, 1024));
  assert_int_equal(cs_block_map_insert(&map, &b[1]), 0);
  assert_ptr_equal(cs_block_map_find(&map, 1024), &b[1]);
  cs_block_map_destroy(&map);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_insert_find_remove),
      cmocka_unit_test(test_clear_keeps_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

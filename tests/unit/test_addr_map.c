/* SPDX-License-Identifier: Apache-2.0 */
/* The writer's address map (snapshot/addr_map.h): puts, replacements and removals against a plain
 * array, over few enough addresses that runs of collisions and backward shifts across the table's
 * end happen; address 0; copies; the byte total. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "snapshot/addr_map.h"

enum { ADDRS = 3000, STEPS = 200000 };

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static void test_against_array(void **state) {
  (void)state;
  static uint64_t bytes[ADDRS]; /* 0: absent (every size put is > 0) */
  cs_addr_map_t m;
  cs_addr_map_init(&m);
  uint64_t total = 0;
  for (int i = 0; i < STEPS; i++) {
    size_t k = (size_t)(next_rand() % ADDRS);
    uint64_t addr = (uint64_t)k * 512; /* shared low bits, as block addresses have; k 0 is address 0 */
    if (next_rand() % 3 == 0) {
      cs_addr_map_remove(&m, addr);
      total -= bytes[k];
      bytes[k] = 0;
    } else {
      uint64_t size = 1 + next_rand() % 1000;
      assert_int_equal(cs_addr_map_put(&m, addr, size, (uint32_t)k), 0);
      total += size - bytes[k];
      bytes[k] = size;
    }
    assert_int_equal(m.bytes, total);
  }
  cs_addr_map_t copy;
  assert_int_equal(cs_addr_map_copy(&copy, &m), 0);
  for (size_t k = 0; k < ADDRS; k++) {
    const cs_addr_block_t *b = cs_addr_map_get(&copy, (uint64_t)k * 512);
    if (bytes[k] == 0) {
      assert_null(b);
    } else {
      assert_non_null(b);
      assert_int_equal(b->bytes, bytes[k]);
      assert_int_equal(b->stack_id, k);
    }
  }
  cs_addr_map_free(&copy);
  cs_addr_map_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_array)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

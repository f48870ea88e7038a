/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch's size classes: round_size, roundup_power2_divisions intervals, segment sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "allocator/size_class.h"

static uint32_t no_div[CS_ROUNDUP_INTERVALS];

static void fill(uint32_t div[CS_ROUNDUP_INTERVALS], uint32_t value) {
  for (int i = 0; i < CS_ROUNDUP_INTERVALS; i++) div[i] = value;
}

static void test_round_to_512(void **state) {
  (void)state;
  static const struct { size_t in, out; } table[] = {
      {1, 512},          {511, 512},         {512, 512},
      {513, 1024},       {1000, 1024},       {4097, 4608},
      {CS_MiB, CS_MiB},  {CS_MiB + 1, CS_MiB + 512},
      {3 * CS_MiB + 7, 3 * CS_MiB + 512},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    assert_int_equal(cs_round_size(table[i].in, no_div), table[i].out);
}

static void test_roundup_intervals(void **state) {
  (void)state;
  assert_int_equal(cs_roundup_interval(512), 0);
  assert_int_equal(cs_roundup_interval(CS_MiB), 0);
  assert_int_equal(cs_roundup_interval(2 * CS_MiB - 1), 0);
  assert_int_equal(cs_roundup_interval(2 * CS_MiB), 1);
  assert_int_equal(cs_roundup_interval(256 * CS_MiB), 8);
  assert_int_equal(cs_roundup_interval((size_t)32 << 30), 15);
  assert_int_equal(cs_roundup_interval((size_t)1 << 40), 15);
}

static void test_power2_divisions(void **state) {
  (void)state;
  uint32_t div[CS_ROUNDUP_INTERVALS];
  fill(div, 4);
  /* 1.2 MiB with 4 divisions of [1 MiB, 2 MiB): steps of 256 KiB -> 1.25 MiB. */
  assert_int_equal(cs_round_size(1258291, div), 1310720);
  /* a power of two stays as it is */
  assert_int_equal(cs_round_size(64 * CS_MiB, div), 64 * CS_MiB);
  /* at or below 512 * divisions: plain 512 rounding */
  assert_int_equal(cs_round_size(2000, div), 2048);
  /* 5 MiB + 1 with 4 divisions of [4 MiB, 8 MiB): steps of 1 MiB -> 6 MiB */
  assert_int_equal(cs_round_size(5 * CS_MiB + 1, div), 6 * CS_MiB);
  /* exactly on a step stays */
  assert_int_equal(cs_round_size(6 * CS_MiB, div), 6 * CS_MiB);

  fill(div, 8);
  assert_int_equal(cs_round_size(3000, div), 3072);          /* 3000 <= 4096: plain */
  assert_int_equal(cs_round_size(5000, div), 5120);          /* steps of 512 above 4096 */
  assert_int_equal(cs_round_size(300 * CS_MiB, div), 320 * CS_MiB); /* steps of 32 MiB */

  /* divisions apply per interval: 2 for [2, 4) MiB only */
  memset(div, 0, sizeof div);
  div[1] = 2;
  assert_int_equal(cs_round_size(2 * CS_MiB + 1, div), 3 * CS_MiB);
  assert_int_equal(cs_round_size(CS_MiB + 1, div), CS_MiB + 512);
  assert_int_equal(cs_round_size(5 * CS_MiB + 1, div), 5 * CS_MiB + 512);

  /* a division that is not a power of two is taken down to one (3 -> 2) */
  fill(div, 3);
  assert_int_equal(cs_round_size(2 * CS_MiB + 1, div), 3 * CS_MiB);
}

static void test_segment_sizes(void **state) {
  (void)state;
  /* small pool */
  assert_int_equal(cs_segment_size(512, false, false), 2 * CS_MiB);
  assert_int_equal(cs_segment_size(CS_MiB, true, false), 2 * CS_MiB);
  /* PyTorch's large pool (split_large) */
  assert_int_equal(cs_segment_size(CS_MiB + 512, true, false), 20 * CS_MiB);
  assert_int_equal(cs_segment_size(10 * CS_MiB - 512, true, false), 20 * CS_MiB);
  assert_int_equal(cs_segment_size(10 * CS_MiB, true, false), 10 * CS_MiB);
  assert_int_equal(cs_segment_size(11 * CS_MiB + 512, true, false), 12 * CS_MiB);
  /* IPC-safe default: a segment of its own, rounded to 2 MiB */
  assert_int_equal(cs_segment_size(CS_MiB + 512, false, false), 2 * CS_MiB);
  assert_int_equal(cs_segment_size(3 * CS_MiB, false, false), 4 * CS_MiB);
  assert_int_equal(cs_segment_size(10 * CS_MiB - 512, false, false), 10 * CS_MiB);
  assert_true(cs_size_is_small(CS_MiB));
  assert_false(cs_size_is_small(CS_MiB + 512));
}

static void test_whole_segment_slack(void **state) {
  (void)state;
  size_t rounding = 20 * CS_MiB;
  assert_int_equal(cs_whole_segment_slack(3 * CS_MiB, rounding), 2 * CS_MiB);
  assert_int_equal(cs_whole_segment_slack(64 * CS_MiB, rounding), 8 * CS_MiB);
  assert_int_equal(cs_whole_segment_slack((size_t)1 << 30, rounding), 20 * CS_MiB);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_to_512),
      cmocka_unit_test(test_roundup_intervals),
      cmocka_unit_test(test_power2_divisions),
      cmocka_unit_test(test_segment_sizes),
      cmocka_unit_test(test_whole_segment_slack),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

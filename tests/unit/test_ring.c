/* SPDX-License-Identifier: Apache-2.0 */
/* The event ring: order, wrap-around (oldest dropped), the packed fields, disabling, streams, and
 * event times (ticks in the ring, wall-clock microseconds in a copy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

#include "record/ring.h"

static void test_order_and_wrap(void **state) {
  (void)state;
  cs_ring_t r;
  assert_int_equal(cs_ring_init(&r, 4), 0);
  for (uint64_t i = 1; i <= 6; i++) cs_ring_push(&r, CS_ACTION_ALLOC, 1, 0x1000 * i, i, 0, (uint32_t)i);
  cs_ring_entry_t out[4];
  uint64_t dropped = 0;
  assert_int_equal(cs_ring_copy(&r, out, &dropped), 4);
  assert_int_equal(dropped, 2);
  for (int i = 0; i < 4; i++) { /* the newest four, oldest first */
    assert_int_equal(out[i].addr, 0x1000 * (uint64_t)(i + 3));
    assert_int_equal(out[i].stack_id, i + 3);
    assert_int_equal(cs_ring_entry_action(&out[i]), CS_ACTION_ALLOC);
    assert_int_equal(cs_ring_entry_device(&out[i]), 1);
  }
  assert_true(cs_ring_entry_epoch_us(&out[3]) >= cs_ring_entry_epoch_us(&out[0]));
  cs_ring_destroy(&r);
}

static void test_fields_and_streams(void **state) {
  (void)state;
  cs_ring_t r;
  assert_int_equal(cs_ring_init(&r, 8), 0);
  cs_ring_push(&r, CS_ACTION_OOM, 63, 12345, 1 << 20, 0xabc0, 0);
  cs_ring_push(&r, CS_ACTION_SEGMENT_FREE, 0, 0x7f0000000000u, 2 << 20, 0, 9);
  cs_ring_push(&r, CS_ACTION_FREE_COMPLETED, 2, 0x10, 512, 0xabc0, 9);
  cs_ring_entry_t out[8];
  assert_int_equal(cs_ring_copy(&r, out, NULL), 3);
  assert_int_equal(cs_ring_entry_action(&out[0]), CS_ACTION_OOM);
  assert_int_equal(cs_ring_entry_device(&out[0]), 63);
  assert_int_equal(cs_stream_table_handle(&r.streams, out[0].stream), 0xabc0);
  assert_int_equal(cs_stream_table_handle(&r.streams, out[1].stream), 0); /* the default stream is index 0 */
  assert_int_equal(out[2].stream, out[0].stream);           /* the same handle, the same index */
  assert_string_equal(cs_action_name(CS_ACTION_SEGMENT_FREE), "segment_free");
  assert_string_equal(cs_action_name(CS_ACTION_FREE_REQUESTED), "free_requested");
  assert_true(cs_ring_entry_epoch_us(&out[0]) >= r.start_epoch_us);
  cs_ring_destroy(&r);
}

static void test_disable_forgets_and_zero_capacity(void **state) {
  (void)state;
  cs_ring_t r;
  assert_int_equal(cs_ring_init(&r, 8), 0);
  cs_ring_push(&r, CS_ACTION_ALLOC, 0, 1, 1, 0, 0);
  cs_ring_set_enabled(&r, false);
  cs_ring_push(&r, CS_ACTION_ALLOC, 0, 2, 1, 0, 0);
  cs_ring_entry_t out[8];
  assert_int_equal(cs_ring_copy(&r, out, NULL), 0);
  cs_ring_set_enabled(&r, true);
  cs_ring_push(&r, CS_ACTION_ALLOC, 0, 3, 1, 0, 0);
  assert_int_equal(cs_ring_copy(&r, out, NULL), 1);
  assert_int_equal(out[0].addr, 3);
  cs_ring_destroy(&r);

  assert_int_equal(cs_ring_init(&r, 0), 0); /* CUDASNAP_MAX_ENTRIES=0: state only */
  cs_ring_push(&r, CS_ACTION_ALLOC, 0, 1, 1, 0, 0);
  cs_ring_set_enabled(&r, true);
  cs_ring_push(&r, CS_ACTION_ALLOC, 0, 1, 1, 0, 0);
  assert_int_equal(cs_ring_copy(&r, out, NULL), 0);
  cs_ring_destroy(&r);
}

static uint64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Ticks become the wall clock: entries 30 ms apart are 30 ms apart in the copy, and all lie between
 * the ring's start and the copy. */
static void test_times_are_wall_clock_microseconds(void **state) {
  (void)state;
  cs_ring_t r;
  assert_int_equal(cs_ring_init(&r, 8), 0);
  cs_ring_push(&r, CS_ACTION_ALLOC, 0, 0x1000, 512, 0, 0);
  sleep_ms(30);
  cs_ring_push(&r, CS_ACTION_ALLOC, 0, 0x2000, 512, 0, 0);
  cs_ring_entry_t out[8];
  assert_int_equal(cs_ring_copy(&r, out, NULL), 2);
  uint64_t after = wall_us();
  uint64_t first = cs_ring_entry_epoch_us(&out[0]), second = cs_ring_entry_epoch_us(&out[1]);
  assert_true(first >= r.start_epoch_us);
  assert_true(second <= after + 1000); /* the wall clock may be stepped; a millisecond of slack */
  assert_true(second - first >= 29000);
  assert_true(second - first < 1000000); /* a loaded machine may oversleep, not by a second */
  cs_ring_destroy(&r);
}

/* An event pushed as of the same moment takes the last entry's time; a plain push reads the clock;
 * after a copy has converted the last entry, the clock is read again. */
static void test_same_time_pushes(void **state) {
  (void)state;
  cs_ring_t r;
  assert_int_equal(cs_ring_init(&r, 8), 0);
  cs_ring_push(&r, CS_ACTION_FREE_REQUESTED, 3, 0x1000, 512, 0, 0);
  sleep_ms(5);
  cs_ring_push_same_time(&r, CS_ACTION_FREE_COMPLETED, 3, 0x1000, 512, 0, 0);
  sleep_ms(5);
  cs_ring_push(&r, CS_ACTION_FREE_COMPLETED, 3, 0x2000, 512, 0, 0); /* completed later: a fence */
  cs_ring_entry_t out[8];
  assert_int_equal(cs_ring_copy(&r, out, NULL), 3);
  sleep_ms(5);
  cs_ring_push_same_time(&r, CS_ACTION_FREE_COMPLETED, 3, 0x3000, 512, 0, 0); /* last one converted */
  assert_int_equal(cs_ring_copy(&r, out, NULL), 4);
  assert_int_equal(cs_ring_entry_epoch_us(&out[1]), cs_ring_entry_epoch_us(&out[0]));
  assert_true(cs_ring_entry_epoch_us(&out[2]) >= cs_ring_entry_epoch_us(&out[1]) + 4000);
  assert_true(cs_ring_entry_epoch_us(&out[3]) >= cs_ring_entry_epoch_us(&out[2]) + 4000);
  assert_int_equal(cs_ring_entry_action(&out[1]), CS_ACTION_FREE_COMPLETED);
  cs_ring_destroy(&r);
}

/* Times converted at different copies never go backwards, and a copy changes no earlier time. */
static void test_times_across_copies(void **state) {
  (void)state;
  cs_ring_t r;
  assert_int_equal(cs_ring_init(&r, 64), 0);
  cs_ring_entry_t first[64], later[64];
  uint64_t last_us = 0;
  size_t n = 0;
  for (int round = 0; round < 6; round++) {
    cs_ring_push(&r, CS_ACTION_ALLOC, 0, 0x1000u * (uint64_t)(round + 1), 512, 0, 0);
    sleep_ms(round % 2 ? 3 : 1);
    n = cs_ring_copy(&r, later, NULL);
    assert_int_equal(n, (size_t)round + 1);
    assert_true(cs_ring_entry_epoch_us(&later[n - 1]) >= last_us);
    last_us = cs_ring_entry_epoch_us(&later[n - 1]);
    if (round == 0) first[0] = later[0];
  }
  assert_memory_equal(&first[0], &later[0], sizeof first[0]);
  cs_ring_destroy(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_and_wrap),
      cmocka_unit_test(test_fields_and_streams),
      cmocka_unit_test(test_disable_forgets_and_zero_capacity),
      cmocka_unit_test(test_times_are_wall_clock_microseconds),
      cmocka_unit_test(test_same_time_pushes),
      cmocka_unit_test(test_times_across_copies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

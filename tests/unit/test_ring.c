/* The event ring: order, wrap-around (oldest dropped), the packed fields, disabling, streams, and
 * concurrent pushes (run under TSan by scripts/test.sh). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "snapshot/ring.h"

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
  assert_true(cs_ring_entry_us(&out[3]) >= cs_ring_entry_us(&out[0]));
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
  assert_int_equal(cs_ring_stream(&r, out[0].stream), 0xabc0);
  assert_int_equal(cs_ring_stream(&r, out[1].stream), 0);   /* the default stream is index 0 */
  assert_int_equal(out[2].stream, out[0].stream);           /* the same handle, the same index */
  assert_string_equal(cs_action_name(CS_ACTION_SEGMENT_FREE), "segment_free");
  assert_string_equal(cs_action_name(CS_ACTION_FREE_REQUESTED), "free_requested");
  assert_true(cs_ring_epoch_us(&r, &out[0]) >= r.start_epoch_us);
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

enum { PUSHERS = 4, PUSHES = 20000 };
static cs_ring_t shared_ring;

static void *pusher(void *arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  for (uint64_t i = 0; i < PUSHES; i++) cs_ring_push(&shared_ring, CS_ACTION_ALLOC, (int)id, id << 32 | i, i, 0, 0);
  return NULL;
}

static void test_threads_concurrent_pushes(void **state) {
  (void)state;
  assert_int_equal(cs_ring_init(&shared_ring, 1000), 0);
  pthread_t t[PUSHERS];
  for (uintptr_t i = 0; i < PUSHERS; i++) pthread_create(&t[i], NULL, pusher, (void *)i);
  for (int i = 0; i < PUSHERS; i++) pthread_join(t[i], NULL);
  cs_ring_entry_t *out = calloc(1000, sizeof *out);
  uint64_t dropped = 0;
  assert_int_equal(cs_ring_copy(&shared_ring, out, &dropped), 1000);
  assert_int_equal(dropped, PUSHERS * PUSHES - 1000);
  /* per pusher, the kept entries are in push order */
  uint64_t last[PUSHERS] = {0};
  for (int i = 0; i < 1000; i++) {
    int who = cs_ring_entry_device(&out[i]);
    uint64_t seq = out[i].addr & 0xffffffffu;
    assert_true(last[who] == 0 || seq > last[who]);
    last[who] = seq;
  }
  free(out);
  cs_ring_destroy(&shared_ring);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_and_wrap),
      cmocka_unit_test(test_fields_and_streams),
      cmocka_unit_test(test_disable_forgets_and_zero_capacity),
      cmocka_unit_test(test_threads_concurrent_pushes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

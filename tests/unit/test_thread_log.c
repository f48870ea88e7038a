/* The per-thread chunked history: threads writing in turn under one lock get back one history in
 * the exact order of the lock, a full log keeps a suffix of it (never a history with holes), more
 * writers than spare chunks included, and times, same-time entries, clearing and disabling
 * behave as a ring's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <cmocka.h>

#include "record/thread_log.h"

typedef struct shared_s {
  cs_thread_log_t log;
  pthread_mutex_t lock;
  uint64_t next; /* the number of the next event, given under the lock */
  int per_thread;
} shared_t;

static void *writer(void *arg) {
  shared_t *s = arg;
  for (int i = 0; i < s->per_thread; i++) {
    pthread_mutex_lock(&s->lock);
    uint64_t n = ++s->next;
    cs_thread_log_push(&s->log, CS_ACTION_ALLOC, 3, n, 64, (uintptr_t)(n % 3), (uint32_t)n);
    if (n % 5 == 0) cs_thread_log_push_same_time(&s->log, CS_ACTION_FREE_COMPLETED, 3, n, 64, 0, 0);
    pthread_mutex_unlock(&s->lock);
  }
  return NULL;
}

/* threads x per_thread events from concurrent writers; returns the copy (caller frees) */
static cs_ring_entry_t *run_writers(shared_t *s, size_t capacity, int threads, int per_thread, size_t *n,
                                    uint64_t *dropped) {
  assert_int_equal(cs_thread_log_init(&s->log, capacity), 0);
  pthread_mutex_init(&s->lock, NULL);
  s->next = 0;
  s->per_thread = per_thread;
  pthread_t t[64];
  assert_true(threads <= 64);
  for (int i = 0; i < threads; i++) assert_int_equal(pthread_create(&t[i], NULL, writer, s), 0);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  cs_ring_entry_t *out = calloc(cs_thread_log_room(&s->log) + 1, sizeof *out);
  assert_non_null(out);
  *n = cs_thread_log_copy(&s->log, out, dropped);
  pthread_mutex_destroy(&s->lock);
  return out;
}

/* The copy is events first..s->next in order, each alloc (and every fifth one's free) whole. */
static void assert_suffix(const shared_t *s, const cs_ring_entry_t *out, size_t n) {
  assert_true(n > 0);
  size_t i = 0;
  if (cs_ring_entry_action(&out[0]) == CS_ACTION_FREE_COMPLETED) i = 1; /* cut between a pair */
  uint64_t expect = out[i].addr;
  for (; i < n; i++) {
    assert_int_equal(cs_ring_entry_action(&out[i]), CS_ACTION_ALLOC);
    assert_int_equal(out[i].addr, expect);
    assert_int_equal(out[i].stack_id, (uint32_t)expect);
    assert_int_equal(cs_stream_table_handle(&s->log.streams, out[i].stream), expect % 3);
    assert_int_equal(cs_ring_entry_device(&out[i]), 3);
    if (expect % 5 == 0) {
      assert_true(i + 1 < n);
      i++;
      assert_int_equal(cs_ring_entry_action(&out[i]), CS_ACTION_FREE_COMPLETED);
      assert_int_equal(out[i].addr, expect);
      assert_int_equal(cs_ring_entry_epoch_us(&out[i]), cs_ring_entry_epoch_us(&out[i - 1])); /* same time */
    }
    if (i > 0) assert_true(cs_ring_entry_epoch_us(&out[i]) >= cs_ring_entry_epoch_us(&out[i - 1]));
    expect++;
  }
  assert_int_equal(expect - 1, s->next); /* it ends with the newest */
}

static void test_threads_in_lock_order(void **state) {
  (void)state;
  shared_t s;
  size_t n;
  uint64_t dropped;
  cs_ring_entry_t *out = run_writers(&s, 100000, 8, 3000, &n, &dropped);
  assert_int_equal(dropped, 0);
  assert_int_equal(n, 8 * 3000 + 8 * 3000 / 5);
  assert_int_equal(out[0].addr, 1);
  assert_suffix(&s, out, n);
  free(out);
  cs_thread_log_destroy(&s.log);
}

static void test_full_log_keeps_a_suffix(void **state) {
  (void)state;
  shared_t s;
  size_t n;
  uint64_t dropped;
  cs_ring_entry_t *out = run_writers(&s, 1000, 4, 5000, &n, &dropped);
  uint64_t pushed = 4 * 5000 + 4 * 5000 / 5;
  assert_int_equal(n, 1000); /* the capacity, with no more writers than spare chunks */
  assert_int_equal(n + dropped, pushed);
  assert_suffix(&s, out, n);
  free(out);
  cs_thread_log_destroy(&s.log);
}

static void test_more_writers_than_spares(void **state) {
  (void)state;
  shared_t s;
  size_t n;
  uint64_t dropped;
  /* 60 threads each leave a partly filled chunk: more than there are chunks, so partly filled ones
   * are taken from other writers */
  cs_ring_entry_t *out = run_writers(&s, 300, 60, 100, &n, &dropped);
  assert_int_equal(n + dropped, 60 * 100 + 60 * 100 / 5);
  assert_suffix(&s, out, n);
  free(out);
  /* a second copy gives the same entries and times */
  cs_ring_entry_t *again = calloc(cs_thread_log_room(&s.log), sizeof *again);
  uint64_t dropped2;
  size_t n2 = cs_thread_log_copy(&s.log, again, &dropped2);
  assert_int_equal(n2, n);
  free(again);
  cs_thread_log_destroy(&s.log);
}

static void test_clear_disable_and_zero_capacity(void **state) {
  (void)state;
  cs_thread_log_t l;
  assert_int_equal(cs_thread_log_init(&l, 10), 0);
  for (int i = 0; i < 700; i++) cs_thread_log_push(&l, CS_ACTION_ALLOC, 0, (uint64_t)i, 1, 0, 0);
  cs_thread_log_clear(&l);
  cs_thread_log_push(&l, CS_ACTION_SEGMENT_ALLOC, 0, 42, 1, 0, 0);
  cs_ring_entry_t out[CS_THREAD_LOG_CHUNK * (CS_THREAD_LOG_SPARE + 1)];
  uint64_t dropped;
  assert_int_equal(cs_thread_log_copy(&l, out, &dropped), 1);
  assert_int_equal(out[0].addr, 42);
  assert_int_equal(dropped, 0);
  cs_thread_log_set_enabled(&l, false);
  cs_thread_log_push(&l, CS_ACTION_ALLOC, 0, 43, 1, 0, 0);
  assert_int_equal(cs_thread_log_copy(&l, out, &dropped), 0);
  cs_thread_log_set_enabled(&l, true);
  cs_thread_log_push(&l, CS_ACTION_ALLOC, 0, 44, 1, 0, 0);
  assert_int_equal(cs_thread_log_copy(&l, out, &dropped), 1);
  assert_int_equal(out[0].addr, 44);
  cs_thread_log_destroy(&l);

  assert_int_equal(cs_thread_log_init(&l, 0), 0);
  cs_thread_log_push(&l, CS_ACTION_ALLOC, 0, 1, 1, 0, 0);
  assert_int_equal(cs_thread_log_room(&l), 0);
  assert_int_equal(cs_thread_log_copy(&l, out, &dropped), 0);
  cs_thread_log_destroy(&l);
}

/* Two logs written by one thread in turn, then one destroyed and another made: each keeps its own. */
static void test_logs_apart(void **state) {
  (void)state;
  cs_thread_log_t a, b;
  assert_int_equal(cs_thread_log_init(&a, 100), 0);
  assert_int_equal(cs_thread_log_init(&b, 100), 0);
  for (uint64_t i = 0; i < 50; i++) {
    cs_thread_log_push(&a, CS_ACTION_ALLOC, 0, i, 1, 0, 0);
    cs_thread_log_push(&b, CS_ACTION_ALLOC, 1, 1000 + i, 1, 0, 0);
  }
  cs_thread_log_destroy(&a);
  cs_thread_log_t c;
  assert_int_equal(cs_thread_log_init(&c, 100), 0);
  cs_thread_log_push(&c, CS_ACTION_ALLOC, 2, 7, 1, 0, 0);
  cs_ring_entry_t out[CS_THREAD_LOG_CHUNK * 20];
  uint64_t dropped;
  assert_int_equal(cs_thread_log_copy(&b, out, &dropped), 50);
  for (int i = 0; i < 50; i++) assert_int_equal(out[i].addr, 1000 + (uint64_t)i);
  assert_int_equal(cs_thread_log_copy(&c, out, &dropped), 1);
  assert_int_equal(out[0].addr, 7);
  cs_thread_log_destroy(&b);
  cs_thread_log_destroy(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_in_lock_order),
      cmocka_unit_test(test_full_log_keeps_a_suffix),
      cmocka_unit_test(test_more_writers_than_spares),
      cmocka_unit_test(test_clear_disable_and_zero_capacity),
      cmocka_unit_test(test_logs_apart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Stack interning on synthetic stacks: equal stacks share an id, ids are dense from 1, the PCs
 * come back, the max_stacks bound gives id 0, clear forgets, a thread's repeated stack is answered
 * from its last one only where that is right, and 8 threads interning overlapping
 * stack sets (with growth under way, and a reader calling cs_intern_get meanwhile) agree on every
 * id. The thread test is meant to run under TSan too. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "record/intern.h"
#include "record/stack.h"

/* Stack number k: 1..40 PCs that look like code addresses, different for every k. */
static size_t make_stack(uint32_t k, uintptr_t *pcs) {
  size_t n = 1 + k % 40;
  uint64_t x = 0x9e3779b97f4a7c15u * (k + 1);
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    pcs[i] = (uintptr_t)(0x400000u + (x & 0xffffffffu));
  }
  pcs[0] = (uintptr_t)0x7f0000000000u + k; /* unique per k even where the tail repeats */
  return n;
}

static void test_same_stack_same_id(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(1000);
  assert_non_null(t);
  uintptr_t a[3] = {0x1000, 0x2000, 0x3000};
  uintptr_t b[3] = {0x1000, 0x2000, 0x3000}; /* equal contents, another buffer */
  uint32_t id = cs_intern_stack(t, a, 3);
  assert_int_equal(id, 1);
  assert_int_equal(cs_intern_stack(t, b, 3), id);
  assert_int_equal(cs_intern_stack(t, a, 3), id);
  assert_int_equal(cs_intern_count(t), 1);
  cs_intern_destroy(t);
}

static void test_different_stacks_different_ids(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(1000);
  assert_non_null(t);
  uintptr_t s[4] = {0x1000, 0x2000, 0x3000, 0x4000};
  uintptr_t other[3] = {0x1000, 0x2000, 0x3001};
  uint32_t ids[6] = {
      cs_intern_stack(t, s, 3),
      cs_intern_stack(t, s, 2),     /* a prefix is another stack */
      cs_intern_stack(t, s, 4),     /* so is an extension */
      cs_intern_stack(t, s + 1, 3), /* and a suffix */
      cs_intern_stack(t, other, 3), /* one PC differs */
      cs_intern_stack(t, s, 1),
  };
  for (int i = 0; i < 6; i++) {
    assert_int_equal(ids[i], (uint32_t)i + 1); /* dense, in order of arrival */
    for (int j = 0; j < i; j++) assert_int_not_equal(ids[i], ids[j]);
  }
  assert_int_equal(cs_intern_count(t), 6);
  cs_intern_destroy(t);
}

static void test_empty_stack_is_zero(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(10);
  assert_non_null(t);
  uintptr_t pc = 0x1000;
  assert_int_equal(cs_intern_stack(t, &pc, 0), 0);
  assert_int_equal(cs_intern_count(t), 0);
  cs_intern_destroy(t);
}

static void test_get_returns_pcs(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(5000);
  assert_non_null(t);
  uintptr_t pcs[64];
  for (uint32_t k = 0; k < 3000; k++) { /* several arena chunks and table growths */
    size_t n = make_stack(k, pcs);
    assert_int_equal(cs_intern_stack(t, pcs, n), k + 1);
  }
  for (uint32_t k = 0; k < 3000; k++) {
    size_t n = make_stack(k, pcs), got = 0;
    const uintptr_t *back = cs_intern_get(t, k + 1, &got);
    assert_non_null(back);
    assert_int_equal(got, n);
    assert_memory_equal(back, pcs, n * sizeof pcs[0]);
    assert_int_equal(cs_intern_stack(t, pcs, n), k + 1); /* found again after growth */
  }
  size_t n = 99;
  assert_null(cs_intern_get(t, 0, &n));
  assert_int_equal(n, 0);
  assert_null(cs_intern_get(t, 3001, &n));
  assert_int_equal(cs_intern_count(t), 3000);
  cs_intern_destroy(t);
}

static void test_long_stack(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(10);
  assert_non_null(t);
  /* longer than an arena chunk holds: gets a chunk of its own */
  enum { N = 20000 };
  uintptr_t *pcs = malloc(N * sizeof *pcs);
  assert_non_null(pcs);
  for (size_t i = 0; i < N; i++) pcs[i] = 0x1000 + i;
  /* volatile: with the constant length GCC's link-time optimizer clones cs_intern_stack for this
     call and warns (-Waggressive-loop-optimizations) about a hashing loop the clone never runs */
  volatile size_t length = N;
  assert_int_equal(cs_intern_stack(t, pcs, length), 1);
  assert_int_equal(cs_intern_stack(t, pcs, length), 1);
  size_t n = 0;
  const uintptr_t *back = cs_intern_get(t, 1, &n);
  assert_int_equal(n, N);
  assert_memory_equal(back, pcs, N * sizeof *pcs);
  free(pcs);
  cs_intern_destroy(t);
}

static void test_max_stacks_bound(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(100);
  assert_non_null(t);
  uintptr_t pcs[64];
  for (uint32_t k = 0; k < 100; k++) {
    size_t n = make_stack(k, pcs);
    assert_int_equal(cs_intern_stack(t, pcs, n), k + 1);
  }
  for (uint32_t k = 100; k < 200; k++) {
    size_t n = make_stack(k, pcs);
    assert_int_equal(cs_intern_stack(t, pcs, n), 0); /* full: "no stack" */
  }
  for (uint32_t k = 0; k < 100; k++) { /* known stacks still resolve */
    size_t n = make_stack(k, pcs);
    assert_int_equal(cs_intern_stack(t, pcs, n), k + 1);
  }
  assert_int_equal(cs_intern_count(t), 100);
  cs_intern_destroy(t);

  t = cs_intern_create(0); /* stacks off */
  assert_non_null(t);
  assert_int_equal(cs_intern_stack(t, pcs, make_stack(1, pcs)), 0);
  assert_null(cs_intern_get(t, 1, NULL));
  cs_intern_destroy(t);

  t = cs_intern_create(1);
  assert_non_null(t);
  assert_int_equal(cs_intern_stack(t, pcs, make_stack(1, pcs)), 1);
  assert_int_equal(cs_intern_stack(t, pcs, make_stack(2, pcs)), 0);
  assert_int_equal(cs_intern_stack(t, pcs, make_stack(1, pcs)), 1);
  cs_intern_destroy(t);
}

static void test_clear(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(5000);
  assert_non_null(t);
  uintptr_t pcs[64];
  for (uint32_t k = 0; k < 2000; k++) cs_intern_stack(t, pcs, make_stack(k, pcs));
  assert_int_equal(cs_intern_count(t), 2000);
  cs_intern_clear(t);
  assert_int_equal(cs_intern_count(t), 0);
  assert_null(cs_intern_get(t, 1, NULL));
  /* ids start again from 1, in the new order of arrival */
  for (uint32_t k = 0; k < 2000; k++) {
    uint32_t rev = 1999 - k;
    assert_int_equal(cs_intern_stack(t, pcs, make_stack(rev, pcs)), k + 1);
  }
  size_t n = 0;
  const uintptr_t *back = cs_intern_get(t, 1, &n);
  assert_int_equal(n, make_stack(1999, pcs));
  assert_memory_equal(back, pcs, n * sizeof pcs[0]);
  cs_intern_destroy(t);
}

/* A mirror set after stacks were interned (a fork child's, before its recording file) gets those
 * first, in id order, then each new one. */
typedef struct mirrored_s {
  uint32_t ids[8];
  size_t n[8];
  size_t count;
} mirrored_t;

static void mirror_into(void *ctx, uint32_t id, const uintptr_t *pcs, size_t n) {
  mirrored_t *m = ctx;
  (void)pcs;
  if (m->count < 8) {
    m->ids[m->count] = id;
    m->n[m->count++] = n;
  }
}

static void test_mirror_gets_earlier_stacks(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(100);
  uintptr_t pcs[64];
  for (uint32_t k = 0; k < 3; k++) cs_intern_stack(t, pcs, make_stack(k, pcs));
  mirrored_t m = {0};
  cs_intern_set_mirror(t, mirror_into, &m);
  assert_int_equal(m.count, 3);
  for (uint32_t k = 0; k < 3; k++) {
    assert_int_equal(m.ids[k], k + 1);
    assert_int_equal(m.n[k], make_stack(k, pcs));
  }
  assert_int_equal(cs_intern_stack(t, pcs, make_stack(3, pcs)), 4);
  assert_int_equal(m.count, 4);
  assert_int_equal(m.ids[3], 4);
  cs_intern_set_mirror(t, NULL, NULL);
  cs_intern_stack(t, pcs, make_stack(4, pcs));
  assert_int_equal(m.count, 4);
  cs_intern_destroy(t);
}

/* Captured stacks intern like synthetic ones: the same call site twice gives one id. */
static void test_captured_stacks(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(100);
  assert_non_null(t);
  uint32_t ids[2];
  /* volatile: an unrolled loop would make two call sites, hence two stacks */
  for (volatile int i = 0; i < 2; i++) {
    uintptr_t pcs[CS_STACK_MAX_DEPTH];
    size_t n = cs_stack_capture(pcs, CS_STACK_MAX_DEPTH);
    ids[i] = cs_intern_stack(t, pcs, n);
  }
  assert_int_not_equal(ids[0], 0);
  assert_int_equal(ids[0], ids[1]);
  cs_intern_destroy(t);
  cs_intern_destroy(NULL);
}

/* The thread's last stack (issue 36): a repeat is answered without the table, and only for the
 * table, and the contents of the table, it came from. */
static void test_last_stack_repeats(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(100), *u = cs_intern_create(100);
  assert_non_null(t);
  assert_non_null(u);
  uintptr_t a[3] = {0x1000, 0x2000, 0x3000}, b[3] = {0x1000, 0x2000, 0x3001};
  const unsigned long hits = cs_intern_test_last_hits();
  assert_int_equal(cs_intern_stack(t, a, 3), 1);
  assert_int_equal(cs_intern_stack(t, a, 3), 1);
  assert_int_equal(cs_intern_stack(t, a, 3), 1);
  assert_int_equal(cs_intern_test_last_hits(), hits + 2);
  /* another stack, a prefix of it, then the first again: none is the last one */
  assert_int_equal(cs_intern_stack(t, b, 3), 2);
  assert_int_equal(cs_intern_stack(t, a, 2), 3);
  assert_int_equal(cs_intern_stack(t, a, 3), 1);
  assert_int_equal(cs_intern_test_last_hits(), hits + 2);
  /* another table, where the same stacks have other ids */
  assert_int_equal(cs_intern_stack(u, b, 3), 1);
  assert_int_equal(cs_intern_stack(u, a, 3), 2);
  assert_int_equal(cs_intern_stack(t, a, 3), 1);
  assert_int_equal(cs_intern_stack(u, a, 3), 2);
  assert_int_equal(cs_intern_test_last_hits(), hits + 2);
  /* cleared: the id this thread kept names nothing now */
  cs_intern_clear(u);
  assert_int_equal(cs_intern_stack(u, b, 3), 1);
  assert_int_equal(cs_intern_stack(u, b, 3), 1);
  assert_int_equal(cs_intern_test_last_hits(), hits + 3);
  cs_intern_clear(u);
  assert_int_equal(cs_intern_stack(u, a, 3), 1);
  cs_intern_destroy(u);
  cs_intern_destroy(t);
}

/* ---- 8 threads ---- */

enum { THREADS = 8, STACKS = 6000, PER_THREAD = 3000, ROUNDS = 3 };

typedef struct worker_s {
  cs_intern_t *t;
  int index;
  uint32_t ids[STACKS]; /* what this thread got for stack k; 0 = not interned by it */
  bool bad;             /* a disagreement seen inside the thread (cmocka asserts stay in main) */
} worker_t;

static atomic_bool threads_done;

static void *intern_worker(void *arg) {
  worker_t *w = arg;
  uintptr_t pcs[64];
  /* thread i takes stacks [i * 750, i * 750 + 3000): neighbours overlap by 2250 */
  const uint32_t first = (uint32_t)w->index * (STACKS - PER_THREAD) / (THREADS - 1);
  for (int round = 0; round < ROUNDS; round++)
    for (uint32_t j = 0; j < PER_THREAD; j++) {
      /* odd threads walk backwards, so threads meet on the same new stacks from both ends */
      uint32_t k = first + ((w->index & 1) ? PER_THREAD - 1 - j : j);
      size_t n = make_stack(k, pcs);
      uint32_t id = cs_intern_stack(w->t, pcs, n);
      if (id == 0 || (w->ids[k] != 0 && w->ids[k] != id)) w->bad = true;
      w->ids[k] = id;
    }
  return NULL;
}

/* The dump thread's view: every id up to the count resolves, to a complete stack. */
static void *reader(void *arg) {
  cs_intern_t *t = arg;
  uintptr_t pcs[64];
  long bad = 0;
  while (!atomic_load(&threads_done)) {
    uint32_t count = cs_intern_count(t);
    for (uint32_t id = 1; id <= count; id++) {
      size_t n = 0;
      const uintptr_t *p = cs_intern_get(t, id, &n);
      if (!p || n == 0 || n > 40) {
        bad++;
        continue;
      }
      /* the stack's first PC names its k; the rest must match make_stack(k) */
      uint32_t k = (uint32_t)(p[0] - (uintptr_t)0x7f0000000000u);
      if (k >= STACKS || make_stack(k, pcs) != n || memcmp(p, pcs, n * sizeof *p) != 0) bad++;
    }
  }
  return (void *)bad;
}

static void test_threads_overlapping_sets(void **state) {
  (void)state;
  cs_intern_t *t = cs_intern_create(STACKS);
  assert_non_null(t);
  worker_t *w = calloc(THREADS, sizeof *w);
  assert_non_null(w);
  pthread_t th[THREADS], rd;
  atomic_store(&threads_done, false);
  assert_int_equal(pthread_create(&rd, NULL, reader, t), 0);
  for (int i = 0; i < THREADS; i++) {
    w[i].t = t;
    w[i].index = i;
    assert_int_equal(pthread_create(&th[i], NULL, intern_worker, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  atomic_store(&threads_done, true);
  void *reader_bad = NULL;
  pthread_join(rd, &reader_bad);
  assert_int_equal((long)reader_bad, 0);

  /* every thread saw one id per stack, and all threads agree */
  uint32_t agreed[STACKS] = {0};
  for (int i = 0; i < THREADS; i++) {
    assert_false(w[i].bad);
    for (uint32_t k = 0; k < STACKS; k++) {
      if (!w[i].ids[k]) continue;
      if (!agreed[k]) agreed[k] = w[i].ids[k];
      assert_int_equal(w[i].ids[k], agreed[k]);
    }
  }
  /* every stack was interned by someone; the ids are exactly 1..STACKS, each once */
  assert_int_equal(cs_intern_count(t), STACKS);
  bool *seen = calloc(STACKS + 1, sizeof *seen);
  assert_non_null(seen);
  uintptr_t pcs[64];
  for (uint32_t k = 0; k < STACKS; k++) {
    assert_true(agreed[k] >= 1 && agreed[k] <= STACKS);
    assert_false(seen[agreed[k]]);
    seen[agreed[k]] = true;
    size_t n = 0;
    const uintptr_t *back = cs_intern_get(t, agreed[k], &n);
    assert_int_equal(n, make_stack(k, pcs));
    assert_memory_equal(back, pcs, n * sizeof pcs[0]);
  }
  free(seen);
  free(w);
  cs_intern_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_stack_same_id),
      cmocka_unit_test(test_different_stacks_different_ids),
      cmocka_unit_test(test_empty_stack_is_zero),
      cmocka_unit_test(test_get_returns_pcs),
      cmocka_unit_test(test_long_stack),
      cmocka_unit_test(test_max_stacks_bound),
      cmocka_unit_test(test_clear),
      cmocka_unit_test(test_mirror_gets_earlier_stacks),
      cmocka_unit_test(test_captured_stacks),
      cmocka_unit_test(test_last_stack_repeats),
      cmocka_unit_test(test_threads_overlapping_sets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

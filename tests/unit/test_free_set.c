/* SPDX-License-Identifier: Apache-2.0 */
/* The free set's red-black tree against a sorted-array model: random inserts and removals with
 * many equal sizes and several streams, checking the tree's invariants after every step, the
 * order both ways, and lower bounds with their predecessors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "allocator/free_set.h"

enum { N = 2000, STEPS = 20000 };

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static int cmp_blocks(const void *x, const void *y) {
  const cs_block_t *a = *(cs_block_t *const *)x, *b = *(cs_block_t *const *)y;
  return cs_free_set_less(a, b) ? -1 : cs_free_set_less(b, a) ? 1 : 0;
}

typedef struct model_s {
  cs_block_t **sorted; /* the blocks in the set, in key order */
  size_t count;
} model_t;

static void model_sort(model_t *m) { qsort(m->sorted, m->count, sizeof *m->sorted, cmp_blocks); }

static void assert_same_order(const cs_free_set_t *set, const model_t *m) {
  size_t i = 0;
  for (cs_block_t *b = cs_free_set_first(set); b; b = cs_free_set_next(b)) assert_ptr_equal(b, m->sorted[i++]);
  assert_int_equal(i, m->count);
  for (cs_block_t *b = cs_free_set_last(set); b; b = cs_free_set_prev(b)) assert_ptr_equal(b, m->sorted[--i]);
  assert_int_equal(i, 0);
}

static void assert_lower_bound(const cs_free_set_t *set, const model_t *m, uintptr_t stream, size_t size) {
  size_t i = 0;
  while (i < m->count && (m->sorted[i]->stream < stream ||
                          (m->sorted[i]->stream == stream && cs_block_size(m->sorted[i]) < size)))
    i++;
  cs_block_t *pred = (cs_block_t *)1;
  cs_block_t *found = cs_free_set_lower_bound(set, stream, size, &pred);
  assert_ptr_equal(found, i < m->count ? m->sorted[i] : NULL);
  assert_ptr_equal(pred, i > 0 ? m->sorted[i - 1] : NULL);
}

static void test_random_against_model(void **state) {
  (void)state;
  cs_block_t *blocks = calloc(N, sizeof *blocks);
  bool *in_set = calloc(N, sizeof *in_set);
  model_t m = {.sorted = calloc(N, sizeof *m.sorted)};
  assert_non_null(blocks);
  assert_non_null(in_set);
  assert_non_null(m.sorted);
  for (size_t i = 0; i < N; i++) {
    blocks[i].addr = 0x7f0000000000u + (uintptr_t)i * 512u;
    blocks[i].stream = (uintptr_t)(i % 3) * 0x1000;
  }
  cs_free_set_t set;
  cs_free_set_init(&set);
  assert_true(cs_free_set_empty(&set));
  assert_null(cs_free_set_lower_bound(&set, 0, 512, NULL));
  uint64_t seed = 99;
  for (int step = 0; step < STEPS; step++) {
    size_t i = (size_t)(rng_next(&seed) % N);
    if (!in_set[i]) {
      /* few distinct sizes, so the address decides often; flags must not matter */
      cs_block_set_size(&blocks[i], (size_t)(rng_next(&seed) % 16 + 1) * 512);
      cs_block_set_small(&blocks[i], rng_next(&seed) & 1);
      cs_free_set_insert(&set, &blocks[i]);
      m.sorted[m.count++] = &blocks[i];
    } else {
      cs_free_set_remove(&set, &blocks[i]);
      size_t k = 0;
      while (m.sorted[k] != &blocks[i]) k++;
      m.sorted[k] = m.sorted[--m.count];
    }
    in_set[i] = !in_set[i];
    model_sort(&m);
    assert_int_equal(cs_free_set_check(&set), (long)m.count);
    if (step % 500 == 0) assert_same_order(&set, &m);
    assert_lower_bound(&set, &m, (uintptr_t)(rng_next(&seed) % 4) * 0x1000,
                       (size_t)(rng_next(&seed) % 18) * 512);
  }
  /* drain in key order, then in reverse: the deletion cases at the ends of the tree */
  while (m.count > 0) {
    cs_block_t *b = (m.count % 2) ? cs_free_set_first(&set) : cs_free_set_last(&set);
    assert_ptr_equal(b, (m.count % 2) ? m.sorted[0] : m.sorted[m.count - 1]);
    cs_free_set_remove(&set, b);
    if (m.count % 2) memmove(m.sorted, m.sorted + 1, (m.count - 1) * sizeof *m.sorted);
    m.count--;
    assert_int_equal(cs_free_set_check(&set), (long)m.count);
  }
  assert_true(cs_free_set_empty(&set));
  free(m.sorted);
  free(in_set);
  free(blocks);
}

/* A block that takes another's place (the allocator's merge in place, pool.c) leaves the tree
 * valid and in the same order, at every position: root, inner nodes, leaves, either colour. */
static void test_replace_at_every_position(void **state) {
  (void)state;
  enum { COUNT = 300 };
  cs_block_t *blocks = calloc(2 * COUNT, sizeof *blocks); /* [i] and its twin [COUNT + i] */
  model_t m = {.sorted = calloc(COUNT, sizeof *m.sorted)};
  assert_non_null(blocks);
  assert_non_null(m.sorted);
  cs_free_set_t set;
  cs_free_set_init(&set);
  uint64_t seed = 7;
  for (size_t i = 0; i < COUNT; i++) {
    blocks[i].addr = 0x7f0000000000u + (uintptr_t)i * 512u;
    blocks[i].stream = (uintptr_t)(i % 2) * 0x1000;
    cs_block_set_size(&blocks[i], (size_t)(rng_next(&seed) % 8 + 1) * 512);
    cs_free_set_insert(&set, &blocks[i]);
    m.sorted[m.count++] = &blocks[i];
  }
  model_sort(&m);
  for (size_t k = 0; k < COUNT; k++) { /* each position in key order, once */
    cs_block_t *old = m.sorted[k];
    cs_block_t *fresh = old < blocks + COUNT ? old + COUNT : old - COUNT;
    /* the largest key that still sorts before old's successor: a grown block, as after a merge */
    fresh->addr = old->addr;
    fresh->stream = old->stream;
    size_t size = cs_block_size(old);
    const cs_block_t *next = k + 1 < COUNT ? m.sorted[k + 1] : NULL;
    if (!next || next->stream != old->stream) size += 4096;
    else if (cs_block_size(next) > size) size = cs_block_size(next) - 512;
    cs_block_set_size(fresh, size);
    cs_free_set_replace(&set, old, fresh);
    m.sorted[k] = fresh;
    assert_int_equal(cs_free_set_check(&set), COUNT);
    assert_same_order(&set, &m);
  }
  free(m.sorted);
  free(blocks);
}

/* Sizes far beyond 32 bits order correctly, and the flag bits never take part in the order. */
static void test_large_sizes_and_flags(void **state) {
  (void)state;
  cs_block_t b[4] = {{.addr = 0x1000}, {.addr = 0x2000}, {.addr = 0x3000}, {.addr = 0x4000}};
  cs_block_set_size(&b[0], (size_t)1 << 42);      /* 4 TiB */
  cs_block_set_size(&b[1], ((size_t)1 << 32) + 512);
  cs_block_set_size(&b[2], (size_t)1 << 32);
  cs_block_set_size(&b[3], (size_t)1 << 32);
  cs_block_set_state(&b[2], CS_BLOCK_FREE);
  cs_block_set_small(&b[3], true);
  cs_free_set_t set;
  cs_free_set_init(&set);
  for (int i = 0; i < 4; i++) cs_free_set_insert(&set, &b[i]);
  assert_int_equal(cs_free_set_check(&set), 4);
  assert_ptr_equal(cs_free_set_first(&set), &b[2]); /* equal sizes: lower address first */
  assert_ptr_equal(cs_free_set_next(&b[2]), &b[3]);
  assert_ptr_equal(cs_free_set_next(&b[3]), &b[1]);
  assert_ptr_equal(cs_free_set_last(&set), &b[0]);
  assert_int_equal(cs_block_size(&b[0]), (size_t)1 << 42);
  assert_true(cs_block_small(&b[3]));
  cs_block_t *pred;
  assert_ptr_equal(cs_free_set_lower_bound(&set, 0, ((size_t)1 << 32) + 1, &pred), &b[1]);
  assert_ptr_equal(pred, &b[3]);
  assert_ptr_equal(cs_free_set_lower_bound(&set, 0, ((size_t)1 << 42) + 512, &pred), NULL);
  assert_ptr_equal(pred, &b[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_against_model),
      cmocka_unit_test(test_large_sizes_and_flags),
      cmocka_unit_test(test_replace_at_every_position),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

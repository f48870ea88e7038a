/* SPDX-License-Identifier: Apache-2.0 */
/* Block sizes and requests far beyond 32 bits through the whole allocator (the block keeps its
 * state and pool in the low bits of its size): a 1 TiB request, 5 GiB blocks split and merged in
 * PyTorch's large pool, and a request larger than the device failing cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"
#include "common/cs_error.h"

#define GiB ((size_t)1 << 30)
#define TiB ((size_t)1 << 40)

typedef struct seen_s {
  size_t blocks, allocated, total_size;
  size_t last_size, last_requested;
} seen_t;

static void count_block(void *ctx, const cs_segment_info_t *s, const cs_block_info_t *b) {
  (void)s;
  seen_t *seen = ctx;
  seen->blocks++;
  seen->total_size += b->size;
  if (b->state == CS_BLOCK_ALLOCATED) {
    seen->allocated++;
    seen->last_size = b->size;
    seen->last_requested = b->requested;
  } else {
    assert_int_equal(b->requested, 0);
  }
}

static void test_terabyte_request(void **state) {
  (void)state;
  cs_sim_device_t dev;
  cs_sim_device_init(&dev, 4 * TiB);
  cs_backend_t backend = cs_sim_backend(&dev);
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  cs_allocator_t *a = cs_allocator_create(&conf, &backend, NULL);
  assert_non_null(a);
  uintptr_t p = 0, q = 0;
  assert_int_equal(cs_allocator_malloc(a, TiB + 1, 7, 3, &p), 0);
  seen_t seen = {0};
  cs_allocator_visit(a, count_block, &seen);
  assert_int_equal(seen.allocated, 1);
  assert_true(seen.last_size >= TiB + 1 && seen.last_size % 512 == 0);
  assert_int_equal(seen.last_requested, TiB + 1);
  cs_stats_t st;
  cs_allocator_get_stats(a, &st);
  assert_int_equal(st.requested_bytes[CS_STAT_ALL].current, (int64_t)(TiB + 1));
  assert_int_equal(st.allocated_bytes[CS_STAT_ALL].current, (int64_t)seen.last_size);
  /* freed, then reused whole for the same request */
  assert_int_equal(cs_allocator_free(a, p), 0);
  assert_int_equal(cs_allocator_malloc(a, TiB + 1, 7, 3, &q), 0);
  assert_int_equal(q, p);
  /* more than the device has: out of memory, nothing changes */
  uintptr_t r = 0;
  assert_int_equal(cs_allocator_malloc(a, 8 * TiB, 7, 3, &r), -CS_ENOMEM);
  assert_int_equal(cs_allocator_free(a, q), 0);
  assert_int_equal(cs_allocator_empty_cache(a), 0);
  cs_allocator_get_stats(a, &st);
  assert_int_equal(st.reserved_bytes[CS_STAT_ALL].current, 0);
  assert_int_equal(st.num_ooms, 1);
  cs_allocator_destroy(a);
}

/* split_large with no max_split_size: a 12 GiB segment carved into blocks above 4 GiB, then
 * merged back whole. */
static void test_split_and_merge_above_4gib(void **state) {
  (void)state;
  cs_sim_device_t dev;
  cs_sim_device_init(&dev, TiB);
  cs_backend_t backend = cs_sim_backend(&dev);
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  conf.split_large = true;
  cs_allocator_t *a = cs_allocator_create(&conf, &backend, NULL);
  assert_non_null(a);
  uintptr_t big = 0, p[3] = {0};
  assert_int_equal(cs_allocator_malloc(a, 12 * GiB, 0, 0, &big), 0);
  assert_int_equal(cs_allocator_free(a, big), 0);
  assert_int_equal(cs_allocator_malloc(a, 5 * GiB, 0, 0, &p[0]), 0);
  assert_int_equal(cs_allocator_malloc(a, 5 * GiB - 512, 0, 0, &p[1]), 0);
  assert_int_equal(p[0], big);
  assert_int_equal(p[1], big + 5 * GiB);
  seen_t seen = {0};
  cs_allocator_visit(a, count_block, &seen);
  assert_int_equal(seen.blocks, 3);
  assert_int_equal(seen.allocated, 2);
  assert_int_equal(seen.total_size, 12 * GiB);
  cs_stats_t st;
  cs_allocator_get_stats(a, &st);
  assert_int_equal(st.inactive_split_bytes[CS_STAT_ALL].current, (int64_t)(2 * GiB + 512));
  assert_int_equal(cs_allocator_free(a, p[0]), 0);
  assert_int_equal(cs_allocator_free(a, p[1]), 0);
  seen = (seen_t){0};
  cs_allocator_visit(a, count_block, &seen);
  assert_int_equal(seen.blocks, 1);
  assert_int_equal(seen.total_size, 12 * GiB);
  cs_allocator_get_stats(a, &st);
  assert_int_equal(st.inactive_split[CS_STAT_ALL].current, 0);
  assert_int_equal(st.active_bytes[CS_STAT_ALL].current, 0);
  cs_allocator_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_terabyte_request),
      cmocka_unit_test(test_split_and_merge_above_4gib),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

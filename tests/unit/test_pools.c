/* SPDX-License-Identifier: Apache-2.0 */
/* phases/pools.c: heaps and the regions registered inside them (NVTX's memory API). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "phases/pools.h"

enum { MIB = 1 << 20 };

static void test_regions(void **state) {
  (void)state;
  cs_pools_clear();
  uintptr_t heap = 0, other = 0;
  assert_int_equal(cs_pools_heap_register(0x100000, 8 * MIB, 0, &heap), CS_POOLS_OK);
  assert_int_not_equal(heap, 0);
  assert_int_equal(cs_pools_heap_register(0x100000 + MIB, MIB, 0, &other), CS_POOLS_OVERLAP);
  assert_int_equal(cs_pools_region_register(heap, 0x100000 + 4 * MIB, 4 * MIB, 7, 1), CS_POOLS_OK);
  assert_int_equal(cs_pools_region_register(heap, 0x100000, MIB, 5, 2), CS_POOLS_OK);
  assert_int_equal(cs_pools_region_register(0, 0x100000 + MIB, 2 * MIB, 6, 3), CS_POOLS_OK); /* found by address */
  /* mistakes are refused and change nothing */
  assert_int_equal(cs_pools_region_register(heap, 0x100000 + MIB / 2, MIB, 1, 4), CS_POOLS_OVERLAP);
  assert_int_equal(cs_pools_region_register(heap, 0x100000 + 8 * MIB, 1, 1, 4), CS_POOLS_OUTSIDE_HEAP);
  assert_int_equal(cs_pools_region_register(heap + 99, 0x100000 + 3 * MIB, 1, 1, 4), CS_POOLS_UNKNOWN_HEAP);
  assert_int_equal(cs_pools_region_resize(0x100000 + MIB, 4 * MIB), CS_POOLS_OVERLAP);
  assert_int_equal(cs_pools_region_resize(0x100000 + MIB, 3 * MIB), CS_POOLS_OK);
  assert_int_equal(cs_pools_region_unregister(0x100000 + 3), CS_POOLS_UNKNOWN_REGION);
  assert_int_equal(cs_pools_region_name(0x100000 + 4 * MIB, 42), CS_POOLS_OK);
  cs_pool_list_t list;
  assert_int_equal(cs_pools_copy(&list, UINT64_MAX), 0);
  assert_int_equal(list.heap_count, 1);
  assert_int_equal(list.heaps[0].region_count, 3);
  const cs_pool_region_t *r = list.regions + list.heaps[0].first_region;
  assert_int_equal(r[0].addr, 0x100000); /* by address */
  assert_int_equal(r[1].size, 3 * MIB);
  assert_int_equal(r[1].stack_id, 6);
  assert_int_equal(r[2].name_id, 42);
  assert_int_equal(r[2].ticks, 1);
  cs_pool_list_free(&list);
  /* out of order, then reset and unregister */
  assert_int_equal(cs_pools_region_unregister(0x100000 + MIB), CS_POOLS_OK);
  assert_int_equal(cs_pools_region_unregister(0x100000), CS_POOLS_OK);
  assert_int_equal(cs_pools_copy(&list, UINT64_MAX), 0);
  assert_int_equal(list.region_count, 1);
  cs_pool_list_free(&list);
  assert_int_equal(cs_pools_heap_reset(heap), CS_POOLS_OK);
  assert_int_equal(cs_pools_region_unregister(0x100000 + 4 * MIB), CS_POOLS_UNKNOWN_REGION);
  assert_int_equal(cs_pools_heap_unregister(heap), CS_POOLS_OK);
  assert_int_equal(cs_pools_heap_unregister(heap), CS_POOLS_UNKNOWN_HEAP);
  assert_int_equal(cs_pools_copy(&list, UINT64_MAX), 0);
  assert_int_equal(list.heap_count, 0);
  cs_pool_list_free(&list);
}

/* A pool with many live regions, registered and unregistered in scrambled order (a KV cache's
 * pages): every neighbour's overlap is refused, the copy is in address order, and a region grows
 * only up to the next one. */
static void test_many_regions(void **state) {
  (void)state;
  cs_pools_clear();
  enum { N = 4096, PAGE = 4096 };
  const uintptr_t base = 0x7f0000000000;
  uintptr_t heap = 0;
  assert_int_equal(cs_pools_heap_register(base, (size_t)N * PAGE, 1, &heap), CS_POOLS_OK);
  /* every other page, in an order that is neither rising nor falling (2777 is prime to N) */
  for (size_t i = 0; i < N; i++) {
    size_t page = (i * 2777) % N;
    if (page % 2 == 0) assert_int_equal(cs_pools_region_register(heap, base + page * PAGE, PAGE, 0, i), CS_POOLS_OK);
  }
  for (size_t page = 0; page < N; page += 2) {
    /* straddling the region's start or its end, or inside it: refused */
    if (page > 0) assert_int_equal(cs_pools_region_register(heap, base + page * PAGE - 1, 2, 0, 0), CS_POOLS_OVERLAP);
    assert_int_equal(cs_pools_region_register(heap, base + page * PAGE + PAGE - 1, 2, 0, 0), CS_POOLS_OVERLAP);
    assert_int_equal(cs_pools_region_register(heap, base + page * PAGE + 7, 1, 0, 0), CS_POOLS_OVERLAP);
  }
  /* grow into the free page above: fine; one byte further: the next region */
  assert_int_equal(cs_pools_region_resize(base + 10 * PAGE, 2 * PAGE), CS_POOLS_OK);
  assert_int_equal(cs_pools_region_resize(base + 10 * PAGE, 2 * PAGE + 1), CS_POOLS_OVERLAP);
  assert_int_equal(cs_pools_region_register(heap, base + 11 * PAGE, 1, 0, 0), CS_POOLS_OVERLAP);
  assert_int_equal(cs_pools_region_resize(base + 10 * PAGE, PAGE), CS_POOLS_OK); /* shrink back */
  assert_int_equal(cs_pools_region_resize(base + 11 * PAGE, PAGE), CS_POOLS_UNKNOWN_REGION);
  /* drop every fourth page, scrambled too */
  for (size_t i = 0; i < N; i++) {
    size_t page = (i * 2777) % N;
    if (page % 4 == 0) assert_int_equal(cs_pools_region_unregister(base + page * PAGE), CS_POOLS_OK);
  }
  assert_int_equal(cs_pools_region_name(base + 6 * PAGE, 9), CS_POOLS_OK);
  cs_pool_list_t list;
  assert_int_equal(cs_pools_copy(&list, UINT64_MAX), 0);
  assert_int_equal(list.heap_count, 1);
  assert_int_equal(list.heaps[0].region_count, N / 4);
  assert_int_equal(list.region_count, N / 4);
  for (size_t i = 0; i < list.region_count; i++) {
    assert_int_equal(list.regions[i].addr, base + (4 * i + 2) * PAGE);
    assert_int_equal(list.regions[i].size, PAGE);
  }
  assert_int_equal(list.regions[1].name_id, 9);
  cs_pool_list_free(&list);
  assert_int_equal(cs_pools_heap_unregister(heap), CS_POOLS_OK);
  assert_int_equal(cs_pools_region_unregister(base + 2 * PAGE), CS_POOLS_UNKNOWN_REGION);
}

/* A fork child starts with no pools and can register its own (the parent's trees are left alone,
 * unwalked: the child never frees what another thread may have been changing at the fork). */
static void test_postfork_child(void **state) {
  (void)state;
  cs_pools_clear();
  uintptr_t heap = 0;
  assert_int_equal(cs_pools_heap_register(0x100000, 8 * MIB, 0, &heap), CS_POOLS_OK);
  for (uintptr_t i = 0; i < 8; i++) assert_int_equal(cs_pools_region_register(heap, 0x100000 + i * MIB, MIB, 0, i), CS_POOLS_OK);
  cs_pools_postfork_child();
  cs_pool_list_t list;
  assert_int_equal(cs_pools_copy(&list, UINT64_MAX), 0);
  assert_int_equal(list.heap_count, 0);
  cs_pool_list_free(&list);
  assert_int_equal(cs_pools_region_register(heap, 0x100000, MIB, 0, 0), CS_POOLS_UNKNOWN_HEAP);
  assert_int_equal(cs_pools_heap_register(0x100000, 8 * MIB, 0, &heap), CS_POOLS_OK);
  assert_int_equal(cs_pools_region_register(heap, 0x100000, MIB, 0, 0), CS_POOLS_OK);
  assert_int_equal(cs_pools_copy(&list, UINT64_MAX), 0);
  assert_int_equal(list.region_count, 1);
  cs_pool_list_free(&list);
  cs_pools_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_regions), cmocka_unit_test(test_many_regions),
                                     cmocka_unit_test(test_postfork_child)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

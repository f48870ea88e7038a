/* SPDX-License-Identifier: Apache-2.0 */
/* The opt-in API of include/cudasnap.h over registered allocators on fake devices: per-device
 * combination of contexts, the current device, resets, empty_cache, memory info (adjusted, or raw
 * when the test runs with CUDASNAP_MEMINFO=raw), and the summary. */
#include "tests/unit/alloc_check.h"

#include <stdio.h>

#define CUDASNAP_BUILDING_LIBRARY 1
#include "include/cudasnap.h"

#include "api/device_arg.h"
#include "device/registry.h"
#include "process/runtime.h"

#define MiB CS_MiB

static fake_backend_t dev0_ctx0, dev0_ctx1, dev1_ctx0;
static cs_allocator_t *a00, *a01, *a10;
static int current_device = 1;

static int fake_current_device(void) { return current_device; }

static cs_allocator_t *make(fake_backend_t *fb, int device) {
  fake_backend_init(fb, 64 * MiB);
  cs_backend_t backend = fake_backend_as_backend(fb);
  cs_allocator_t *a = cs_allocator_create(&cs_runtime_options()->alloc, &backend, NULL);
  assert_non_null(a);
  assert_int_equal(cs_registry_add_allocator(device, a), 0);
  return a;
}

static int setup(void **state) {
  (void)state;
  a00 = make(&dev0_ctx0, 0);
  a01 = make(&dev0_ctx1, 0);
  a10 = make(&dev1_ctx0, 1);
  cs_device_arg_set_current_fn(fake_current_device);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  cs_allocator_t *all[] = {a00, a01, a10};
  for (int i = 0; i < 3; i++) {
    cs_registry_remove_allocator(all[i]);
    cs_allocator_destroy(all[i]);
  }
  return 0;
}

static int64_t stat_value(const cudasnap_stat_t *kv, int n, const char *key) {
  for (int i = 0; i < n; i++)
    if (strcmp(kv[i].key, key) == 0) return kv[i].value;
  fail_msg("no key %s", key);
  return 0;
}

static void test_memory_stats_combines_contexts_of_a_device(void **state) {
  (void)state;
  uintptr_t p = must_alloc(a00, 1000);
  uintptr_t q = must_alloc(a01, 5 * MiB);
  uintptr_t r = must_alloc(a10, 3000);
  assert_int_equal(cudasnap_memory_stats(0, NULL, 0), CUDASNAP_MEMORY_STATS_KEYS);
  cudasnap_stat_t kv[CUDASNAP_MEMORY_STATS_KEYS];
  int n = cudasnap_memory_stats(0, kv, CUDASNAP_MEMORY_STATS_KEYS);
  assert_int_equal(n, 122);
  for (int i = 1; i < n; i++) assert_true(strcmp(kv[i - 1].key, kv[i].key) < 0);
  assert_int_equal(stat_value(kv, n, "allocated_bytes.all.current"), 1024 + 6 * MiB);
  assert_int_equal(stat_value(kv, n, "allocation.all.current"), 2);
  assert_int_equal(stat_value(kv, n, "segment.large_pool.current"), 1);
  assert_int_equal(stat_value(kv, n, "reserved_bytes.all.current"), 2 * MiB + 6 * MiB);
  assert_int_equal(stat_value(kv, n, "max_split_size"), -1);
  /* a short buffer gets the first entries only */
  cudasnap_stat_t three[3];
  assert_int_equal(cudasnap_memory_stats(1, three, 3), 122);
  assert_string_equal(three[0].key, "active.all.allocated");
  assert_int_equal(three[0].value, 1);

  assert_int_equal(cudasnap_memory_allocated(0), 1024 + 6 * MiB);
  assert_int_equal(cudasnap_memory_allocated(1), 3072);
  assert_int_equal(cudasnap_memory_allocated(-1), 3072);  /* current device is 1 */
  assert_int_equal(cudasnap_memory_reserved(1), 2 * MiB);
  assert_int_equal(cudasnap_memory_allocated(5), 0);      /* never used */
  assert_int_equal(cudasnap_memory_stats(-2, kv, 122), -1);
  assert_int_equal(cudasnap_memory_allocated(-7), 0);

  assert_int_equal(cs_allocator_free(a01, q), 0);
  assert_int_equal(cudasnap_memory_allocated(0), 1024);
  assert_int_equal(cudasnap_max_memory_allocated(0), 1024 + 6 * MiB);
  cudasnap_reset_peak_memory_stats(0);
  assert_int_equal(cudasnap_max_memory_allocated(0), 1024);
  assert_int_equal(cudasnap_max_memory_reserved(0), 8 * MiB);
  cudasnap_reset_accumulated_memory_stats(0);
  n = cudasnap_memory_stats(0, kv, CUDASNAP_MEMORY_STATS_KEYS);
  assert_int_equal(stat_value(kv, n, "allocation.all.allocated"), 0);
  assert_int_equal(stat_value(kv, n, "allocation.all.current"), 1);
  assert_int_equal(stat_value(kv, n, "allocation.all.allocated"), 0);
  assert_int_equal(cudasnap_memory_allocated(1), 3072);   /* other device untouched */

  assert_int_equal(cudasnap_empty_cache(0), 0);            /* q's segment goes */
  assert_int_equal(cudasnap_memory_reserved(0), 2 * MiB);
  assert_int_equal(dev0_ctx1.used, 0);
  assert_int_equal(cs_allocator_free(a00, p), 0);
  assert_int_equal(cs_allocator_free(a10, r), 0);
}

static void test_memory_info(void **state) {
  (void)state;
  bool raw = getenv("CUDASNAP_MEMINFO") && strcmp(getenv("CUDASNAP_MEMINFO"), "raw") == 0;
  uintptr_t p = must_alloc(a10, 4096);
  assert_int_equal(cs_allocator_free(a10, p), 0);
  size_t free_bytes = 0, total = 0;
  assert_int_equal(cudasnap_get_memory_info(1, &free_bytes, &total), 0);
  assert_int_equal(total, 64 * MiB);
  /* the 2 MiB cached segment is free memory as the program sees it, unless raw */
  assert_int_equal(free_bytes, raw ? 62 * MiB : 64 * MiB);
  assert_int_equal(cudasnap_get_memory_info(7, &free_bytes, &total), -1);
}

static void test_summary_of_a_device(void **state) {
  (void)state;
  uintptr_t p = must_alloc(a00, 3 * MiB);
  size_t need = cudasnap_memory_summary(0, 0, NULL, 0);
  char *text = malloc(need + 1);
  assert_non_null(text);
  assert_int_equal(cudasnap_memory_summary(0, 0, text, need + 1), need);
  assert_non_null(strstr(text, "PyTorch CUDA memory summary, device ID 0"));
  assert_non_null(strstr(text, "| Allocated memory      |   4096 KiB |"));
  free(text);
  assert_int_equal(cs_allocator_free(a00, p), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memory_stats_combines_contexts_of_a_device),
      cmocka_unit_test(test_memory_info),
      cmocka_unit_test(test_summary_of_a_device),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

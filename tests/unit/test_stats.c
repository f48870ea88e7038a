/* SPDX-License-Identifier: Apache-2.0 */
/* Stat semantics, resets, merge and the flat memory_stats() export (snapshot-format.md 5.1-5.4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stats/stats.h"

static void assert_stat(const cs_stat_t *s, int64_t current, int64_t peak, int64_t allocated,
                        int64_t freed) {
  assert_int_equal(s->current, current);
  assert_int_equal(s->peak, peak);
  assert_int_equal(s->allocated, allocated);
  assert_int_equal(s->freed, freed);
}

/* The value of `key` in a flattened export; fails the test if the key is missing. */
static int64_t kv_get(const cs_stat_kv_t *kv, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(kv[i].key, key) == 0) return kv[i].value;
  fail_msg("key %s missing", key);
  return 0;
}

static bool kv_has(const cs_stat_kv_t *kv, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(kv[i].key, key) == 0) return true;
  return false;
}

/* ---------------------------------------------------------------------------------------------
 * Stat semantics
 * ------------------------------------------------------------------------------------------- */

static void test_increase_decrease(void **state) {
  (void)state;
  cs_stat_t s = {0};
  cs_stat_increase(&s, 100);
  assert_stat(&s, 100, 100, 100, 0);
  cs_stat_decrease(&s, 30);
  assert_stat(&s, 70, 100, 100, 30); /* peak stays */
  cs_stat_increase(&s, 20);
  assert_stat(&s, 90, 100, 120, 30); /* below the old peak: peak unchanged */
  cs_stat_increase(&s, 50);
  assert_stat(&s, 140, 140, 170, 30);
  cs_stat_decrease(&s, 140);
  assert_stat(&s, 0, 140, 170, 170);
}

static void test_update(void **state) {
  (void)state;
  cs_stat_t s = {.current = 10, .peak = 50, .allocated = 60, .freed = 50};
  cs_stat_update(&s, 0);
  assert_stat(&s, 10, 50, 60, 50); /* zero touches nothing */
  cs_stat_update(&s, 45);
  assert_stat(&s, 55, 55, 105, 50); /* one increase */
  cs_stat_update(&s, -25);
  assert_stat(&s, 30, 55, 105, 75); /* one decrease: freed grows by 25, allocated unchanged */
}

static void test_array_updates(void **state) {
  (void)state;
  cs_stats_t st;
  cs_stats_init(&st, -1);
  cs_stat_array_increase(st.active_bytes, true, 512);
  assert_stat(&st.active_bytes[CS_STAT_ALL], 512, 512, 512, 0);
  assert_stat(&st.active_bytes[CS_STAT_SMALL_POOL], 512, 512, 512, 0);
  assert_stat(&st.active_bytes[CS_STAT_LARGE_POOL], 0, 0, 0, 0);

  cs_stat_array_increase(st.active_bytes, false, 2 << 20);
  assert_stat(&st.active_bytes[CS_STAT_ALL], 512 + (2 << 20), 512 + (2 << 20), 512 + (2 << 20), 0);
  assert_stat(&st.active_bytes[CS_STAT_LARGE_POOL], 2 << 20, 2 << 20, 2 << 20, 0);
  assert_stat(&st.active_bytes[CS_STAT_SMALL_POOL], 512, 512, 512, 0);

  cs_stat_array_decrease(st.active_bytes, true, 512);
  assert_stat(&st.active_bytes[CS_STAT_ALL], 2 << 20, 512 + (2 << 20), 512 + (2 << 20), 512);
  assert_stat(&st.active_bytes[CS_STAT_SMALL_POOL], 0, 512, 512, 512);
  assert_stat(&st.active_bytes[CS_STAT_LARGE_POOL], 2 << 20, 2 << 20, 2 << 20, 0);

  cs_stat_array_update(st.inactive_split, false, 0);
  for (int p = 0; p < CS_STAT_POOLS; p++) assert_stat(&st.inactive_split[p], 0, 0, 0, 0);
  cs_stat_array_update(st.inactive_split, false, 2);
  cs_stat_array_update(st.inactive_split, false, -1);
  assert_stat(&st.inactive_split[CS_STAT_ALL], 1, 2, 2, 1);
  assert_stat(&st.inactive_split[CS_STAT_LARGE_POOL], 1, 2, 2, 1);
  assert_stat(&st.inactive_split[CS_STAT_SMALL_POOL], 0, 0, 0, 0);

  /* nothing else moved */
  assert_stat(&st.allocated_bytes[CS_STAT_ALL], 0, 0, 0, 0);
  assert_int_equal(st.max_split_size, -1);
}

static void test_init(void **state) {
  (void)state;
  cs_stats_t st;
  memset(&st, 0x5a, sizeof st);
  cs_stats_init(&st, 64 << 20);
  assert_int_equal(st.max_split_size, 64 << 20);
  cs_stat_kv_t kv[CS_STATS_KEY_COUNT];
  cs_stats_flatten(&st, kv, CS_STATS_KEY_COUNT);
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++)
    if (strcmp(kv[i].key, "max_split_size") != 0) assert_int_equal(kv[i].value, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Resets
 * ------------------------------------------------------------------------------------------- */

/* Every field a different non-zero value, peak above current. */
static void fill_distinct(cs_stats_t *st) {
  cs_stats_init(st, 128 << 20);
  int64_t v = 1;
  for (int p = 0; p < CS_STAT_POOLS; p++) {
    cs_stat_t *all[] = {&st->active[p],         &st->active_bytes[p],    &st->allocated_bytes[p],
                        &st->allocation[p],     &st->inactive_split[p],  &st->inactive_split_bytes[p],
                        &st->requested_bytes[p], &st->reserved_bytes[p], &st->segment[p]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
      *all[i] = (cs_stat_t){.current = v, .peak = v + 1000, .allocated = v + 2000, .freed = v + 3000};
      v++;
    }
  }
  st->oversize_allocations = (cs_stat_t){.current = 5, .peak = 9, .allocated = 11, .freed = 6};
  st->oversize_segments = (cs_stat_t){.current = 2, .peak = 4, .allocated = 7, .freed = 5};
  st->num_alloc_retries = 3;
  st->num_device_alloc = 40;
  st->num_device_free = 38;
  st->num_ooms = 2;
  st->num_sync_all_streams = 6;
}

static void test_reset_peak(void **state) {
  (void)state;
  cs_stats_t st, before;
  fill_distinct(&st);
  before = st;
  cs_stats_reset_peak(&st);
  for (int p = 0; p < CS_STAT_POOLS; p++) {
    assert_stat(&st.active[p], before.active[p].current, before.active[p].current,
                before.active[p].allocated, before.active[p].freed);
    assert_int_equal(st.reserved_bytes[p].peak, before.reserved_bytes[p].current);
    assert_int_equal(st.segment[p].peak, before.segment[p].current);
    assert_int_equal(st.inactive_split_bytes[p].peak, before.inactive_split_bytes[p].current);
  }
  assert_stat(&st.oversize_allocations, 5, 5, 11, 6);
  assert_stat(&st.oversize_segments, 2, 2, 7, 5);
  assert_int_equal(st.num_ooms, 2);
  assert_int_equal(st.max_split_size, 128 << 20);

  /* through the flat export: every .peak equals its .current, nothing else changed */
  cs_stat_kv_t a[CS_STATS_KEY_COUNT], b[CS_STATS_KEY_COUNT];
  cs_stats_flatten(&before, b, CS_STATS_KEY_COUNT);
  cs_stats_flatten(&st, a, CS_STATS_KEY_COUNT);
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) {
    size_t klen = strlen(a[i].key);
    if (klen > 5 && strcmp(a[i].key + klen - 5, ".peak") == 0) {
      assert_int_equal(a[i].value, a[i - 2].value); /* allocated, current, freed, peak */
      assert_true(a[i].value != b[i].value);        /* and it did change */
    } else {
      assert_int_equal(a[i].value, b[i].value);
    }
  }
}

static void test_reset_accumulated(void **state) {
  (void)state;
  cs_stats_t st, before;
  fill_distinct(&st);
  before = st;
  cs_stats_reset_accumulated(&st);
  for (int p = 0; p < CS_STAT_POOLS; p++) {
    assert_stat(&st.allocation[p], before.allocation[p].current, before.allocation[p].peak, 0, 0);
    assert_stat(&st.requested_bytes[p], before.requested_bytes[p].current,
                before.requested_bytes[p].peak, 0, 0);
  }
  assert_stat(&st.oversize_allocations, 5, 9, 0, 0);
  assert_stat(&st.oversize_segments, 2, 4, 0, 0);
  assert_int_equal(st.num_alloc_retries, 0);
  assert_int_equal(st.num_device_alloc, 0);
  assert_int_equal(st.num_device_free, 0);
  assert_int_equal(st.num_ooms, 0);
  assert_int_equal(st.num_sync_all_streams, 0);
  assert_int_equal(st.max_split_size, 128 << 20); /* config, not a count */

  cs_stat_kv_t a[CS_STATS_KEY_COUNT], b[CS_STATS_KEY_COUNT];
  cs_stats_flatten(&before, b, CS_STATS_KEY_COUNT);
  cs_stats_flatten(&st, a, CS_STATS_KEY_COUNT);
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) {
    const char *k = a[i].key;
    size_t klen = strlen(k);
    bool accumulated = strncmp(k, "num_", 4) == 0 ||
                       (klen > 10 && strcmp(k + klen - 10, ".allocated") == 0) ||
                       (klen > 6 && strcmp(k + klen - 6, ".freed") == 0);
    assert_int_equal(a[i].value, accumulated ? 0 : b[i].value);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Flat export
 * ------------------------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The expected key set, built independently of stats.def from snapshot-format.md 5.2. */
static size_t expected_keys(char keys[][48]) {
  static const char *const arrays[] = {"active",         "active_bytes",         "allocated_bytes",
                                       "allocation",     "inactive_split",       "inactive_split_bytes",
                                       "requested_bytes", "reserved_bytes",      "segment"};
  static const char *const pools[] = {"all", "large_pool", "small_pool"};
  static const char *const singles[] = {"oversize_allocations", "oversize_segments"};
  static const char *const counters[] = {"max_split_size",  "num_alloc_retries", "num_device_alloc",
                                         "num_device_free", "num_ooms",          "num_sync_all_streams"};
  static const char *const metrics[] = {"current", "peak", "allocated", "freed"};
  size_t n = 0;
  for (size_t a = 0; a < 9; a++)
    for (size_t p = 0; p < 3; p++)
      for (size_t m = 0; m < 4; m++) snprintf(keys[n++], 48, "%s.%s.%s", arrays[a], pools[p], metrics[m]);
  for (size_t s = 0; s < 2; s++)
    for (size_t m = 0; m < 4; m++) snprintf(keys[n++], 48, "%s.%s", singles[s], metrics[m]);
  for (size_t c = 0; c < 6; c++) snprintf(keys[n++], 48, "%s", counters[c]);
  return n;
}

static void test_flatten_keys(void **state) {
  (void)state;
  cs_stats_t st;
  cs_stats_init(&st, -1);
  cs_stat_kv_t kv[CS_STATS_KEY_COUNT + 4];
  memset(kv, 0, sizeof kv);
  assert_int_equal(cs_stats_flatten(&st, kv, CS_STATS_KEY_COUNT + 4), 122);
  assert_null(kv[CS_STATS_KEY_COUNT].key); /* nothing past the 122 */

  /* Python's sort of str keys is byte order, i.e. strcmp. */
  for (size_t i = 1; i < CS_STATS_KEY_COUNT; i++) {
    if (strcmp(kv[i - 1].key, kv[i].key) >= 0)
      fail_msg("keys out of order at %zu: %s, %s", i, kv[i - 1].key, kv[i].key);
  }
  assert_string_equal(kv[0].key, "active.all.allocated");
  assert_string_equal(kv[4].key, "active.large_pool.allocated"); /* large before small */
  assert_string_equal(kv[12].key, "active_bytes.all.allocated");  /* '.' sorts before '_' */
  assert_string_equal(kv[CS_STATS_KEY_COUNT - 1].key, "segment.small_pool.peak");
  assert_true(kv_has(kv, CS_STATS_KEY_COUNT, "allocation.all.current"));
  assert_false(kv_has(kv, CS_STATS_KEY_COUNT, "allocated.all.current"));

  /* exactly the documented set, in sorted order */
  static char want[CS_STATS_KEY_COUNT][48];
  assert_int_equal(expected_keys(want), CS_STATS_KEY_COUNT);
  const char *sorted[CS_STATS_KEY_COUNT];
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) sorted[i] = want[i];
  qsort(sorted, CS_STATS_KEY_COUNT, sizeof sorted[0], cmp_str);
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) assert_string_equal(kv[i].key, sorted[i]);

  /* keys are static storage: a second call hands out the same pointers */
  cs_stat_kv_t again[CS_STATS_KEY_COUNT];
  cs_stats_flatten(&st, again, CS_STATS_KEY_COUNT);
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) assert_ptr_equal(again[i].key, kv[i].key);
}

static void test_flatten_values(void **state) {
  (void)state;
  cs_stats_t st;
  cs_stats_init(&st, -1);
  st.active_bytes[CS_STAT_LARGE_POOL].peak = 4096;
  st.active_bytes[CS_STAT_SMALL_POOL].peak = 512;
  st.active_bytes[CS_STAT_ALL].peak = 4608;
  st.allocation[CS_STAT_SMALL_POOL].freed = 17;
  st.segment[CS_STAT_ALL].current = 3;
  st.requested_bytes[CS_STAT_LARGE_POOL].allocated = 123456789;
  st.inactive_split[CS_STAT_SMALL_POOL].peak = 8;
  st.oversize_segments.allocated = 21;
  st.num_ooms = 7;
  st.num_sync_all_streams = 9;
  st.num_device_free = 11;

  cs_stat_kv_t kv[CS_STATS_KEY_COUNT];
  assert_int_equal(cs_stats_flatten(&st, kv, CS_STATS_KEY_COUNT), CS_STATS_KEY_COUNT);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "active_bytes.large_pool.peak"), 4096);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "active_bytes.small_pool.peak"), 512);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "active_bytes.all.peak"), 4608);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "active_bytes.large_pool.current"), 0);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "allocation.small_pool.freed"), 17);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "allocation.large_pool.freed"), 0);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "segment.all.current"), 3);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "requested_bytes.large_pool.allocated"), 123456789);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "inactive_split.small_pool.peak"), 8);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "oversize_segments.allocated"), 21);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "max_split_size"), -1);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "num_ooms"), 7);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "num_sync_all_streams"), 9);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "num_device_free"), 11);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "num_device_alloc"), 0);

  /* the 11 fields set above are the only non-zero values apart from max_split_size */
  size_t nonzero = 0;
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) nonzero += kv[i].value != 0;
  assert_int_equal(nonzero, 12);
}

/* Every key reads its own field: with all fields distinct, all 122 values are distinct. */
static void test_flatten_distinct_fields(void **state) {
  (void)state;
  cs_stats_t st;
  fill_distinct(&st);
  cs_stat_kv_t kv[CS_STATS_KEY_COUNT];
  /* fill_distinct repeats a few small values among the singles; make them unique here */
  st.oversize_allocations = (cs_stat_t){.current = 9001, .peak = 9002, .allocated = 9003, .freed = 9004};
  st.oversize_segments = (cs_stat_t){.current = 9005, .peak = 9006, .allocated = 9007, .freed = 9008};
  st.num_alloc_retries = 9009;
  st.num_device_alloc = 9010;
  st.num_device_free = 9011;
  st.num_ooms = 9012;
  st.num_sync_all_streams = 9013;
  cs_stats_flatten(&st, kv, CS_STATS_KEY_COUNT);
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++)
    for (size_t j = i + 1; j < CS_STATS_KEY_COUNT; j++)
      if (kv[i].value == kv[j].value) fail_msg("%s and %s read the same field", kv[i].key, kv[j].key);
  /* pool order: .large_pool reads index CS_STAT_LARGE_POOL, .small_pool index CS_STAT_SMALL_POOL */
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "segment.large_pool.current"),
                   st.segment[CS_STAT_LARGE_POOL].current);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "segment.small_pool.freed"),
                   st.segment[CS_STAT_SMALL_POOL].freed);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "reserved_bytes.large_pool.peak"),
                   st.reserved_bytes[CS_STAT_LARGE_POOL].peak);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "active.small_pool.allocated"),
                   st.active[CS_STAT_SMALL_POOL].allocated);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "oversize_allocations.freed"), 9004);
  assert_int_equal(kv_get(kv, CS_STATS_KEY_COUNT, "max_split_size"), 128 << 20);
}

static void test_flatten_cap(void **state) {
  (void)state;
  cs_stats_t st;
  fill_distinct(&st);
  cs_stat_kv_t full[CS_STATS_KEY_COUNT];
  cs_stats_flatten(&st, full, CS_STATS_KEY_COUNT);

  cs_stat_kv_t kv[12];
  const cs_stat_kv_t canary = {.key = "canary", .value = 0x7777};
  for (size_t i = 0; i < 12; i++) kv[i] = canary;
  assert_int_equal(cs_stats_flatten(&st, kv, 10), CS_STATS_KEY_COUNT);
  for (size_t i = 0; i < 10; i++) {
    assert_ptr_equal(kv[i].key, full[i].key); /* the first 10 of the full order */
    assert_int_equal(kv[i].value, full[i].value);
  }
  assert_ptr_equal(kv[10].key, canary.key); /* nothing beyond cap */
  assert_int_equal(kv[11].value, canary.value);

  assert_int_equal(cs_stats_flatten(&st, NULL, 0), CS_STATS_KEY_COUNT);
  kv[0] = canary;
  assert_int_equal(cs_stats_flatten(&st, kv, 0), CS_STATS_KEY_COUNT);
  assert_ptr_equal(kv[0].key, canary.key);
}

/* ---------------------------------------------------------------------------------------------
 * Merge
 * ------------------------------------------------------------------------------------------- */

static void test_merge(void **state) {
  (void)state;
  cs_stats_t a, b, sum;
  fill_distinct(&a);
  fill_distinct(&b);
  b.active_bytes[CS_STAT_LARGE_POOL] = (cs_stat_t){.current = 1, .peak = 2, .allocated = 3, .freed = 4};
  b.num_ooms = 40;
  b.max_split_size = 256 << 20;
  sum = a;
  cs_stats_merge(&sum, &b);

  cs_stat_kv_t ka[CS_STATS_KEY_COUNT], kb[CS_STATS_KEY_COUNT], ks[CS_STATS_KEY_COUNT];
  cs_stats_flatten(&a, ka, CS_STATS_KEY_COUNT);
  cs_stats_flatten(&b, kb, CS_STATS_KEY_COUNT);
  cs_stats_flatten(&sum, ks, CS_STATS_KEY_COUNT);
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) {
    if (strcmp(ks[i].key, "max_split_size") == 0) continue;
    assert_int_equal(ks[i].value, ka[i].value + kb[i].value); /* peaks add too: an upper bound */
  }
  assert_stat(&sum.active_bytes[CS_STAT_LARGE_POOL], a.active_bytes[CS_STAT_LARGE_POOL].current + 1,
              a.active_bytes[CS_STAT_LARGE_POOL].peak + 2, a.active_bytes[CS_STAT_LARGE_POOL].allocated + 3,
              a.active_bytes[CS_STAT_LARGE_POOL].freed + 4);
  assert_int_equal(sum.num_ooms, 42);
  assert_int_equal(sum.max_split_size, 128 << 20); /* dst had one: kept, not added */
  assert_int_equal(b.num_ooms, 40);                /* src untouched */
}

static void test_merge_max_split_size(void **state) {
  (void)state;
  cs_stats_t acc, ctx;
  /* a zero-filled accumulator takes the first context's setting */
  memset(&acc, 0, sizeof acc);
  cs_stats_init(&ctx, 64 << 20);
  cs_stats_merge(&acc, &ctx);
  assert_int_equal(acc.max_split_size, 64 << 20);
  /* an unlimited (-1) accumulator too */
  cs_stats_init(&acc, -1);
  cs_stats_merge(&acc, &ctx);
  assert_int_equal(acc.max_split_size, 64 << 20);
  /* both unlimited stays unlimited (not -2) */
  cs_stats_init(&acc, -1);
  cs_stats_init(&ctx, -1);
  cs_stats_merge(&acc, &ctx);
  assert_int_equal(acc.max_split_size, -1);
  /* a zero-filled source does not wipe the setting */
  cs_stats_init(&acc, -1);
  memset(&ctx, 0, sizeof ctx);
  cs_stats_merge(&acc, &ctx);
  assert_int_equal(acc.max_split_size, -1);
  /* huge values are not summed (that would overflow) */
  cs_stats_init(&acc, INT64_MAX);
  cs_stats_init(&ctx, INT64_MAX);
  cs_stats_merge(&acc, &ctx);
  assert_int_equal(acc.max_split_size, INT64_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_increase_decrease),
      cmocka_unit_test(test_update),
      cmocka_unit_test(test_array_updates),
      cmocka_unit_test(test_init),
      cmocka_unit_test(test_reset_peak),
      cmocka_unit_test(test_reset_accumulated),
      cmocka_unit_test(test_flatten_keys),
      cmocka_unit_test(test_flatten_values),
      cmocka_unit_test(test_flatten_distinct_fields),
      cmocka_unit_test(test_flatten_cap),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_merge_max_split_size),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

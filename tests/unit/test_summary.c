/* SPDX-License-Identifier: Apache-2.0 */
/* torch.cuda.memory_summary() text (snapshot-format.md 5.5; torch/cuda/memory.py).
 *
 * The golden texts below were worked out from PyTorch's memory_summary algorithm (its _format_size
 * and _format_count, the 'all' row as each column's reference), not captured from cs_stats_summary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "stats/stats.h"

enum { BUF = 8192 };

/* (a) all counters zero, device 0, full: 6 header lines, 9 blocks of 4, 2 blocks of 2, 1 closing. */
static const char golden_zero[] =
    "|===========================================================================|\n"
    "|                  PyTorch CUDA memory summary, device ID 0                 |\n"
    "|---------------------------------------------------------------------------|\n"
    "|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |\n"
    "|===========================================================================|\n"
    "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Allocated memory      |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from small pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Active memory         |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from small pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Requested memory      |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from small pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|---------------------------------------------------------------------------|\n"
    "| GPU reserved memory   |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from small pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Non-releasable memory |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|       from small pool |      0 B   |      0 B   |      0 B   |      0 B   |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Allocations           |       0    |       0    |       0    |       0    |\n"
    "|       from large pool |       0    |       0    |       0    |       0    |\n"
    "|       from small pool |       0    |       0    |       0    |       0    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Active allocs         |       0    |       0    |       0    |       0    |\n"
    "|       from large pool |       0    |       0    |       0    |       0    |\n"
    "|       from small pool |       0    |       0    |       0    |       0    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| GPU reserved segments |       0    |       0    |       0    |       0    |\n"
    "|       from large pool |       0    |       0    |       0    |       0    |\n"
    "|       from small pool |       0    |       0    |       0    |       0    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Non-releasable allocs |       0    |       0    |       0    |       0    |\n"
    "|       from large pool |       0    |       0    |       0    |       0    |\n"
    "|       from small pool |       0    |       0    |       0    |       0    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Oversize allocations  |       0    |       0    |       0    |       0    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Oversize GPU segments |       0    |       0    |       0    |       0    |\n"
    "|===========================================================================|\n";

/* (b) stats_b() on device 3: B/KiB/MiB/GiB/TiB/PiB and K/M units, pool rows scaled by the 'all'
 * row (small pool 1 KiB under an 800 GiB 'all' prints "0 GiB"), floor division of a negative value
 * (-1 // 1024 = -1), and each oversize value its own reference. */
static const char golden_b[] =
    "|===========================================================================|\n"
    "|                  PyTorch CUDA memory summary, device ID 3                 |\n"
    "|---------------------------------------------------------------------------|\n"
    "|            CUDA OOMs: 12           |        cudaMalloc retries: 1234567   |\n"
    "|===========================================================================|\n"
    "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Allocated memory      |    800 GiB |    800 KiB | 785408 B   |    768 KiB |\n"
    "|       from large pool |    800 GiB |      0 KiB | 785408 B   |    767 KiB |\n"
    "|       from small pool |      0 GiB |    800 KiB |      0 B   |      0 KiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Active memory         |   1023 MiB |   1024 GiB |   2048 GiB |   1024 TiB |\n"
    "|       from large pool |    512 MiB |   1023 GiB |      0 GiB |   1023 TiB |\n"
    "|       from small pool |      0 MiB |      0 GiB |   1024 GiB |    512 TiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Requested memory      |    767 PiB |    768 PiB |   8191 PiB |   1024 PiB |\n"
    "|       from large pool |    767 PiB |    767 PiB |   4096 PiB |   1023 PiB |\n"
    "|       from small pool |      0 PiB |      0 PiB |      1 PiB |      0 PiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| GPU reserved memory   |  20480 KiB | 102400 MiB | 204800 MiB | 184320 MiB |\n"
    "|       from large pool |  18432 KiB | 101376 MiB | 203776 MiB | 183296 MiB |\n"
    "|       from small pool |   2048 KiB |   1024 MiB |   1024 MiB |   1024 MiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Non-releasable memory |   1024 KiB |   2048 KiB |   4096 KiB |   3072 KiB |\n"
    "|       from large pool |   1024 KiB |   2048 KiB |   4096 KiB |   3072 KiB |\n"
    "|       from small pool |     -1 KiB |      0 KiB |      0 KiB |      0 KiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Allocations           |  749999    |     750 K  |     750 M  |    1234 K  |\n"
    "|       from large pool |  749999    |       0 K  |     749 M  |    1234 K  |\n"
    "|       from small pool |       0    |     749 K  |       0 M  |       0 K  |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Active allocs         |    2000 M  |    2000 M  |    2000 M  |       1    |\n"
    "|       from large pool |    1999 M  |    1999 M  |    2000 M  |       1    |\n"
    "|       from small pool |       0 M  |       0 M  |       0 M  |       0    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| GPU reserved segments |       3    |       5    |       9    |       6    |\n"
    "|       from large pool |       2    |       3    |       6    |       4    |\n"
    "|       from small pool |       1    |       2    |       3    |       2    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Non-releasable allocs |       4    |       7    |      30    |      26    |\n"
    "|       from large pool |       3    |       5    |      20    |      17    |\n"
    "|       from small pool |       1    |       2    |      10    |       9    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Oversize allocations  |       3    |     800 K  |    5000 K  |    4999 K  |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Oversize GPU segments |       1    |       2    |  749999    |     750 K  |\n"
    "|===========================================================================|\n";

/* (c) stats_b() on device 1, abbreviated: the 'all' rows only. */
static const char golden_abbrev[] =
    "|===========================================================================|\n"
    "|                  PyTorch CUDA memory summary, device ID 1                 |\n"
    "|---------------------------------------------------------------------------|\n"
    "|            CUDA OOMs: 12           |        cudaMalloc retries: 1234567   |\n"
    "|===========================================================================|\n"
    "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Allocated memory      |    800 GiB |    800 KiB | 785408 B   |    768 KiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Active memory         |   1023 MiB |   1024 GiB |   2048 GiB |   1024 TiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Requested memory      |    767 PiB |    768 PiB |   8191 PiB |   1024 PiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| GPU reserved memory   |  20480 KiB | 102400 MiB | 204800 MiB | 184320 MiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Non-releasable memory |   1024 KiB |   2048 KiB |   4096 KiB |   3072 KiB |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Allocations           |  749999    |     750 K  |     750 M  |    1234 K  |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Active allocs         |    2000 M  |    2000 M  |    2000 M  |       1    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| GPU reserved segments |       3    |       5    |       9    |       6    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Non-releasable allocs |       4    |       7    |      30    |      26    |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Oversize allocations  |       3    |     800 K  |    5000 K  |    4999 K  |\n"
    "|---------------------------------------------------------------------------|\n"
    "| Oversize GPU segments |       1    |       2    |  749999    |     750 K  |\n"
    "|===========================================================================|\n";

static void put(cs_stat_t *s, int64_t current, int64_t peak, int64_t allocated, int64_t freed) {
  *s = (cs_stat_t){.current = current, .peak = peak, .allocated = allocated, .freed = freed};
}

#define KiB ((int64_t)1 << 10)
#define MiB ((int64_t)1 << 20)
#define GiB ((int64_t)1 << 30)
#define TiB ((int64_t)1 << 40)
#define PiB ((int64_t)1 << 50)

static void stats_b(cs_stats_t *st) {
  cs_stats_init(st, -1);
  enum { A = CS_STAT_ALL, L = CS_STAT_LARGE_POOL, S = CS_STAT_SMALL_POOL };
  /* B, KiB and GiB; 767 KiB is below the 768 KiB threshold and stays in B */
  put(&st->allocated_bytes[A], 800 * GiB + KiB, 800 * KiB, 767 * KiB, 768 * KiB);
  put(&st->allocated_bytes[L], 800 * GiB, 0, 767 * KiB, 768 * KiB - 1);
  put(&st->allocated_bytes[S], KiB, 800 * KiB, 0, 1);
  /* MiB, GiB, TiB */
  put(&st->active_bytes[A], GiB - 1, TiB, 2 * TiB, PiB);
  put(&st->active_bytes[L], 512 * MiB, TiB - 1, 0, PiB - 1);
  put(&st->active_bytes[S], MiB - 1, 1, TiB, PiB / 2);
  /* PiB. 768 PiB - 1 is above 2^53 and becomes 768 PiB as a double, so Python's float ref
   * reaches the PiB threshold and the value prints as 767 PiB, not 786431 TiB. */
  put(&st->requested_bytes[A], 768 * PiB - 1, 768 * PiB, INT64_MAX, (int64_t)1 << 60);
  put(&st->requested_bytes[L], 768 * PiB - 1, 768 * PiB - 1, (int64_t)1 << 62, ((int64_t)1 << 60) - 1);
  put(&st->requested_bytes[S], 0, TiB, PiB, 1);
  put(&st->reserved_bytes[A], 20 * MiB, 100 * GiB, 200 * GiB, 180 * GiB);
  put(&st->reserved_bytes[L], 18 * MiB, 99 * GiB, 199 * GiB, 179 * GiB);
  put(&st->reserved_bytes[S], 2 * MiB, GiB, GiB, GiB);
  put(&st->inactive_split_bytes[A], MiB, 2 * MiB, 4 * MiB, 3 * MiB);
  put(&st->inactive_split_bytes[L], MiB + 1, 2 * MiB, 4 * MiB, 3 * MiB);
  put(&st->inactive_split_bytes[S], -1, 0, 0, 0);
  /* counts around the 750000 threshold */
  put(&st->allocation[A], 749999, 750000, 750000000, 1234567);
  put(&st->allocation[L], 749999, 500, 749999999, 1234000);
  put(&st->allocation[S], 0, 749999, 1, 567);
  put(&st->active[A], 2000000000, 2000000000, 2000000001, 1);
  put(&st->active[L], 1999999999, 1999999999, 2000000000, 1);
  put(&st->active[S], 1, 1, 1, 0);
  put(&st->segment[A], 3, 5, 9, 6);
  put(&st->segment[L], 2, 3, 6, 4);
  put(&st->segment[S], 1, 2, 3, 2);
  put(&st->inactive_split[A], 4, 7, 30, 26);
  put(&st->inactive_split[L], 3, 5, 20, 17);
  put(&st->inactive_split[S], 1, 2, 10, 9);
  put(&st->oversize_allocations, 3, 800000, 5000000, 4999997);
  put(&st->oversize_segments, 1, 2, 749999, 750000);
  st->num_ooms = 12;
  st->num_alloc_retries = 1234567;
}

/* Every line is '|', 75 characters, '|', '\n'; returns the number of lines. */
static size_t assert_lines_77(const char *text) {
  size_t lines = 0;
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    assert_non_null(nl); /* newline-terminated, including the last line */
    if (nl - p != 77) fail_msg("line %zu is %td characters: %.*s", lines + 1, nl - p, (int)(nl - p), p);
    assert_int_equal(p[0], '|');
    assert_int_equal(p[76], '|');
    lines++;
    p = nl + 1;
  }
  return lines;
}

static void test_zero_full(void **state) {
  (void)state;
  cs_stats_t st;
  cs_stats_init(&st, -1);
  char buf[BUF];
  size_t n = cs_stats_summary(&st, 0, false, buf, sizeof buf);
  assert_string_equal(buf, golden_zero);
  assert_int_equal(n, strlen(golden_zero));
  assert_int_equal(assert_lines_77(buf), 47);
}

static void test_units_and_references(void **state) {
  (void)state;
  cs_stats_t st;
  stats_b(&st);
  char buf[BUF];
  size_t n = cs_stats_summary(&st, 3, false, buf, sizeof buf);
  assert_string_equal(buf, golden_b);
  assert_int_equal(n, strlen(golden_b));
  assert_int_equal(assert_lines_77(buf), 47);
}

static void test_abbreviated(void **state) {
  (void)state;
  cs_stats_t st;
  stats_b(&st);
  char buf[BUF];
  size_t n = cs_stats_summary(&st, 1, true, buf, sizeof buf);
  assert_string_equal(buf, golden_abbrev);
  assert_int_equal(n, strlen(golden_abbrev));
  assert_int_equal(assert_lines_77(buf), 29);
  assert_null(strstr(buf, "from large pool"));
  assert_null(strstr(buf, "from small pool"));
}

/* The unit of a pool row is the 'all' row's: 3 GiB is below 768 GiB, so the column is in MiB and
 * the 1 KiB small pool shows 0 MiB; at 800 GiB the column is in GiB. */
static void test_pool_rows_follow_all(void **state) {
  (void)state;
  cs_stats_t st;
  cs_stats_init(&st, -1);
  char buf[BUF];
  st.allocated_bytes[CS_STAT_ALL].current = 3 * GiB;
  st.allocated_bytes[CS_STAT_LARGE_POOL].current = 3 * GiB;
  st.allocated_bytes[CS_STAT_SMALL_POOL].current = KiB;
  cs_stats_summary(&st, 0, false, buf, sizeof buf);
  assert_non_null(strstr(buf, "| Allocated memory      |   3072 MiB |      0 B   |"));
  assert_non_null(strstr(buf, "|       from large pool |   3072 MiB |      0 B   |"));
  assert_non_null(strstr(buf, "|       from small pool |      0 MiB |      0 B   |"));

  st.allocated_bytes[CS_STAT_ALL].current = 768 * GiB;
  st.allocated_bytes[CS_STAT_LARGE_POOL].current = 768 * GiB - KiB;
  cs_stats_summary(&st, 0, false, buf, sizeof buf);
  assert_non_null(strstr(buf, "| Allocated memory      |    768 GiB |"));
  assert_non_null(strstr(buf, "|       from large pool |    767 GiB |"));
  assert_non_null(strstr(buf, "|       from small pool |      0 GiB |"));

  /* counts: 'all' at 750000 switches the pools to K as well */
  st.active[CS_STAT_ALL].peak = 750000;
  st.active[CS_STAT_SMALL_POOL].peak = 999;
  st.active[CS_STAT_LARGE_POOL].peak = 749001;
  cs_stats_summary(&st, 0, false, buf, sizeof buf);
  assert_non_null(strstr(buf, "| Active allocs         |       0    |     750 K  |"));
  assert_non_null(strstr(buf, "|       from large pool |       0    |     749 K  |"));
  assert_non_null(strstr(buf, "|       from small pool |       0    |       0 K  |"));
  assert_int_equal(assert_lines_77(buf), 47);
}

/* snprintf's contract: the whole length comes back whatever len is; at most len - 1 characters
 * and a NUL are written. */
static void test_snprintf_contract(void **state) {
  (void)state;
  cs_stats_t st;
  stats_b(&st);
  char full[BUF];
  size_t total = cs_stats_summary(&st, 3, false, full, sizeof full);
  assert_int_equal(total, strlen(golden_b));

  assert_int_equal(cs_stats_summary(&st, 3, false, NULL, 0), total);

  char buf[BUF];
  memset(buf, '#', sizeof buf);
  assert_int_equal(cs_stats_summary(&st, 3, false, buf, 0), total);
  assert_int_equal(buf[0], '#'); /* len 0: nothing written, not even the NUL */

  memset(buf, '#', sizeof buf);
  assert_int_equal(cs_stats_summary(&st, 3, false, buf, 1), total);
  assert_int_equal(buf[0], '\0');
  assert_int_equal(buf[1], '#');

  static const size_t lens[] = {2, 10, 77, 78, 79, 500, 1000};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    size_t len = lens[i];
    memset(buf, '#', sizeof buf);
    assert_int_equal(cs_stats_summary(&st, 3, false, buf, len), total);
    assert_int_equal(strlen(buf), len - 1);
    assert_memory_equal(buf, golden_b, len - 1);
    assert_int_equal(buf[len], '#'); /* nothing past len */
  }

  /* exactly one short: the final newline is cut; exactly enough: the whole text */
  memset(buf, '#', sizeof buf);
  assert_int_equal(cs_stats_summary(&st, 3, false, buf, total), total);
  assert_int_equal(strlen(buf), total - 1);
  assert_int_equal(buf[total - 2], '|');
  memset(buf, '#', sizeof buf);
  assert_int_equal(cs_stats_summary(&st, 3, false, buf, total + 1), total);
  assert_string_equal(buf, golden_b);
  assert_int_equal(buf[total + 1], '#');
}

/* Header fields: device id left-aligned in 17, OOMs in 12, retries in 8. */
static void test_header_fields(void **state) {
  (void)state;
  cs_stats_t st;
  cs_stats_init(&st, -1);
  st.num_ooms = 123456789012;
  st.num_alloc_retries = 12345678;
  char buf[BUF];
  cs_stats_summary(&st, 12345678, true, buf, sizeof buf);
  assert_non_null(strstr(buf, "|                  PyTorch CUDA memory summary, device ID 12345678          |\n"));
  assert_non_null(strstr(buf, "|            CUDA OOMs: 123456789012 |        cudaMalloc retries: 12345678  |\n"));
  assert_int_equal(assert_lines_77(buf), 29);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zero_full),
      cmocka_unit_test(test_units_and_references),
      cmocka_unit_test(test_abbreviated),
      cmocka_unit_test(test_pool_rows_follow_all),
      cmocka_unit_test(test_snprintf_contract),
      cmocka_unit_test(test_header_fields),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

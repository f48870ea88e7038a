/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for common/cs_alloc_conf.c: every CUDASNAP_ALLOC_CONF key with good and bad values,
 * PyTorch's lexing (spaces, brackets), and recovery after a bad entry. Warnings are captured
 * through a pipe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_alloc_conf.h"
#include "common/cs_log.h"
#include "tests/unit/log_capture.h"

#define MIB ((size_t)1 << 20)

/* ------------------------------------------------------------------------------------------------
 * Capturing the log
 * ---------------------------------------------------------------------------------------------- */


/* ------------------------------------------------------------------------------------------------
 * Parsing helpers
 * ---------------------------------------------------------------------------------------------- */

static int parse(const char *text, cs_alloc_conf_t *conf) {
  cs_alloc_conf_init(conf);
  return cs_alloc_conf_parse(text, "TEST_CONF", conf);
}

/* Good entries: no problem and no output. The caller checks the fields. */
static void assert_accepted(const char *text, cs_alloc_conf_t *conf) {
  assert_int_equal(parse(text, conf), 0);
  assert_string_equal(captured(), "");
}

/* One entry, one problem, one warning line that quotes the entry, and nothing changed. */
static void assert_warned(const char *text, const char *verdict) {
  cs_alloc_conf_t defaults, conf;
  cs_alloc_conf_init(&defaults);
  assert_int_equal(parse(text, &conf), 1);
  const char *log = captured();
  assert_int_equal(count_lines(log), 1);
  char quoted[256];
  snprintf(quoted, sizeof quoted, "cudasnap: warning: TEST_CONF: %s %s", text, verdict);
  assert_contains(log, quoted);
  assert_memory_equal(&conf, &defaults, sizeof conf);
}

static void assert_rejected(const char *text) { assert_warned(text, "is not accepted ("); }

/* Valid for PyTorch, but not something cudasnap does: one warning, no effect. */
static void assert_ignored(const char *text) { assert_warned(text, "is ignored: "); }

static void assert_divisions(const cs_alloc_conf_t *conf,
                             const uint32_t expected[CS_ROUNDUP_INTERVALS]) {
  for (size_t i = 0; i < CS_ROUNDUP_INTERVALS; i++) {
    if (conf->roundup_power2_divisions[i] != expected[i]) {
      fail_msg("interval %zu: %u divisions, expected %u", i,
               (unsigned)conf->roundup_power2_divisions[i], (unsigned)expected[i]);
    }
  }
}

/* ------------------------------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------------------------------- */

static void test_defaults(void **state) {
  (void)state;
  static const uint32_t none[CS_ROUNDUP_INTERVALS] = {0};
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  assert_true(conf.max_split_size == SIZE_MAX);
  assert_int_equal(cs_alloc_conf_max_split_stat(&conf), -1);
  assert_int_equal(conf.max_non_split_rounding, 20 * MIB);
  assert_true(conf.garbage_collection_threshold == 0.0);
  assert_divisions(&conf, none);
  assert_false(conf.split_large);
  assert_int_equal(conf.free_mode, CS_FREE_SYNC);
  assert_true(conf.cache);
}

static void test_empty_text(void **state) {
  (void)state;
  cs_alloc_conf_t defaults, conf;
  cs_alloc_conf_init(&defaults);
  assert_accepted("", &conf);
  assert_memory_equal(&conf, &defaults, sizeof conf);
  assert_accepted("  ", &conf);
  assert_memory_equal(&conf, &defaults, sizeof conf);
  /* Empty entries, a trailing comma among them (PyTorch allows one), are skipped. */
  assert_accepted(",max_split_size_mb:64,,", &conf);
  assert_int_equal(conf.max_split_size, 64 * MIB);
}

static void test_warning_text(void **state) {
  (void)state;
  cs_alloc_conf_t conf;
  assert_int_equal(parse("max_split_size_mb:19", &conf), 1);
  assert_string_equal(captured(), "cudasnap: warning: TEST_CONF: max_split_size_mb:19 is not "
                                  "accepted (max_split_size_mb takes an integer number of MiB, "
                                  "at least 20); entry ignored\n");
}

static void test_max_split_size(void **state) {
  (void)state;
  cs_alloc_conf_t conf;
  assert_accepted("max_split_size_mb:20", &conf);
  assert_int_equal(conf.max_split_size, 20 * MIB);
  assert_int_equal(cs_alloc_conf_max_split_stat(&conf), 20 * MIB);
  assert_accepted("max_split_size_mb:1024", &conf);
  assert_int_equal(conf.max_split_size, 1024 * MIB);
  /* Too many MiB for size_t: clamped, as PyTorch does. */
  assert_accepted("max_split_size_mb:18446744073709551615", &conf);
  assert_true(conf.max_split_size == SIZE_MAX / MIB * MIB);

  assert_rejected("max_split_size_mb:19");
  assert_rejected("max_split_size_mb:0");
  assert_rejected("max_split_size_mb:-20");
  assert_rejected("max_split_size_mb:+20");
  assert_rejected("max_split_size_mb:20abc");
  assert_rejected("max_split_size_mb:20.5");
  assert_rejected("max_split_size_mb:18446744073709551616");
  assert_rejected("max_split_size_mb:");
  assert_rejected("max_split_size_mb");
  assert_rejected("max_split_size_mb:64:1");
  assert_rejected("max_split_size_mb:64]");
  assert_rejected("max_split_size_mb:[64]");

  /* A word longer than the lexer holds is rejected, never read as its beginning (here 64). */
  char text[128];
  int prefix = snprintf(text, sizeof text, "max_split_size_mb:");
  snprintf(text + prefix, sizeof text - (size_t)prefix, "%061d641", 0);
  assert_rejected(text);
}

static void test_max_non_split_rounding(void **state) {
  (void)state;
  cs_alloc_conf_t conf;
  assert_accepted("max_non_split_rounding_mb:40", &conf);
  assert_int_equal(conf.max_non_split_rounding, 40 * MIB);
  assert_rejected("max_non_split_rounding_mb:10");
  assert_rejected("max_non_split_rounding_mb:many");
}

static void test_garbage_collection_threshold(void **state) {
  (void)state;
  static const char *const rejected[] = {
      "garbage_collection_threshold:0",       "garbage_collection_threshold:1",
      "garbage_collection_threshold:1.0",     "garbage_collection_threshold:-0.5",
      "garbage_collection_threshold:2",       "garbage_collection_threshold:nan",
      "garbage_collection_threshold:inf",     "garbage_collection_threshold:0.5x",
      "garbage_collection_threshold:1e-400",  "garbage_collection_threshold:1e-310",
      "garbage_collection_threshold:0x0.8p0",
      "garbage_collection_threshold:.",       "garbage_collection_threshold:half",
  };
  cs_alloc_conf_t conf;
  assert_accepted("garbage_collection_threshold:0.5", &conf);
  assert_true(conf.garbage_collection_threshold == 0.5);
  assert_accepted("garbage_collection_threshold:.25", &conf);
  assert_true(conf.garbage_collection_threshold == 0.25);
  assert_accepted("garbage_collection_threshold:8e-1", &conf);
  assert_true(conf.garbage_collection_threshold == 0.8);
  assert_accepted("garbage_collection_threshold:0.999", &conf);
  assert_true(conf.garbage_collection_threshold == 0.999);
  for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++) assert_rejected(rejected[i]);
}

static void test_roundup_list(void **state) {
  (void)state;
  static const uint32_t expected[CS_ROUNDUP_INTERVALS] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                          1, 2, 4, 8, 8, 8, 8, 8};
  cs_alloc_conf_t conf;
  assert_accepted("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", &conf);
  assert_divisions(&conf, expected);
}

/* > sets every interval after the last key given; given first, it leaves interval 0 alone, as
 * PyTorch's does. */
static void test_roundup_rest(void **state) {
  (void)state;
  static const uint32_t after_entries[CS_ROUNDUP_INTERVALS] = {2, 2, 2, 2, 2, 2, 2, 16,
                                                               16, 16, 16, 16, 16, 16, 16, 16};
  static const uint32_t rest_first[CS_ROUNDUP_INTERVALS] = {0, 8, 8, 8, 8, 8, 8, 8,
                                                            8, 8, 8, 8, 8, 8, 8, 8};
  cs_alloc_conf_t conf;
  assert_accepted("roundup_power2_divisions:[64:2,>:16]", &conf);
  assert_divisions(&conf, after_entries);
  assert_accepted("roundup_power2_divisions:[>:8]", &conf);
  assert_divisions(&conf, rest_first);
}

static void test_roundup_single_value(void **state) {
  (void)state;
  static const uint32_t fours[CS_ROUNDUP_INTERVALS] = {4, 4, 4, 4, 4, 4, 4, 4,
                                                       4, 4, 4, 4, 4, 4, 4, 4};
  static const uint32_t none[CS_ROUNDUP_INTERVALS] = {0};
  cs_alloc_conf_t conf;
  assert_accepted("roundup_power2_divisions:4", &conf);
  assert_divisions(&conf, fours);
  assert_accepted("roundup_power2_divisions:4,roundup_power2_divisions:0", &conf);
  assert_divisions(&conf, none);
}

static void test_roundup_clamps_and_keeps(void **state) {
  (void)state;
  /* 1 MiB and smaller sizes share interval 0; 32 GiB and larger starts share interval 15. */
  static const uint32_t big[CS_ROUNDUP_INTERVALS] = {4, 4, 4, 4, 4, 4, 4, 4,
                                                     4, 4, 4, 4, 4, 4, 4, 4};
  /* Intervals the list does not reach keep their earlier values. */
  static const uint32_t kept[CS_ROUNDUP_INTERVALS] = {8, 8, 8, 8, 8, 8, 8, 8,
                                                      8, 8, 8, 2, 2, 2, 2, 2};
  cs_alloc_conf_t conf;
  assert_accepted("roundup_power2_divisions:[65536:4]", &conf);
  assert_divisions(&conf, big);
  assert_accepted("roundup_power2_divisions:2,roundup_power2_divisions:[1024:8]", &conf);
  assert_divisions(&conf, kept);
}

static void test_roundup_rejected(void **state) {
  (void)state;
  static const char *const rejected[] = {
      "roundup_power2_divisions:3",           /* not a power of two */
      "roundup_power2_divisions:[256:3]",     /* nor is this */
      "roundup_power2_divisions:[300:2]",     /* an interval start that is not a power of two */
      "roundup_power2_divisions:[0:2]",       /* nor is 0 */
      "roundup_power2_divisions:[256:1",      /* unclosed */
      "roundup_power2_divisions:[256:1:2]",   /* key:value:value */
      "roundup_power2_divisions:[256]",       /* no value */
      "roundup_power2_divisions:[x:2]",       /* not a number */
      "roundup_power2_divisions:[1:4294967296]", /* 2^32 does not fit */
      "roundup_power2_divisions:[256:1]x",    /* junk after the list */
      "roundup_power2_divisions:",            /* no value */
  };
  for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++) assert_rejected(rejected[i]);
}

static void test_roundup_list_edges(void **state) {
  (void)state;
  static const uint32_t none[CS_ROUNDUP_INTERVALS] = {0};
  static const uint32_t ones_to_2mib[CS_ROUNDUP_INTERVALS] = {1, 1};
  cs_alloc_conf_t conf;
  assert_accepted("roundup_power2_divisions:[]", &conf);
  assert_divisions(&conf, none);
  assert_accepted("roundup_power2_divisions:[2:1,]", &conf); /* PyTorch allows the comma too */
  assert_divisions(&conf, ones_to_2mib);
}

/* A bad list is skipped up to the comma after its ']', and the next key still applies. */
static void test_resync_after_list(void **state) {
  (void)state;
  static const uint32_t none[CS_ROUNDUP_INTERVALS] = {0};
  cs_alloc_conf_t conf;
  assert_int_equal(parse("roundup_power2_divisions:[256:3,512:4],max_split_size_mb:64", &conf), 1);
  const char *log = captured();
  assert_int_equal(count_lines(log), 1);
  assert_contains(log, "TEST_CONF: roundup_power2_divisions:[256:3,512:4] is not accepted (");
  assert_divisions(&conf, none);
  assert_int_equal(conf.max_split_size, 64 * MIB);
}

static void test_expandable_segments(void **state) {
  (void)state;
  cs_alloc_conf_t defaults, conf;
  cs_alloc_conf_init(&defaults);
  assert_accepted("expandable_segments:False", &conf);
  assert_memory_equal(&conf, &defaults, sizeof conf);
  assert_ignored("expandable_segments:True");
  assert_int_equal(parse("expandable_segments:true", &conf), 1);
  assert_contains(captured(), "is ignored: cudasnap does not support expandable segments\n");
  assert_rejected("expandable_segments:yes");
}

static void test_split_large(void **state) {
  (void)state;
  static const char *const true_words[] = {"split_large:True", "split_large:true", "split_large:1"};
  static const char *const false_words[] = {"split_large:False", "split_large:false",
                                            "split_large:0"};
  cs_alloc_conf_t conf;
  for (size_t i = 0; i < 3; i++) {
    assert_accepted(true_words[i], &conf);
    assert_true(conf.split_large);
    assert_accepted(false_words[i], &conf);
    assert_false(conf.split_large);
  }
  assert_rejected("split_large:TRUE");
  assert_rejected("split_large:yes");
}

/* PyTorch keys that do not concern cudasnap's device cache: checked, then without effect. */
static void test_ignored_booleans(void **state) {
  (void)state;
  static const char *const keys[] = {"release_lock_on_cudamalloc",
                                     "graph_capture_record_stream_reuse",
                                     "pinned_use_cuda_host_register",
                                     "pinned_use_background_threads"};
  cs_alloc_conf_t defaults, conf;
  cs_alloc_conf_init(&defaults);
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char entry[128];
    snprintf(entry, sizeof entry, "%s:True", keys[i]);
    assert_accepted(entry, &conf);
    assert_memory_equal(&conf, &defaults, sizeof conf);
    snprintf(entry, sizeof entry, "%s:False", keys[i]);
    assert_accepted(entry, &conf);
    assert_memory_equal(&conf, &defaults, sizeof conf);
    snprintf(entry, sizeof entry, "%s:maybe", keys[i]);
    assert_rejected(entry);
  }
}

static void test_pinned_num_register_threads(void **state) {
  (void)state;
  cs_alloc_conf_t defaults, conf;
  cs_alloc_conf_init(&defaults);
  assert_accepted("pinned_num_register_threads:1", &conf);
  assert_accepted("pinned_num_register_threads:8", &conf);
  assert_accepted("pinned_num_register_threads:128", &conf);
  assert_memory_equal(&conf, &defaults, sizeof conf);
  assert_rejected("pinned_num_register_threads:0");
  assert_rejected("pinned_num_register_threads:3");
  assert_rejected("pinned_num_register_threads:256");
}

static void test_pinned_reserve_segment_size(void **state) {
  (void)state;
  cs_alloc_conf_t defaults, conf;
  cs_alloc_conf_init(&defaults);
  assert_accepted("pinned_reserve_segment_size_mb:64", &conf);
  assert_memory_equal(&conf, &defaults, sizeof conf);
  assert_rejected("pinned_reserve_segment_size_mb:-1");
  assert_rejected("pinned_reserve_segment_size_mb:big");
}

static void test_backend(void **state) {
  (void)state;
  cs_alloc_conf_t defaults, conf;
  cs_alloc_conf_init(&defaults);
  assert_accepted("backend:native", &conf);
  assert_memory_equal(&conf, &defaults, sizeof conf);
  assert_ignored("backend:cudaMallocAsync");
  assert_int_equal(parse("backend:cudaMallocAsync", &conf), 1);
  assert_contains(captured(), "is ignored: cudasnap always caches natively\n");
  assert_rejected("backend:hipMallocAsync");
}

static void test_unknown_key(void **state) {
  (void)state;
  assert_rejected("foo:1");
  cs_alloc_conf_t conf;
  assert_int_equal(parse("max_split_size:64", &conf), 1);
  const char *log = captured();
  assert_contains(log, "TEST_CONF: max_split_size:64 is not accepted (unknown key; the keys are "
                       "max_split_size_mb, max_non_split_rounding_mb, ");
  assert_contains(log, ", backend); entry ignored\n");
  /* Entries that do not start with a key. */
  assert_rejected(":5");
  assert_rejected("[max_split_size_mb:64]");
}

/* PyTorch drops every space, even inside a word. */
static void test_spaces(void **state) {
  (void)state;
  static const uint32_t expected[CS_ROUNDUP_INTERVALS] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                          1, 8, 8, 8, 8, 8, 8, 8};
  cs_alloc_conf_t conf;
  assert_accepted("  max_split_size_mb : 100 ,  garbage_collection_threshold :0.6 , "
                  "roundup_power2_divisions: [ 256 : 1 , > : 8 ] ",
                  &conf);
  assert_int_equal(conf.max_split_size, 100 * MIB);
  assert_true(conf.garbage_collection_threshold == 0.6);
  assert_divisions(&conf, expected);
  assert_accepted("max_split _size_mb:1 28", &conf);
  assert_int_equal(conf.max_split_size, 128 * MIB);
}

/* Each bad entry is one warning; the good ones between them apply. */
static void test_two_bad_one_good(void **state) {
  (void)state;
  cs_alloc_conf_t conf;
  assert_int_equal(parse("foo:1  , max_split_size_mb:64 ,garbage_collection_threshold:2  ", &conf),
                   2);
  const char *log = captured();
  assert_int_equal(count_lines(log), 2);
  assert_contains(log, "TEST_CONF: foo:1 is not accepted (unknown key;");
  assert_contains(log, "TEST_CONF: garbage_collection_threshold:2 is not accepted (");
  assert_int_equal(conf.max_split_size, 64 * MIB);
  assert_true(conf.garbage_collection_threshold == 0.0);
}

static void test_later_entries(void **state) {
  (void)state;
  cs_alloc_conf_t conf;
  assert_accepted("max_split_size_mb:64,max_split_size_mb:128", &conf);
  assert_int_equal(conf.max_split_size, 128 * MIB);
  /* A bad value keeps the earlier one. */
  assert_int_equal(parse("max_split_size_mb:64,max_split_size_mb:19", &conf), 1);
  assert_int_equal(count_lines(captured()), 1);
  assert_int_equal(conf.max_split_size, 64 * MIB);
}

/* Parsing applies over what conf holds; free_mode and cache are not keys and stay put. */
static void test_parse_over_earlier_values(void **state) {
  (void)state;
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  conf.free_mode = CS_FREE_STREAM;
  conf.cache = false;
  conf.split_large = true;
  assert_int_equal(cs_alloc_conf_parse("max_split_size_mb:32", "TEST_CONF", &conf), 0);
  assert_int_equal(conf.max_split_size, 32 * MIB);
  assert_int_equal(conf.free_mode, CS_FREE_STREAM);
  assert_false(conf.cache);
  assert_true(conf.split_large);
}

/* A long entry is quoted cut, so the line still ends with what is accepted. */
static void test_long_entry(void **state) {
  (void)state;
  char text[512];
  memset(text, 'k', 300);
  strcpy(text + 300, ":1,max_split_size_mb:64");
  cs_alloc_conf_t conf;
  assert_int_equal(parse(text, &conf), 1);
  const char *log = captured();
  assert_int_equal(count_lines(log), 1);
  assert_contains(log, "TEST_CONF: kkkk");
  assert_contains(log, "k... is not accepted (unknown key;");
  assert_contains(log, "); entry ignored\n");
  assert_int_equal(conf.max_split_size, 64 * MIB);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_defaults, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_empty_text, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_warning_text, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_max_split_size, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_max_non_split_rounding, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_garbage_collection_threshold, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_roundup_list, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_roundup_rest, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_roundup_single_value, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_roundup_clamps_and_keeps, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_roundup_rejected, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_roundup_list_edges, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_resync_after_list, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_expandable_segments, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_split_large, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_ignored_booleans, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_pinned_num_register_threads, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_pinned_reserve_segment_size, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_backend, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_unknown_key, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_spaces, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_two_bad_one_good, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_later_entries, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_parse_over_earlier_values, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_long_entry, log_capture_setup, log_capture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

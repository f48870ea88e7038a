/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes and times at the int64 limits (issue 33 item 6), where C's signed overflow is undefined:
 * the perfetto export (a time span, a phase's duration, the tracks' sums) and a rank's reserved
 * peak (the segments' sum). The sanitizer tree (-fsanitize=undefined, no recovery) aborts on an
 * overflow; every tree checks that nothing wrapped. tests/cli/hostile_values.sh does the same
 * through the tool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/rank_summary.h"
#include "export/perfetto.h"
#include "memviz/sink.h"
#include "reader/reader.h"

#define BIG "9000000000000000000"
#define SEGMENT                                                                                                       \
  "{\"device\": 0, \"address\": 4096, \"total_size\": " BIG ", \"allocated_size\": 0, \"active_size\": 0, "        \
  "\"requested_size\": 0, \"stream\": 0, \"segment_type\": \"large\", \"segment_pool_id\": [0, 0], "               \
  "\"is_expandable\": false, \"frames\": [], \"blocks\": [{\"address\": 4096, \"size\": " BIG ", "                 \
  "\"requested_size\": 0, \"state\": \"inactive\", \"frames\": []}]}"

static const char cs_limits_json[] =
    "{\"segments\": [" SEGMENT ", " SEGMENT "], \"device_traces\": [["
    "{\"action\": \"segment_alloc\", \"addr\": 4096, \"size\": " BIG ", \"stream\": 0, \"time_us\": -" BIG ", \"frames\": []},"
    "{\"action\": \"segment_alloc\", \"addr\": 4096, \"size\": " BIG ", \"stream\": 0, \"time_us\": 0, \"frames\": []},"
    "{\"action\": \"alloc\", \"addr\": 4096, \"size\": " BIG ", \"stream\": 0, \"time_us\": " BIG ", \"frames\": []}]],"
    "\"external_annotations\": ["
    "{\"device\": 0, \"stage\": \"START\", \"name\": \"whole\", \"time_us\": -" BIG "},"
    "{\"device\": 0, \"stage\": \"END\", \"name\": \"whole\", \"time_us\": " BIG "}]}";

static cs_doc_t *cs_limits_doc(void) {
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot(cs_limits_json, sizeof cs_limits_json - 1, NULL, &err);
  if (doc == NULL) fail_msg("read: %s", err.message);
  return doc;
}

static void test_rank_reserved_peak_saturates(void **state) {
  (void)state;
  cs_doc_t *doc = cs_limits_doc();
  cs_rank_summary_t s;
  assert_int_equal(cs_rank_summary_of(doc, &s), 0);
  assert_true(s.peak_reserved == (uint64_t)INT64_MAX);
  cs_rank_summary_free(&s);
  cs_doc_free(doc);
}

static void test_perfetto_writes_no_wrapped_number(void **state) {
  (void)state;
  cs_doc_t *doc = cs_limits_doc();
  cs_mem_sink_t mem;
  cs_mem_sink_init(&mem);
  cs_perfetto_t *pf = cs_perfetto_begin(cs_mem_sink(&mem));
  assert_non_null(pf);
  assert_int_equal(cs_perfetto_add(pf, doc, "limits.json", 0), 0);
  assert_int_equal(cs_perfetto_finish(pf), 0);
  char *text = malloc(mem.len + 1);
  assert_non_null(text);
  memcpy(text, mem.data, mem.len);
  text[mem.len] = '\0';
  /* the phase spans the whole int64 range of times: its duration held at INT64_MAX */
  assert_non_null(strstr(text, "\"dur\":9223372036854775807"));
  /* nothing wrapped below zero: no negative duration or counter value */
  assert_null(strstr(text, "\"dur\":-"));
  assert_null(strstr(text, "\"bytes\":-"));
  free(text);
  cs_mem_sink_free(&mem);
  cs_doc_free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rank_reserved_peak_saturates),
      cmocka_unit_test(test_perfetto_writes_no_wrapped_number),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

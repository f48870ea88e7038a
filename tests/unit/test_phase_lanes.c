/* SPDX-License-Identifier: Apache-2.0 */
/* analysis/phase_lanes.c's lanes (issue 44): each thread's annotations nested on their own, an entry's
 * phase found in its own thread's lane, files without threads read as one nesting, thread names
 * made safe for a terminal, and a file with as many threads as annotations read in bounded time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/peak.h"
#include "analysis/phase_lanes.h"
#include "analysis/sites.h"
#include "reader/reader.h"

#define SEG                                                                                                         \
  "{\"device\": 0, \"address\": 4096, \"total_size\": 4096, \"allocated_size\": 0, \"active_size\": 0, "          \
  "\"requested_size\": 0, \"stream\": 0, \"segment_type\": \"small\", \"blocks\": [{\"size\": 4096, "            \
  "\"requested_size\": 0, \"state\": \"inactive\"}]}"
#define ALLOC(addr, size, t, thread) \
  "{\"action\": \"alloc\", \"addr\": " #addr ", \"size\": " #size ", \"stream\": 0, \"time_us\": " #t thread "}"
#define FREE(addr, size, t) \
  "{\"action\": \"free_completed\", \"addr\": " #addr ", \"size\": " #size ", \"stream\": 0, \"time_us\": " #t "}"
#define ANN(stage, name, t, thread) \
  "{\"stage\": \"" stage "\", \"name\": \"" name "\", \"device\": 0, \"time_us\": " #t thread "}"

/* Thread 11 (named "w-a") opens outer > a; thread 12 (named with an escape) opens outer > b; the
 * peak is thread 12's allocation at t=50, where both are open. */
static const char two_threads[] =
    "{\"segments\": [" SEG "], \"device_traces\": [["
    ALLOC(4096, 100, 20, ", \"thread\": 11") "," ALLOC(8192, 200, 50, ", \"thread\": 12") ","
    FREE(4096, 100, 70) "," FREE(8192, 200, 71) "]],"
    "\"external_annotations\": ["
    ANN("START", "outer", 10, ", \"thread\": 11, \"thread_name\": \"w-a\"") ","
    ANN("START", "a", 15, ", \"thread\": 11, \"thread_name\": \"w-a\"") ","
    ANN("START", "outer", 30, ", \"thread\": 12, \"thread_name\": \"b\\u001b[31m\"") ","
    ANN("START", "b", 40, ", \"thread\": 12") ","
    ANN("END", "a", 60, ", \"thread\": 11") "," ANN("END", "outer", 61, ", \"thread\": 11") ","
    ANN("END", "b", 62, ", \"thread\": 12") "," ANN("END", "outer", 63, ", \"thread\": 12") "]}";

/* The same without any thread: one nesting, as files were read before. */
static const char no_threads[] =
    "{\"segments\": [" SEG "], \"device_traces\": [["
    ALLOC(4096, 100, 20, "") "," ALLOC(8192, 200, 50, "") "," FREE(4096, 100, 70) "," FREE(8192, 200, 71) "]],"
    "\"external_annotations\": ["
    ANN("START", "outer", 10, "") "," ANN("START", "a", 15, "") "," ANN("START", "outer", 30, "") ","
    ANN("START", "b", 40, "") "," ANN("END", "a", 60, "") "," ANN("END", "outer", 61, "") ","
    ANN("END", "b", 62, "") "," ANN("END", "outer", 63, "") "]}";

static cs_doc_t *read_doc(const char *json, size_t len) {
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot(json, len, NULL, &err);
  if (doc == NULL) fail_msg("read: %s", err.message);
  return doc;
}

static cs_peak_t peak_of(const cs_doc_t *doc) {
  cs_sites_t sites;
  cs_sites_init(&sites);
  cs_peak_t peak;
  assert_int_equal(cs_peak_find(doc, 0, &peak, &sites), 0);
  cs_sites_free(&sites);
  return peak;
}

static void test_each_thread_its_own(void **state) {
  (void)state;
  cs_doc_t *doc = read_doc(two_threads, sizeof two_threads - 1);
  cs_peak_t peak = peak_of(doc);
  assert_int_equal(peak.after, 2);
  char *phase = NULL;
  assert_int_equal(cs_phases_at_peak(doc, 0, &peak, &phase), 0);
  assert_non_null(phase);
  /* thread 12's own phases, never thread 11's "outer > a" around them; its name made safe */
  assert_string_equal(phase, "outer > b on thread 12 (b?[31m)");
  free(phase);
  cs_phase_span_t spans[8];
  size_t n = 0, left_out = 0;
  cs_phase_lanes_t lanes;
  assert_int_equal(cs_phases_spans(doc, 0, spans, 8, &n, &left_out, &lanes), 0);
  assert_int_equal(n, 4);
  assert_int_equal(lanes.count, 2);
  assert_int_equal(lanes.items[0].thread, 11);
  assert_string_equal(lanes.items[0].name, "w-a");
  assert_int_equal(lanes.items[1].thread, 12);
  /* start order; depth within each thread's own lane */
  const char *names[4] = {"outer", "a", "outer", "b"};
  size_t lane[4] = {0, 0, 1, 1}, depth[4] = {0, 1, 0, 1};
  for (size_t i = 0; i < 4; i++) {
    assert_string_equal(spans[i].name, names[i]);
    assert_int_equal(spans[i].lane, lane[i]);
    assert_int_equal(spans[i].depth, depth[i]);
  }
  assert_int_equal(cs_phase_lanes_own(&lanes, 12), 1);
  assert_int_equal(cs_phase_lanes_own(&lanes, 11), 0);
  assert_int_equal(cs_phase_lanes_own(&lanes, 13), SIZE_MAX); /* opened no phase */
  assert_int_equal(cs_phase_lanes_own(&lanes, 0), SIZE_MAX);  /* not known, among two */
  assert_false(cs_phase_lanes_plain(&lanes, 1));
  char label[64];
  cs_phase_lane_label(&lanes.items[1], label, sizeof label);
  assert_string_equal(label, "thread 12 (b?[31m)");
  cs_phase_lanes_free(&lanes);
  cs_doc_free(doc);
}

static void test_no_threads_one_nesting(void **state) {
  (void)state;
  cs_doc_t *doc = read_doc(no_threads, sizeof no_threads - 1);
  cs_peak_t peak = peak_of(doc);
  char *phase = NULL;
  assert_int_equal(cs_phases_at_peak(doc, 0, &peak, &phase), 0);
  assert_non_null(phase);
  assert_string_equal(phase, "outer > a > outer > b"); /* as it always read */
  free(phase);
  cs_phase_span_t spans[8];
  size_t n = 0, left_out = 0;
  cs_phase_lanes_t lanes;
  assert_int_equal(cs_phases_spans(doc, 0, spans, 8, &n, &left_out, &lanes), 0);
  assert_int_equal(lanes.count, 1);
  assert_int_equal(lanes.items[0].thread, 0);
  assert_null(lanes.items[0].name);
  assert_int_equal(spans[3].depth, 3);
  assert_int_equal(cs_phase_lanes_own(&lanes, 0), 0);
  assert_int_equal(cs_phase_lanes_own(&lanes, 5), SIZE_MAX);
  assert_true(cs_phase_lanes_plain(&lanes, 0));
  char label[8] = "x";
  cs_phase_lane_label(&lanes.items[0], label, sizeof label);
  assert_string_equal(label, ""); /* annotations without a thread: no label */
  cs_phase_lanes_free(&lanes);
  cs_doc_free(doc);
}

/* As many threads as ranges, and an entry per thread: read, placed and looked up in bounded time
 * (the lanes are found by binary search, not a scan per entry). */
static void test_many_threads(void **state) {
  (void)state;
  enum { THREADS = 20000 };
  size_t cap = 256 + (size_t)THREADS * 320;
  char *json = malloc(cap);
  assert_non_null(json);
  size_t len = (size_t)snprintf(json, cap, "{\"segments\": [], \"device_traces\": [[");
  for (int i = 0; i < THREADS; i++)
    len += (size_t)snprintf(json + len, cap - len,
                            "%s{\"action\": \"alloc\", \"addr\": %d, \"size\": 1, \"stream\": 0, \"time_us\": %d, "
                            "\"thread\": %d}", i ? "," : "", 4096 * (i + 1), 2 * i + 1, i + 1);
  len += (size_t)snprintf(json + len, cap - len, "]], \"external_annotations\": [");
  for (int i = 0; i < THREADS; i++)
    len += (size_t)snprintf(json + len, cap - len,
                            "%s{\"stage\": \"START\", \"name\": \"p\", \"device\": 0, \"time_us\": %d, \"thread\": %d}",
                            i ? "," : "", 2 * i, THREADS - i);
  len += (size_t)snprintf(json + len, cap - len, "]}");
  assert_true(len < cap);
  cs_doc_t *doc = read_doc(json, len);
  free(json);
  cs_phase_span_t *spans = malloc(THREADS * sizeof *spans);
  assert_non_null(spans);
  size_t n = 0, left_out = 0;
  cs_phase_lanes_t lanes;
  assert_int_equal(cs_phases_spans(doc, 0, spans, THREADS, &n, &left_out, &lanes), 0);
  assert_int_equal(n, THREADS);
  assert_int_equal(lanes.count, THREADS);
  for (int64_t t = 1; t <= THREADS; t++) assert_int_equal(lanes.items[cs_phase_lanes_own(&lanes, t)].thread, t);
  for (size_t i = 0; i < n; i++) assert_int_equal(spans[i].depth, 0);
  cs_phase_lanes_free(&lanes);
  free(spans);
  cs_peak_t peak = peak_of(doc);
  char *phase = NULL;
  assert_int_equal(cs_phases_at_peak(doc, 0, &peak, &phase), 0);
  assert_non_null(phase); /* the last entry, thread 20000, whose range opened first */
  assert_string_equal(phase, "p on thread 20000");
  free(phase);
  cs_doc_free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_each_thread_its_own),
      cmocka_unit_test(test_no_threads_one_nesting),
      cmocka_unit_test(test_many_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

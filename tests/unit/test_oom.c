/* SPDX-License-Identifier: Apache-2.0 */
/* The out-of-memory answer (analysis/oom.h, issue 46): about the state at the OOM, the same in the
 * OOM's own snapshot and in a later one; memory passed through never the cache's reserved bytes;
 * every verdict a whole sentence; only settings cudasnap honours, each one that would have made
 * room. And the words that go with it (issue 46 items 5 and 6): a rank's peak allocated bytes are
 * the cache's, beside the memory passed through; Perfetto draws a cache allocation whose segment
 * is gone as the cache's. Snapshots are written here as cudasnap writes them (JSON). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/oom.h"
#include "analysis/rank_summary.h"
#include "export/perfetto.h"
#include "memviz/sink.h"
#include "reader/reader.h"

#define MIB "1048576"
#define FRAMES(fn, line) "[{\"name\": \"" fn "\", \"filename\": \"server.c\", \"line\": " #line "}]"
/* the cache's 4 MiB segment at 0x1000000 holding one 4 MiB block; 2 MiB passed through (async) at 0x2000000 */
#define CACHE_SEG(state)                                                                                              \
  "{\"device\": 0, \"address\": 16777216, \"total_size\": 4194304, \"stream\": 0, \"segment_type\": \"large\", "    \
  "\"frames\": [], \"cudasnap\": {\"kind\": \"cached\"}, \"blocks\": [{\"size\": 4194304, \"requested_size\": "     \
  "4194304, \"state\": \"" state "\", \"frames\": " FRAMES("kv_append", 118) "}]}"
#define ASYNC_SEG                                                                                                     \
  "{\"device\": 0, \"address\": 33554432, \"total_size\": 2097152, \"stream\": 7, \"segment_type\": \"large\", "    \
  "\"frames\": [], \"cudasnap\": {\"kind\": \"async\"}, \"blocks\": [{\"size\": 2097152, \"requested_size\": "      \
  "2097152, \"state\": \"active_allocated\", \"frames\": " FRAMES("out_buffer", 114) "}]}"
#define EV(action, addr, size, t, rest)                                                                               \
  "{\"action\": \"" action "\", \"addr\": " #addr ", \"size\": " #size ", \"stream\": 0, \"time_us\": " #t rest "}"
#define ASYNC ", \"cudasnap\": {\"kind\": \"async\"}"
#define BEFORE_OOM                                                                                                    \
  EV("segment_alloc", 16777216, 4194304, 10, "") ","                                                                 \
  EV("alloc", 16777216, 4194304, 10, ", \"frames\": " FRAMES("kv_append", 118)) ","                                \
  EV("segment_alloc", 33554432, 2097152, 11, ASYNC) ","                                                              \
  EV("alloc", 33554432, 2097152, 11, ", \"frames\": " FRAMES("out_buffer", 114) ASYNC)
/* cudasnap recorded the cache as it answered: 4 MiB reserved, all of it allocated */
#define OOM_RECORDED(cache)                                                                                           \
  "{\"action\": \"oom\", \"device_free\": 0, \"size\": 4194304, \"stream\": 0, \"time_us\": 12, \"frames\": "       \
  FRAMES("kv_append", 118) cache "}"
#define CACHE_FIGURES                                                                                                 \
  ", \"cudasnap\": {\"cache\": {\"reserved\": 4194304, \"allocated\": 4194304, \"largest_free_block\": 0, "          \
  "\"small_pool_free\": 0}, \"device_total\": 8388608}"
/* after the OOM: the buffer passed through and the cache's block and segment all go */
#define AFTER_OOM                                                                                                     \
  EV("free_requested", 33554432, 2097152, 20, ASYNC) "," EV("free_completed", 33554432, 2097152, 20, ASYNC) ","     \
  EV("segment_free", 33554432, 2097152, 20, ASYNC) "," EV("free_requested", 16777216, 4194304, 21, "") ","          \
  EV("free_completed", 16777216, 4194304, 21, "") "," EV("segment_free", 16777216, 4194304, 22, "")
#define META(trigger)                                                                                                 \
  "\"cudasnap\": {\"version\": \"0.1.0\", \"pid\": 1, \"trigger\": \"" trigger "\", \"trace_kinds\": true, "       \
  "\"memory\": [{\"device\": 0, \"driver_known\": true, \"driver_total\": 8388608, \"driver_free\": 0}]}"

static cs_doc_t *cs_doc_of(const char *json) {
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot(json, strlen(json), NULL, &err);
  if (doc == NULL) fail_msg("read: %s", err.message);
  return doc;
}

/* The answer as summary writes it, and as one sentence. */
static char *cs_answer(const cs_doc_t *doc, cs_oom_t *o, char *verdict, size_t len) {
  assert_int_equal(cs_oom_find(doc, o), 0);
  assert_true(o->found);
  char *text = NULL;
  size_t n = 0;
  FILE *mem = open_memstream(&text, &n);
  cs_oom_write(mem, doc, o, "", 5);
  fclose(mem);
  cs_oom_verdict_text(o, CS_OOM_SITES_INLINE, verdict, len);
  return text;
}

static void assert_whole(const char *verdict) {
  size_t n = strlen(verdict);
  assert_true(n > 0);
  if (strchr(":;,", verdict[n - 1])) fail_msg("not a whole sentence: %s", verdict);
}

static const char cs_at_oom[] = "{\"segments\": [" CACHE_SEG("active_allocated") ", " ASYNC_SEG "], "
                                "\"device_traces\": [[" BEFORE_OOM "," OOM_RECORDED(CACHE_FIGURES) "]], "
                                META("oom") "}";
static const char cs_at_exit[] = "{\"segments\": [], \"device_traces\": [[" BEFORE_OOM "," OOM_RECORDED(CACHE_FIGURES)
                                 "," AFTER_OOM "]], " META("exit") "}";
static const char cs_at_exit_unrecorded[] = "{\"segments\": [], \"device_traces\": [[" BEFORE_OOM "," OOM_RECORDED("")
                                            "," AFTER_OOM "]], " META("exit") "}";

/* The OOM snapshot and the exit snapshot, 6 events later, say the same; 2 MiB passed through is
 * outside the cache, not in its reserved bytes. */
static void test_same_answer_later(void **state) {
  (void)state;
  cs_doc_t *then = cs_doc_of(cs_at_oom), *later = cs_doc_of(cs_at_exit);
  cs_oom_t a, b;
  char va[4096], vb[4096];
  char *ta = cs_answer(then, &a, va, sizeof va), *tb = cs_answer(later, &b, vb, sizeof vb);
  assert_string_equal(ta, tb);
  assert_string_equal(va, vb);
  assert_int_equal(b.events_after, 6);
  assert_true(b.reserved == 4 * 1048576u && b.passthrough == 2 * 1048576u && b.outside == 4 * 1048576u);
  assert_int_equal(b.verdict, CS_OOM_OUTSIDE);
  assert_non_null(strstr(ta, "the cache at the OOM: 4.00 MiB reserved"));
  assert_non_null(strstr(vb, "2.00 MiB passed through the cache (async 2.00 MiB)"));
  assert_whole(vb);
  free(ta);
  free(tb);
  cs_doc_free(then);
  cs_doc_free(later);
}

/* Without the figures recorded, a later snapshot still has the cache's reserved bytes at the OOM
 * (the segment events since undone, the memory passed through left out), the sites that held it
 * then (the trace replayed to the OOM), and says its blocks then are not known. */
static void test_later_without_figures(void **state) {
  (void)state;
  cs_doc_t *doc = cs_doc_of(cs_at_exit_unrecorded);
  cs_oom_t o;
  char v[4096];
  char *text = cs_answer(doc, &o, v, sizeof v);
  assert_false(o.blocks_known);
  assert_true(o.reserved == 4 * 1048576u && o.passthrough == 2 * 1048576u);
  assert_int_equal(o.nholders, 1);
  assert_string_equal(o.holders[0].site.name, "kv_append");
  assert_non_null(strstr(text, "its blocks then are not known"));
  assert_whole(v);
  free(text);
  cs_doc_free(doc);
}

/* The cache held nothing live at the OOM: the verdict says so rather than announcing sites. */
static void test_no_sites_is_whole(void **state) {
  (void)state;
  static const char json[] =
      "{\"segments\": [], \"device_traces\": [["
      "{\"action\": \"oom\", \"device_free\": 8388608, \"size\": 16777216, \"stream\": 0, \"time_us\": 5}]], "
      META("exit") "}";
  cs_doc_t *doc = cs_doc_of(json);
  cs_oom_t o;
  char v[4096];
  char *text = cs_answer(doc, &o, v, sizeof v);
  assert_int_equal(o.verdict, CS_OOM_EXHAUSTED);
  assert_int_equal(o.nholders, 0);
  assert_non_null(strstr(v, "no block of the cache was live then"));
  assert_whole(v);
  cs_oom_verdict_text(&o, CS_OOM_SITES_BELOW, v, sizeof v);
  assert_whole(v);
  free(text);
  cs_doc_free(doc);
}

/* A fragmented OOM of cudasnap's names the settings it honours that would have made room, and
 * never expandable segments, which it refuses. */
static void cs_fragmented(const char *settings, const char *cache, cs_oom_t *o, char *v, size_t len) {
  char json[4096];
  snprintf(json, sizeof json,
           "{\"segments\": [], \"device_traces\": [[{\"action\": \"oom\", \"device_free\": 0, \"size\": 4194304, "
           "\"stream\": 0, \"time_us\": 5, \"cudasnap\": {\"cache\": %s}}]], \"allocator_settings\": %s, "
           META("oom") "}",
           cache, settings);
  cs_doc_t *doc = cs_doc_of(json);
  free(cs_answer(doc, o, v, len));
  assert_int_equal(o->verdict, CS_OOM_FRAGMENTED);
  assert_null(strstr(v, "expandable"));
  assert_whole(v);
  cs_doc_free(doc);
}

static void test_fragmented_settings(void **state) {
  (void)state;
  cs_oom_t o;
  char v[4096];
  /* 6 MiB free between small blocks: ipc_small would have freed them */
  cs_fragmented("{\"split_large\": false}", "{\"reserved\": 10485760, \"allocated\": 4194304, "
                "\"largest_free_block\": 2097152, \"small_pool_free\": 6291456}", &o, v, sizeof v);
  assert_int_equal(o.helps, CS_OOM_HELPS_IPC_SMALL);
  assert_non_null(strstr(v, "CUDASNAP_ALLOC_CONF=ipc_small:True would have made room"));
  /* 6 MiB free between large blocks in shared segments: without split_large */
  cs_fragmented("{\"split_large\": true}", "{\"reserved\": 10485760, \"allocated\": 4194304, "
                "\"largest_free_block\": 2097152, \"small_pool_free\": 0}", &o, v, sizeof v);
  assert_int_equal(o.helps, CS_OOM_HELPS_NO_SPLIT_LARGE);
  assert_non_null(strstr(v, "without split_large:True would have made room"));
  /* ipc_small on already, and the default large pool: nothing of cudasnap's would have helped */
  cs_fragmented("{\"split_large\": false, \"ipc_small\": true}", "{\"reserved\": 10485760, \"allocated\": "
                "4194304, \"largest_free_block\": 2097152, \"small_pool_free\": 6291456}", &o, v, sizeof v);
  assert_int_equal(o.helps, 0);
  assert_non_null(strstr(v, "no setting of cudasnap's would have made room"));
}

/* ranks: the peak's allocated bytes are the cache's (at most its reserved peak), the memory passed
 * through beside them. */
static void test_rank_peak_split(void **state) {
  (void)state;
  cs_doc_t *doc = cs_doc_of(cs_at_exit);
  cs_rank_summary_t s;
  assert_int_equal(cs_rank_summary_of(doc, &s), 0);
  assert_true(s.peak_allocated == 4 * 1048576u && s.peak_passthrough == 2 * 1048576u);
  assert_true(s.peak_reserved == 4 * 1048576u);
  assert_true(s.peak_allocated <= s.peak_reserved);
  cs_rank_summary_free(&s);
  cs_doc_free(doc);
}

/* Perfetto: the cache's block whose segment is gone is the cache's (no `unknown` track), the
 * buffer passed through is on its kind's track, and reserved is the cache's segments alone. */
static void test_perfetto_kinds(void **state) {
  (void)state;
  cs_doc_t *doc = cs_doc_of(cs_at_exit);
  cs_mem_sink_t mem;
  cs_mem_sink_init(&mem);
  cs_perfetto_t *pf = cs_perfetto_begin(cs_mem_sink(&mem));
  assert_non_null(pf);
  assert_int_equal(cs_perfetto_add(pf, doc, "exit.json", 0), 0);
  assert_int_equal(cs_perfetto_finish(pf), 0);
  char *out = strndup(mem.data, mem.len);
  assert_null(strstr(out, "device 0 unknown"));
  assert_non_null(strstr(out, "\"device 0 async\""));
  /* reserved is the cache's 4 MiB at most, never 6 with the memory passed through */
  assert_non_null(strstr(out, "\"name\":\"device 0 reserved\""));
  assert_null(strstr(out, "\"bytes\":6291456"));
  free(out);
  cs_mem_sink_free(&mem);
  cs_doc_free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_answer_later), cmocka_unit_test(test_later_without_figures),
      cmocka_unit_test(test_no_sites_is_whole), cmocka_unit_test(test_fragmented_settings),
      cmocka_unit_test(test_rank_peak_split),   cmocka_unit_test(test_perfetto_kinds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

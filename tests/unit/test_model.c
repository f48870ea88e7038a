/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot model (model/doc.h, model/build.h, model/write.h): what a reader of the model
 * depends on. Equal content is one value (frame lists are interned), duplicate keys keep their
 * first position and last value, numbers keep their exact value and type, and writing a model out
 * through the emitters reads back as the same model, with a pickle's frame lists shared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "memviz/emit.h"
#include "memviz/sink.h"
#include "model/build.h"
#include "model/write.h"
#include "reader/reader.h"

/* {"filename": f, "line": line, "name": name} */
static cs_val_t frame(cs_build_t *b, const char *f, int64_t line, const char *name) {
  cs_val_t d = cs_build_open(b, CS_TAG_DICT);
  assert_true(cs_build_set(b, d, CS_KEY_FILENAME, cs_build_str(b, f, strlen(f))));
  assert_true(cs_build_set(b, d, CS_KEY_LINE, cs_build_int(b, line)));
  assert_true(cs_build_set(b, d, CS_KEY_NAME, cs_build_str(b, name, strlen(name))));
  return cs_build_close(b, d);
}

static cs_val_t frames(cs_build_t *b, int line) {
  cs_val_t l = cs_build_open(b, CS_TAG_LIST);
  assert_true(cs_build_append(b, l, frame(b, "train.py", line, "step")));
  assert_true(cs_build_append(b, l, frame(b, "train.py", 7, "main")));
  return cs_build_close(b, l);
}

static void test_equal_content_is_one_value(void **state) {
  (void)state;
  cs_build_t *b = cs_build_new();
  assert_non_null(b);
  cs_val_t a = frames(b, 12), c = frames(b, 12), other = frames(b, 13);
  assert_true(a == c);      /* one frame list, however often it is written */
  assert_false(a == other); /* a different line is a different list */
  cs_val_t empty_list = cs_build_close(b, cs_build_open(b, CS_TAG_LIST));
  cs_val_t empty_tuple = cs_build_close(b, cs_build_open(b, CS_TAG_TUPLE));
  assert_false(empty_list == empty_tuple); /* a tuple is not a list */
  assert_true(cs_val_is_tuple(empty_tuple) && cs_val_is_array(empty_tuple) && !cs_val_is_tuple(empty_list));
  cs_val_t root = cs_build_open(b, CS_TAG_LIST);
  assert_true(cs_build_append(b, root, a));
  assert_true(cs_build_append(b, root, other));
  cs_doc_t *doc = cs_build_finish(b, cs_build_close(b, root));
  assert_non_null(doc);
  cs_val_t f0 = cs_doc_at(doc, cs_doc_at(doc, cs_doc_root(doc), 0), 0);
  assert_string_equal(cs_doc_str(doc, cs_doc_get_key(doc, f0, CS_KEY_NAME), NULL), "step");
  assert_string_equal(cs_doc_str(doc, cs_doc_get(doc, f0, "filename"), NULL), "train.py");
  assert_true(cs_val_absent(cs_doc_get(doc, f0, "no such key")));
  assert_int_equal(cs_doc_depth(doc, cs_doc_root(doc)), 3);
  cs_doc_free(doc);
}

static void test_duplicate_keys_keep_first_position_last_value(void **state) {
  (void)state;
  const char json[] = "{\"a\": 1, \"b\": 2, \"a\": 3}";
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot(json, sizeof json - 1, NULL, &err);
  assert_non_null(doc);
  cs_val_t root = cs_doc_root(doc);
  assert_int_equal(cs_doc_len(doc, root), 2);
  assert_string_equal(cs_doc_key_at(doc, root, 0), "a");
  int64_t x = 0;
  assert_true(cs_doc_int(doc, cs_doc_at(doc, root, 0), &x));
  assert_int_equal(x, 3);
  cs_doc_free(doc);
}

static void test_numbers_keep_value_and_type(void **state) {
  (void)state;
  const char json[] = "[9007199254740993, -9223372036854775808, 2.0, 2, 1e400, 99999999999999999999, "
                      "{\"segment_pool_id\": [0, 0]}]";
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot(json, sizeof json - 1, NULL, &err);
  assert_non_null(doc);
  const cs_val_t *v = cs_doc_items(doc, cs_doc_root(doc));
  int64_t x;
  assert_true(cs_doc_int(doc, v[0], &x));
  assert_true(x == 9007199254740993LL); /* above 2^53, exact */
  assert_true(cs_doc_int(doc, v[1], &x));
  assert_true(x == INT64_MIN);
  assert_true(cs_doc_is_float(doc, v[2])); /* 2.0 stays a float ... */
  assert_true(cs_doc_int(doc, v[2], &x));  /* ... and reads as the integer it equals */
  assert_int_equal(x, 2);
  assert_false(cs_doc_is_float(doc, v[3]));
  assert_false(cs_doc_int(doc, v[4], &x)); /* infinity is no integer */
  assert_false(cs_doc_is_float(doc, v[5])); /* beyond int64: its double, not "written as a float" */
  assert_true(cs_val_is_tuple(cs_doc_get_key(doc, v[6], CS_KEY_SEGMENT_POOL_ID)));
  cs_doc_extent_t extent;
  assert_int_equal(cs_doc_extent(doc, &extent), 0);
  assert_false(extent.nan); /* an infinity (1e400) is kept: convert writes it as 1e999 */
  cs_doc_free(doc);
}

/* Writes doc with the emitter of `format` into memory, and reads it back. */
static cs_doc_t *roundtrip(const cs_doc_t *doc, cs_emit_format_t format, size_t *len) {
  cs_mem_sink_t sink;
  cs_mem_sink_init(&sink);
  cs_emitter_t *e = cs_emitter_create(format, cs_mem_sink(&sink), 2);
  assert_non_null(e);
  assert_int_equal(cs_doc_write(doc, e, format, NULL, NULL), 0);
  cs_read_error_t err;
  cs_doc_t *back = cs_read_snapshot(sink.data, sink.len, NULL, &err);
  if (back == NULL) fail_msg("read back: byte %zu: %s", err.offset, err.message);
  *len = sink.len;
  cs_mem_sink_free(&sink);
  return back;
}

static void test_write_reads_back_the_same(void **state) {
  (void)state;
  /* A small snapshot whose 1,000 events share one frame list. */
  cs_build_t *b = cs_build_new();
  cs_val_t trace = cs_build_open(b, CS_TAG_LIST);
  cs_val_t shared = frames(b, 42);
  for (int64_t i = 0; i < 1000; i++) {
    cs_val_t ev = cs_build_open(b, CS_TAG_DICT);
    assert_true(cs_build_set(b, ev, CS_KEY_ACTION, cs_build_str(b, "alloc", 5)));
    assert_true(cs_build_set(b, ev, CS_KEY_ADDR, cs_build_int(b, ((int64_t)1 << 60) + i * 512)));
    assert_true(cs_build_set(b, ev, CS_KEY_SIZE, cs_build_float(b, 512.0, false)));
    assert_true(cs_build_set(b, ev, CS_KEY_FRAMES, shared));
    assert_true(cs_build_append(b, trace, cs_build_close(b, ev)));
  }
  cs_val_t traces = cs_build_open(b, CS_TAG_LIST);
  assert_true(cs_build_append(b, traces, cs_build_close(b, trace)));
  cs_val_t root = cs_build_open(b, CS_TAG_DICT);
  assert_true(cs_build_set(b, root, CS_KEY_DEVICE_TRACES, cs_build_close(b, traces)));
  cs_doc_t *doc = cs_build_finish(b, cs_build_close(b, root));
  assert_non_null(doc);

  size_t json_len, pickle_len;
  cs_doc_t *from_json = roundtrip(doc, CS_EMIT_JSON, &json_len);
  cs_doc_t *from_pickle = roundtrip(doc, CS_EMIT_PICKLE, &pickle_len);
  assert_true(cs_doc_values_equal(doc, cs_doc_root(doc), from_json, cs_doc_root(from_json)));
  assert_true(cs_doc_values_equal(doc, cs_doc_root(doc), from_pickle, cs_doc_root(from_pickle)));
  /* The pickle writes the shared list once and refers to it after (a BINGET of 2 bytes): its
   * 1,000 events take under 60 bytes each, where the list written out would add 70 more. */
  assert_true(pickle_len < 1000 * 60);
  assert_true(pickle_len * 2 < json_len);
  cs_doc_extent_t extent;
  assert_int_equal(cs_doc_extent(doc, &extent), 0);
  /* root + traces + trace + 1000 * (the event and its 3 scalars + the list + 2 frames of 1 + 3) */
  assert_int_equal(extent.values, 3 + 1000 * (4 + 1 + 2 * 4));
  assert_false(extent.nan);
  cs_doc_free(from_json);
  cs_doc_free(from_pickle);
  cs_doc_free(doc);
}

/* A pickle whose memo refers to one value many times ("billion laughs") stays as small as the file:
 * each reference is one word. */
static void test_shared_values_cost_one_word(void **state) {
  (void)state;
  /* PROTO 2, EMPTY_LIST, BINPUT 0, then 20 levels of: MARK, BINGET k, x 8, LIST, BINPUT k+1 */
  uint8_t buf[1024];
  size_t n = 0;
  buf[n++] = 0x80;
  buf[n++] = 2;
  buf[n++] = ']';
  buf[n++] = 'q';
  buf[n++] = 0;
  for (uint8_t level = 0; level < 20; level++) {
    buf[n++] = '(';
    for (int k = 0; k < 8; k++) {
      buf[n++] = 'h';
      buf[n++] = level;
    }
    buf[n++] = 'l';
    buf[n++] = 'q';
    buf[n++] = (uint8_t)(level + 1);
  }
  buf[n++] = '.';
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot(buf, n, NULL, &err);
  assert_non_null(doc);
  assert_true(cs_doc_bytes(doc) < 1 << 20);
  cs_doc_extent_t extent;
  assert_int_equal(cs_doc_extent(doc, &extent), 0);
  assert_true(extent.values > (uint64_t)1 << 59); /* 8^20 written out: the writer refuses that */
  cs_doc_free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal_content_is_one_value),
      cmocka_unit_test(test_duplicate_keys_keep_first_position_last_value),
      cmocka_unit_test(test_numbers_keep_value_and_type),
      cmocka_unit_test(test_write_reads_back_the_same),
      cmocka_unit_test(test_shared_values_cost_one_word),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

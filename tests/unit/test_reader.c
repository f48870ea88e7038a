/* reader/reader: JSON and pickle into one cJSON tree (snapshot-format.md sections 3.2-3.4).
 *
 * The same snapshot read from JSON and from three pickles (Python protocol 2, protocol 4 with FRAME
 * and MEMOIZE, and the minimal opcode writer) must give equal trees; every truncation of a small file
 * must be an error, never a crash; hostile pickles (huge lengths, deep nesting, bad memo indices,
 * unsupported opcodes, stack underflow, memo expansion) must be errors without leaks (ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "reader/reader.h"

#ifndef CS_TEST_DATA_DIR
#define CS_TEST_DATA_DIR "../data"
#endif

static uint8_t *slurp(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/fixtures/%s", CS_TEST_DATA_DIR, name);
  FILE *f = fopen(path, "rb");
  if (f == NULL) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  assert_non_null(b);
  *len = fread(b, 1, (size_t)n, f);
  fclose(f);
  return b;
}

static cJSON *read_fixture(const char *name, cs_snapshot_format_t *fmt) {
  size_t n;
  uint8_t *b = slurp(name, &n);
  cs_read_error_t err;
  cJSON *t = cs_read_snapshot(b, n, fmt, &err);
  if (t == NULL) fail_msg("%s: byte %zu: %s", name, err.offset, err.message);
  free(b);
  return t;
}

/* A pickle or JSON text given as bytes (may contain NULs). */
static cJSON *read_bytes(const void *b, size_t n, cs_read_error_t *err) {
  cs_snapshot_format_t fmt;
  return cs_read_snapshot(b, n, &fmt, err);
}

#define READ_LIT(lit, err) read_bytes((lit), sizeof(lit) - 1, (err))

/* Expects an error whose message contains `needle`. */
static void expect_error(const void *b, size_t n, const char *needle) {
  cs_read_error_t err;
  cJSON *t = read_bytes(b, n, &err);
  if (t != NULL) {
    cJSON_Delete(t);
    fail_msg("expected an error containing '%s', got a tree", needle);
  }
  if (strstr(err.message, needle) == NULL) fail_msg("error '%s' does not contain '%s'", err.message, needle);
}

#define EXPECT_ERROR_LIT(lit, needle) expect_error((lit), sizeof(lit) - 1, (needle))

/* --------------------------------------------------------------------------------------------- */

static void test_json_and_pickles_equal(void **state) {
  (void)state;
  cs_snapshot_format_t fmt;
  cJSON *ref = read_fixture("memviz_minimal_valid.json", &fmt);
  assert_int_equal(fmt, CS_SNAPSHOT_JSON);
  static const char *const pickles[] = {"memviz_minimal_valid.p2.pickle", "memviz_minimal_valid.p4.pickle",
                                        "memviz_minimal_valid.emit.pickle"};
  for (size_t i = 0; i < sizeof pickles / sizeof pickles[0]; i++) {
    cJSON *t = read_fixture(pickles[i], &fmt);
    assert_int_equal(fmt, CS_SNAPSHOT_PICKLE);
    if (!cJSON_Compare(ref, t, 1)) fail_msg("%s differs from the JSON reading", pickles[i]);
    /* Tuples became arrays: segment_pool_id is (0, 0) in the pickles. */
    const cJSON *pool = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "segments"), 0),
                                                         "segment_pool_id");
    assert_true(cJSON_IsArray(pool));
    assert_int_equal(cJSON_GetArraySize(pool), 2);
    cJSON_Delete(t);
  }
  cJSON_Delete(ref);
}

static void test_addresses_above_2p53_exact(void **state) {
  (void)state;
  cs_snapshot_format_t fmt;
  cJSON *j = read_fixture("memviz_silent_addresses_above_2p53.json", &fmt);
  cJSON *p = read_fixture("memviz_addresses_above_2p53.p4.pickle", &fmt);
  assert_true(cJSON_Compare(j, p, 1)); /* the same doubles */
  const cJSON *tree[2] = {j, p};
  for (int k = 0; k < 2; k++) {
    const cJSON *seg0 = cJSON_GetArrayItem(cJSON_GetObjectItem(tree[k], "segments"), 0);
    const cJSON *addr = cJSON_GetObjectItemCaseSensitive(seg0, "address");
    int64_t x = 0;
    assert_true(cs_reader_int_exact(addr, &x));
    assert_true(x == INT64_C(1153061142583574528));
    assert_string_equal(addr->valuestring, "1153061142583574528");
    /* small integers keep no digits */
    int64_t s = 0;
    assert_true(cs_reader_int_exact(cJSON_GetObjectItemCaseSensitive(seg0, "total_size"), &s));
    assert_true(s == 2097152);
    assert_null(cJSON_GetObjectItemCaseSensitive(seg0, "total_size")->valuestring);
  }
  cJSON_Delete(j);
  cJSON_Delete(p);
}

static void test_int_exact(void **state) {
  (void)state;
  cs_read_error_t err;
  cJSON *t = READ_LIT("[1152921504606846977, -1152921504606846977, 9007199254740993, 123, 1.5, "
                      "9223372036854775807, 99999999999999999999, 1e300, \"7\"]",
                      &err);
  assert_non_null(t);
  int64_t x;
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(t, 0), &x));
  assert_true(x == INT64_C(1152921504606846977));
  assert_true(cJSON_GetArrayItem(t, 0)->valuedouble == 1152921504606846976.0); /* what the viewer sees */
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(t, 1), &x));
  assert_true(x == -INT64_C(1152921504606846977));
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(t, 2), &x));
  assert_true(x == INT64_C(9007199254740993));
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(t, 3), &x));
  assert_true(x == 123);
  assert_false(cs_reader_int_exact(cJSON_GetArrayItem(t, 4), &x));
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(t, 5), &x));
  assert_true(x == INT64_MAX);
  assert_false(cs_reader_int_exact(cJSON_GetArrayItem(t, 6), &x)); /* beyond int64: the double only */
  assert_false(cs_reader_int_exact(cJSON_GetArrayItem(t, 7), &x));
  assert_false(cs_reader_int_exact(cJSON_GetArrayItem(t, 8), &x));
  assert_false(cs_reader_int_exact(NULL, &x));
  cJSON_Delete(t);

  /* LONG1 of 8 bytes: 2^60 + 1 and -(2^60 + 1) */
  static const uint8_t pk[] = {0x80, 0x02, ']', '(', 0x8a, 0x08, 0x01, 0, 0, 0, 0, 0, 0, 0x10,
                               0x8a, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xef, 0x8a, 0x02,
                               0x00, 0x80, 'e', '.'};
  t = read_bytes(pk, sizeof pk, &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(t, 0), &x));
  assert_true(x == INT64_C(1152921504606846977));
  assert_string_equal(cJSON_GetArrayItem(t, 0)->valuestring, "1152921504606846977");
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(t, 1), &x));
  assert_true(x == -INT64_C(1152921504606846977));
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(t, 2), &x));
  assert_true(x == -32768); /* LONG1 sign extension */
  cJSON_Delete(t);
}

/* Every proper prefix of a pickle fails (STOP is its last byte). */
static void truncate_pickle(const char *name) {
  size_t n;
  uint8_t *b = slurp(name, &n);
  for (size_t len = 0; len < n; len++) {
    uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees any overread */
    memcpy(copy, b, len);
    cs_read_error_t err;
    cJSON *t = read_bytes(copy, len, &err);
    if (t != NULL) fail_msg("%s cut to %zu bytes parsed", name, len);
    assert_true(err.message[0] != '\0');
    assert_true(err.offset <= len);
    free(copy);
  }
  free(b);
}

static void test_truncated_pickle(void **state) {
  (void)state;
  truncate_pickle("memviz_minimal_valid.p4.pickle"); /* FRAME, MEMOIZE, BINGET, LONG1, BINFLOAT */
}

/* A JSON prefix fails until it contains the whole value; trailing whitespace is optional. */
static void test_truncated_json(void **state) {
  (void)state;
  size_t n;
  uint8_t *b = slurp("memviz_minimal_keys.json", &n);
  size_t end = n;
  while (end > 0 && (b[end - 1] == ' ' || b[end - 1] == '\n' || b[end - 1] == '\r' || b[end - 1] == '\t')) end--;
  for (size_t len = 0; len <= n; len++) {
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, b, len);
    cs_read_error_t err;
    cJSON *t = read_bytes(copy, len, &err);
    if (len < end && t != NULL) fail_msg("JSON cut to %zu of %zu bytes parsed", len, n);
    if (len >= end && t == NULL) fail_msg("JSON of %zu bytes failed: %s", len, err.message);
    cJSON_Delete(t);
    free(copy);
  }
  free(b);
}

/* Byte mutations of a memoizing pickle: any outcome but a crash or a leak. */
static void test_mutated_pickle(void **state) {
  (void)state;
  size_t n;
  uint8_t *b = slurp("memviz_minimal_valid.p4.pickle", &n);
  static const uint8_t values[] = {0x00, 0xff, 'h', 'X', 'e', '(', 0x94, 0x8a};
  size_t parsed = 0;
  for (size_t pos = 2; pos < n; pos += 11) {
    uint8_t orig = b[pos];
    b[pos] = values[pos % sizeof values];
    cs_read_error_t err;
    cJSON *t = read_bytes(b, n, &err);
    if (t != NULL) parsed++;
    cJSON_Delete(t);
    b[pos] = orig;
  }
  free(b);
  print_message("mutated pickles that still parse: %zu\n", parsed);
}

static void test_hostile_pickles(void **state) {
  (void)state;
  /* lengths */
  EXPECT_ERROR_LIT("\x80\x02X\xff\xff\xff\xff", "truncated");
  EXPECT_ERROR_LIT("\x80\x02X\x10\x00\x00\x00" "abc.", "truncated");
  EXPECT_ERROR_LIT("\x80\x02\x8c\x10" "abc", "truncated");
  EXPECT_ERROR_LIT("\x80\x02\x95\x01\x00", "truncated");
  EXPECT_ERROR_LIT("\x80\x02J\x01\x02", "truncated");
  EXPECT_ERROR_LIT("\x80\x02K", "truncated");
  EXPECT_ERROR_LIT("\x80\x02}", "without STOP");
  EXPECT_ERROR_LIT("\x80", "truncated");
  /* integers */
  EXPECT_ERROR_LIT("\x80\x02\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09.", "integer too large");
  EXPECT_ERROR_LIT("\x80\x02\x8a\x08\x01\x02", "truncated");
  /* memo */
  EXPECT_ERROR_LIT("\x80\x02h\x05.", "never stored");
  EXPECT_ERROR_LIT("\x80\x02j\xff\xff\xff\xff.", "never stored");
  EXPECT_ERROR_LIT("\x80\x02]r\xff\xff\xff\xff.", "out of range");
  EXPECT_ERROR_LIT("\x80\x02\x94.", "needs 1 value");
  EXPECT_ERROR_LIT("\x80\x02N(q\x00.", "needs 1 value");
  /* opcodes the viewer does not read */
  EXPECT_ERROR_LIT("\x80\x02" "c__builtin__\neval\n.", "GLOBAL");
  EXPECT_ERROR_LIT("\x80\x02N0.", "POP");
  EXPECT_ERROR_LIT("\x80\x02N2.", "DUP");
  EXPECT_ERROR_LIT("\x80\x02\x8b\x01\x00\x00\x00\x01.", "LONG4");
  EXPECT_ERROR_LIT("\x80\x02" "C\x01x.", "SHORT_BINBYTES");
  EXPECT_ERROR_LIT("\x80\x02\xff.", "unknown pickle opcode 0xff");
  EXPECT_ERROR_LIT("\x80\x05}.", "protocol 5");
  EXPECT_ERROR_LIT("\x80\x01}.", "protocol 1");
  /* stack discipline */
  EXPECT_ERROR_LIT("\x80\x02" "a.", "APPEND needs 2");
  EXPECT_ERROR_LIT("\x80\x02}Ns.", "SETITEM needs 3");
  EXPECT_ERROR_LIT("\x80\x02N\x86.", "TUPLE2 needs 2");
  EXPECT_ERROR_LIT("\x80\x02]Ne.", "without a MARK");
  EXPECT_ERROR_LIT("\x80\x02(e.", "no container");
  EXPECT_ERROR_LIT("\x80\x02.", "STOP needs 1");
  EXPECT_ERROR_LIT("\x80\x02N(\x85.", "TUPLE1 needs 1");
  EXPECT_ERROR_LIT("\x80\x02N(.", "STOP needs 1");
  EXPECT_ERROR_LIT("\x80\x02](NNu.", "not a dict");
  EXPECT_ERROR_LIT("\x80\x02}Na.", "not a list");
  EXPECT_ERROR_LIT("\x80\x02(Nd.", "odd number");
  /* keys */
  EXPECT_ERROR_LIT("\x80\x02}(]Nu.", "dict key is a list");
  EXPECT_ERROR_LIT("\x80\x02}(NNu.", "dict key is None");
  EXPECT_ERROR_LIT("\x80\x02}(G\x3f\xf8\x00\x00\x00\x00\x00\x00Nu.", "dict key is a float");
}

static void test_deep_nesting(void **state) {
  (void)state;
  enum { N = 10000 };
  /* EMPTY_LIST x N, then APPEND x N-1: each list goes into the one below it. */
  uint8_t *b = malloc(2 * N + 3);
  size_t n = 0;
  b[n++] = 0x80;
  b[n++] = 2;
  for (int i = 0; i < N; i++) b[n++] = ']';
  for (int i = 0; i < N - 1; i++) b[n++] = 'a';
  b[n++] = '.';
  expect_error(b, n, "nested more than");
  /* MARK x N, then LIST x N */
  n = 2;
  for (int i = 0; i < N; i++) b[n++] = '(';
  for (int i = 0; i < N; i++) b[n++] = 'l';
  b[n++] = '.';
  expect_error(b, n, "nested more than");
  /* JSON */
  n = 0;
  for (int i = 0; i < N; i++) b[n++] = '[';
  for (int i = 0; i < N; i++) b[n++] = ']';
  expect_error(b, n, "nested more than");
  free(b);
  /* 1000 levels are fine in both */
  cs_read_error_t err;
  uint8_t *ok = malloc(2 * 1000 + 3);
  n = 0;
  ok[n++] = 0x80;
  ok[n++] = 2;
  for (int i = 0; i < 1000; i++) ok[n++] = ']';
  for (int i = 0; i < 999; i++) ok[n++] = 'a';
  ok[n++] = '.';
  cJSON *t = read_bytes(ok, n, &err);
  if (t == NULL) fail_msg("%s", err.message);
  cJSON_Delete(t);
  free(ok);
}

/* A small pickle whose memo references double the size at each step. */
static void test_memo_expansion(void **state) {
  (void)state;
  uint8_t b[512];
  size_t n = 0;
  b[n++] = 0x80;
  b[n++] = 2;
  b[n++] = 'K';
  b[n++] = 1;
  b[n++] = 'K';
  b[n++] = 1;
  b[n++] = 0x86;
  b[n++] = 'q';
  b[n++] = 0;
  for (int i = 1; i < 60; i++) {
    b[n++] = 'h';
    b[n++] = (uint8_t)(i - 1);
    b[n++] = 'h';
    b[n++] = (uint8_t)(i - 1);
    b[n++] = 0x86;
    b[n++] = 'q';
    b[n++] = (uint8_t)i;
  }
  b[n++] = '.';
  expect_error(b, n, "expands to more than");
}

static void test_pickle_semantics(void **state) {
  (void)state;
  cs_read_error_t err;
  /* integer keys become decimal strings; a repeated key keeps its first place and last value */
  cJSON *t = READ_LIT("\x80\x02}(K\x05N\x8c\x01" "aK\x01\x8c\x01" "bK\x02\x8c\x01" "aK\x03u.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_int_equal(cJSON_GetArraySize(t), 3);
  assert_string_equal(t->child->string, "5");
  assert_true(cJSON_IsNull(t->child));
  assert_string_equal(t->child->next->string, "a");
  assert_int_equal(t->child->next->valueint, 3);
  assert_string_equal(t->child->next->next->string, "b");
  cJSON_Delete(t);
  /* memo copies are independent values; memoized keys still work */
  t = READ_LIT("\x80\x04}\x94(\x8c\x04name\x94]\x94(K\x01K\x02" "e\x8c\x05other\x94h\x02h\x01h\x02u.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
  cJSON *other = cJSON_GetObjectItemCaseSensitive(t, "other");
  assert_true(cJSON_IsArray(name));
  assert_true(cJSON_IsArray(other));
  assert_ptr_not_equal(name, other);
  assert_true(cJSON_Compare(name, other, 1));
  cJSON_Delete(t);
  /* a protocol-1 pickle (no PROTO) loads like in the viewer, after the JSON attempt fails */
  cs_snapshot_format_t fmt = CS_SNAPSHOT_JSON;
  static const char p1[] = "}(X\x01\x00\x00\x00" "aK\x01u.";
  t = cs_read_snapshot(p1, sizeof p1 - 1, &fmt, &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_int_equal(fmt, CS_SNAPSHOT_PICKLE);
  assert_int_equal(cJSON_GetObjectItemCaseSensitive(t, "a")->valueint, 1);
  cJSON_Delete(t);
  /* invalid UTF-8 becomes U+FFFD, as the viewer's TextDecoder does */
  t = READ_LIT("\x80\x02\x8c\x03" "a\xff" "b.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_string_equal(t->valuestring, "a\xEF\xBF\xBD" "b");
  cJSON_Delete(t);
  /* a three-byte invalid subpart: as long as its U+FFFD, still replaced */
  t = READ_LIT("\x80\x02\x8c\x04" "\xF0\x90\x80" "x.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_string_equal(t->valuestring, "\xEF\xBF\xBD" "x");
  cJSON_Delete(t);
  /* bytes after STOP are ignored (the NUL padding of add_local_files) */
  t = READ_LIT("\x80\x02N.\x00\x00", &err);
  assert_non_null(t);
  cJSON_Delete(t);
}

static void test_json_strictness(void **state) {
  (void)state;
  static const struct {
    const char *text;
    size_t len;
  } bad[] = {
#define B(s) {s, sizeof(s) - 1}
      B(""),          B("   "),         B("{} x"),        B("{}\0"),        B("{}\0\0\0"),  B("NaN"),
      B("[NaN]"),     B("[Infinity]"), B("[-Infinity]"), B("[1,]"),        B("[01]"),      B("[1.]"),
      B("[.5]"),      B("[+1]"),       B("{'a':1}"),     B("\x01{}"),      B("{}\x01"),    B("[\"a\x01\"]"),
      B("[\"\\x\"]"), B("[\"\\u12\"]"), B("{\"a\" 1}"),  B("{\"a\":1,}"),  B("[1 2]"),     B("[tru]"),
      B("[\"abc"),    B("\xEF\xBB{}"), B("{\"a\":1}}"),  B("[1e]"),        B("[-]"),       B("\x0b{}"),
#undef B
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cs_read_error_t err;
    cJSON *t = read_bytes(bad[i].text, bad[i].len, &err);
    if (t != NULL) fail_msg("bad JSON #%zu parsed", i);
    assert_true(err.message[0] != '\0');
  }
  static const char *const good[] = {" {} \n", "\xEF\xBB\xBF{}", "[-0, 0.5e-3, 1E+2, true, false, null]",
                                     "{\"a\":\"\\u00e9\\n\\\"\"}", "\t[\r\n]\n"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    cs_read_error_t err;
    cJSON *t = read_bytes(good[i], strlen(good[i]), &err);
    if (t == NULL) fail_msg("good JSON #%zu failed: %s", i, err.message);
    cJSON_Delete(t);
  }
  /* duplicate keys: JSON.parse keeps the last value */
  cs_read_error_t err;
  cJSON *t = READ_LIT("{\"a\":1,\"b\":2,\"a\":3}", &err);
  assert_non_null(t);
  assert_int_equal(cJSON_GetArraySize(t), 2);
  assert_int_equal(cJSON_GetObjectItemCaseSensitive(t, "a")->valueint, 3);
  assert_string_equal(t->child->string, "a");
  cJSON_Delete(t);
}

static void test_fixture_errors(void **state) {
  (void)state;
  size_t n;
  uint8_t *b = slurp("memviz_bad_json_trailing_nul.json", &n);
  cs_read_error_t err;
  cs_snapshot_format_t fmt;
  assert_null(cs_read_snapshot(b, n, &fmt, &err));
  assert_int_equal(fmt, CS_SNAPSHOT_JSON);
  assert_int_equal(err.offset, n - 1);
  free(b);
  b = slurp("memviz_bad_pickle_protocol0.pickle", &n);
  assert_null(cs_read_snapshot(b, n, &fmt, &err));
  assert_non_null(strstr(err.message, "0x70"));
  free(b);
  char path[512];
  snprintf(path, sizeof path, "%s/fixtures/%s", CS_TEST_DATA_DIR, "no_such_file.json");
  assert_null(cs_read_snapshot_file(path, &fmt, &err));
  assert_non_null(strstr(err.message, "cannot open"));
  snprintf(path, sizeof path, "%s/fixtures/%s", CS_TEST_DATA_DIR, "memviz_minimal_valid.p4.pickle");
  cJSON *t = cs_read_snapshot_file(path, &fmt, &err);
  assert_non_null(t);
  assert_int_equal(fmt, CS_SNAPSHOT_PICKLE);
  cJSON_Delete(t);
}

/* Python's types survive reading: a float stays a float (0.0 is not 0), a tuple a tuple; what
 * `convert` needs to write the same objects back (cs_reader_is_float, cs_reader_is_tuple). */
static void test_number_and_tuple_types(void **state) {
  (void)state;
  cs_read_error_t err;
  cJSON *t = READ_LIT("{\"n\": [0.0, 0, 1e3, -0.0, 2, 1E-2, 12345678901234567890.5, 9007199254740993, 1.5e300, "
                      "-7], \"segment_pool_id\": [0, 0], \"s\": [{\"segment_pool_id\": [1, 2], \"l\": [1, 2]}], "
                      "\"dup\": 0, \"dup\": 1.0}",
                      &err);
  if (t == NULL) fail_msg("%s", err.message);
  static const bool is_float[] = {true, false, true, true, false, true, true, false, true, false};
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "n");
  assert_int_equal(cJSON_GetArraySize(n), 10);
  for (int i = 0; i < 10; i++) {
    if (cs_reader_is_float(cJSON_GetArrayItem(n, i)) != is_float[i]) fail_msg("n[%d]: float mark wrong", i);
  }
  int64_t x;
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(n, 7), &x)); /* an exact int beside the floats */
  assert_true(x == INT64_C(9007199254740993));
  assert_true(cs_reader_int_exact(cJSON_GetArrayItem(n, 0), &x)); /* the value of an integral float */
  assert_true(cs_reader_is_float(cJSON_GetObjectItemCaseSensitive(t, "dup"))); /* the last value's mark */
  assert_true(cs_reader_is_tuple(cJSON_GetObjectItemCaseSensitive(t, "segment_pool_id")));
  const cJSON *seg = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t, "s"), 0);
  assert_true(cs_reader_is_tuple(cJSON_GetObjectItemCaseSensitive(seg, "segment_pool_id")));
  assert_false(cs_reader_is_tuple(cJSON_GetObjectItemCaseSensitive(seg, "l")));
  assert_false(cs_reader_is_tuple(n));
  assert_false(cs_reader_is_float(NULL));
  assert_false(cs_reader_is_tuple(NULL));
  cJSON_Delete(t);

  /* [0.0, 0, <memo copy of 0.0>, (1, 2), <memo copy of (1, 2)>, (), [1, 2]] */
  static const uint8_t pk[] = {0x80, 0x02, ']', '(', 'G', 0, 0, 0, 0, 0, 0, 0, 0, 'q', 0, 'K', 0, 'h', 0,
                               'K', 1, 'K', 2, 0x86, 'q', 1, 'h', 1, ')', '(', 'K', 1, 'K', 2, 'l', 'e', '.'};
  t = read_bytes(pk, sizeof pk, &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_int_equal(cJSON_GetArraySize(t), 7);
  assert_true(cs_reader_is_float(cJSON_GetArrayItem(t, 0)));
  assert_false(cs_reader_is_float(cJSON_GetArrayItem(t, 1)));
  assert_true(cs_reader_is_float(cJSON_GetArrayItem(t, 2)));
  assert_true(cs_reader_is_tuple(cJSON_GetArrayItem(t, 3)));
  assert_true(cs_reader_is_tuple(cJSON_GetArrayItem(t, 4)));
  assert_true(cs_reader_is_tuple(cJSON_GetArrayItem(t, 5)));
  assert_false(cs_reader_is_tuple(cJSON_GetArrayItem(t, 6)));
  assert_false(cs_reader_is_tuple(t));
  cJSON_Delete(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_and_pickles_equal),
      cmocka_unit_test(test_addresses_above_2p53_exact),
      cmocka_unit_test(test_int_exact),
      cmocka_unit_test(test_truncated_pickle),
      cmocka_unit_test(test_truncated_json),
      cmocka_unit_test(test_mutated_pickle),
      cmocka_unit_test(test_hostile_pickles),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_memo_expansion),
      cmocka_unit_test(test_pickle_semantics),
      cmocka_unit_test(test_json_strictness),
      cmocka_unit_test(test_fixture_errors),
      cmocka_unit_test(test_number_and_tuple_types),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

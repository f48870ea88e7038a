/* SPDX-License-Identifier: Apache-2.0 */
/* reader/reader: JSON and pickle into the snapshot model (snapshot-format.md sections 3.2-3.4).
 *
 * The same snapshot read from JSON and from three pickles (Python protocol 2, protocol 4 with FRAME
 * and MEMOIZE, and the minimal opcode writer) must give equal models; every truncation of a small
 * file must be an error, never a crash; hostile pickles (huge lengths, deep nesting, bad memo
 * indices, unsupported opcodes, stack underflow) must be errors without leaks (ASan), and memo
 * references that multiply (a "billion laughs" pickle) stay shared, in memory bounded by the file. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/doc.h"
#include "reader/memo_refs.h"
#include "reader/reader.h"
#include "reader/unpickle.h"

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

static cs_doc_t *read_fixture(const char *name, cs_snapshot_format_t *fmt) {
  size_t n;
  uint8_t *b = slurp(name, &n);
  cs_read_error_t err;
  cs_doc_t *t = cs_read_snapshot(b, n, fmt, &err);
  if (t == NULL) fail_msg("%s: byte %zu: %s", name, err.offset, err.message);
  free(b);
  return t;
}

/* A pickle or JSON text given as bytes (may contain NULs). */
static cs_doc_t *read_bytes(const void *b, size_t n, cs_read_error_t *err) {
  cs_snapshot_format_t fmt;
  return cs_read_snapshot(b, n, &fmt, err);
}

/* Two values of two models hold the same thing: the same types (a float is not an integer, a
 * tuple not a list), numbers, strings, dict members in the same order. tuples: tell tuples from
 * lists. */
static bool same_value(const cs_doc_t *a, cs_val_t va, const cs_doc_t *b, cs_val_t vb, bool tuples) {
  if (cs_val_is_number(va) || cs_val_is_number(vb)) {
    if (!cs_val_is_number(va) || !cs_val_is_number(vb)) return false;
    if (cs_doc_is_float(a, va) != cs_doc_is_float(b, vb)) return false;
    int64_t xa, xb;
    bool ia = cs_doc_int(a, va, &xa), ib = cs_doc_int(b, vb, &xb);
    if (ia != ib) return false;
    if (ia) return xa == xb;
    double da = cs_doc_number(a, va), db = cs_doc_number(b, vb);
    return da == db || (isnan(da) && isnan(db));
  }
  if (cs_val_is_string(va) || cs_val_is_string(vb)) {
    size_t la, lb;
    const char *sa = cs_doc_str(a, va, &la), *sb = cs_doc_str(b, vb, &lb);
    return sa != NULL && sb != NULL && la == lb && memcmp(sa, sb, la) == 0;
  }
  if (!cs_val_is_container(va) || !cs_val_is_container(vb)) return va == vb; /* null, booleans */
  if (cs_val_is_dict(va) != cs_val_is_dict(vb)) return false;
  if (tuples && cs_val_is_tuple(va) != cs_val_is_tuple(vb)) return false;
  size_t n = cs_doc_len(a, va);
  if (n != cs_doc_len(b, vb)) return false;
  for (size_t i = 0; i < n; i++) {
    if (cs_val_is_dict(va) && strcmp(cs_doc_key_at(a, va, i), cs_doc_key_at(b, vb, i)) != 0) return false;
    if (!same_value(a, cs_doc_at(a, va, i), b, cs_doc_at(b, vb, i), tuples)) return false;
  }
  return true;
}

static cs_val_t get_path(const cs_doc_t *doc, cs_val_t v, const char *key, size_t index) {
  return cs_doc_at(doc, cs_doc_get(doc, v, key), index);
}

#define READ_LIT(lit, err) read_bytes((lit), sizeof(lit) - 1, (err))

/* Expects an error whose message contains `needle`. */
static void expect_error(const void *b, size_t n, const char *needle) {
  cs_read_error_t err;
  cs_doc_t *t = read_bytes(b, n, &err);
  if (t != NULL) {
    cs_doc_free(t);
    fail_msg("expected an error containing '%s', got a model", needle);
  }
  if (strstr(err.message, needle) == NULL) fail_msg("error '%s' does not contain '%s'", err.message, needle);
  assert_true(err.offset <= n);
}

#define EXPECT_ERROR_LIT(lit, needle) expect_error((lit), sizeof(lit) - 1, (needle))

/* --------------------------------------------------------------------------------------------- */

static void test_json_and_pickles_equal(void **state) {
  (void)state;
  cs_snapshot_format_t fmt;
  cs_doc_t *ref = read_fixture("memviz_minimal_valid.json", &fmt);
  assert_int_equal(fmt, CS_SNAPSHOT_JSON);
  static const char *const pickles[] = {"memviz_minimal_valid.p2.pickle", "memviz_minimal_valid.p4.pickle",
                                        "memviz_minimal_valid.emit.pickle"};
  for (size_t i = 0; i < sizeof pickles / sizeof pickles[0]; i++) {
    cs_doc_t *t = read_fixture(pickles[i], &fmt);
    assert_int_equal(fmt, CS_SNAPSHOT_PICKLE);
    /* the same values and types; JSON's one tuple (segment_pool_id) is a tuple too */
    if (!same_value(ref, cs_doc_root(ref), t, cs_doc_root(t), true))
      fail_msg("%s differs from the JSON reading", pickles[i]);
    /* Tuples stay tuples: segment_pool_id is (0, 0) in the pickles. */
    cs_val_t pool = cs_doc_get_key(t, get_path(t, cs_doc_root(t), "segments", 0), CS_KEY_SEGMENT_POOL_ID);
    assert_true(cs_val_is_tuple(pool));
    assert_true(cs_val_is_array(pool));
    assert_int_equal(cs_doc_len(t, pool), 2);
    cs_doc_free(t);
  }
  cs_doc_free(ref);
}

static void test_addresses_above_2p53_exact(void **state) {
  (void)state;
  cs_snapshot_format_t fmt;
  cs_doc_t *j = read_fixture("memviz_silent_addresses_above_2p53.json", &fmt);
  cs_doc_t *p = read_fixture("memviz_addresses_above_2p53.p4.pickle", &fmt);
  assert_true(same_value(j, cs_doc_root(j), p, cs_doc_root(p), false)); /* the same int64s */
  const cs_doc_t *doc[2] = {j, p};
  for (int k = 0; k < 2; k++) {
    cs_val_t seg0 = get_path(doc[k], cs_doc_root(doc[k]), "segments", 0);
    cs_val_t addr = cs_doc_get_key(doc[k], seg0, CS_KEY_ADDRESS);
    int64_t x = 0;
    assert_true(cs_doc_int(doc[k], addr, &x));
    assert_true(x == INT64_C(1153061142583574528));
    assert_false(cs_doc_is_float(doc[k], addr));
    assert_true(cs_doc_number(doc[k], addr) == 1153061142583574528.0); /* what the viewer sees */
    int64_t s = 0;
    assert_true(cs_doc_int(doc[k], cs_doc_get_key(doc[k], seg0, CS_KEY_TOTAL_SIZE), &s));
    assert_true(s == 2097152);
  }
  cs_doc_free(j);
  cs_doc_free(p);
}

static void test_int_exact(void **state) {
  (void)state;
  cs_read_error_t err;
  cs_doc_t *t = READ_LIT("[1152921504606846977, -1152921504606846977, 9007199254740993, 123, 1.5, "
                         "9223372036854775807, 99999999999999999999, 1e300, \"7\", -9223372036854775808]",
                         &err);
  assert_non_null(t);
  cs_val_t a = cs_doc_root(t);
  assert_int_equal(cs_doc_len(t, a), 10);
  int64_t x;
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 0), &x));
  assert_true(x == INT64_C(1152921504606846977));
  assert_true(cs_doc_number(t, cs_doc_at(t, a, 0)) == 1152921504606846976.0); /* what the viewer sees */
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 1), &x));
  assert_true(x == -INT64_C(1152921504606846977));
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 2), &x));
  assert_true(x == INT64_C(9007199254740993)); /* 2^53 + 1: not a double */
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 3), &x));
  assert_true(x == 123);
  assert_false(cs_doc_int(t, cs_doc_at(t, a, 4), &x));
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 5), &x));
  assert_true(x == INT64_MAX);
  /* beyond int64: the double only, still "written as an integer" */
  assert_false(cs_doc_int(t, cs_doc_at(t, a, 6), &x));
  assert_false(cs_doc_is_float(t, cs_doc_at(t, a, 6)));
  assert_true(cs_doc_number(t, cs_doc_at(t, a, 6)) == 1e20);
  assert_false(cs_doc_int(t, cs_doc_at(t, a, 7), &x));
  assert_false(cs_doc_int(t, cs_doc_at(t, a, 8), &x));
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 9), &x));
  assert_true(x == INT64_MIN);
  assert_false(cs_doc_int(t, CS_VAL_ABSENT, &x));
  assert_false(cs_doc_int(t, CS_VAL_NULL, &x));
  /* the same integer twice is the same value */
  cs_doc_free(t);
  t = READ_LIT("[9007199254740993, 9007199254740993, 9007199254740992]", &err);
  assert_non_null(t);
  a = cs_doc_root(t);
  assert_true(cs_doc_at(t, a, 0) == cs_doc_at(t, a, 1));
  assert_true(cs_doc_at(t, a, 0) != cs_doc_at(t, a, 2));
  cs_doc_free(t);

  /* LONG1 of 8 bytes: 2^60 + 1 and -(2^60 + 1) */
  static const uint8_t pk[] = {0x80, 0x02, ']', '(', 0x8a, 0x08, 0x01, 0, 0, 0, 0, 0, 0, 0x10,
                               0x8a, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xef, 0x8a, 0x02,
                               0x00, 0x80, 'e', '.'};
  t = read_bytes(pk, sizeof pk, &err);
  if (t == NULL) fail_msg("%s", err.message);
  a = cs_doc_root(t);
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 0), &x));
  assert_true(x == INT64_C(1152921504606846977));
  assert_false(cs_doc_is_float(t, cs_doc_at(t, a, 0)));
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 1), &x));
  assert_true(x == -INT64_C(1152921504606846977));
  assert_true(cs_doc_int(t, cs_doc_at(t, a, 2), &x));
  assert_true(x == -32768); /* LONG1 sign extension */
  cs_doc_free(t);
}

/* Every proper prefix of a pickle fails (STOP is its last byte). */
static void truncate_pickle(const char *name) {
  size_t n;
  uint8_t *b = slurp(name, &n);
  for (size_t len = 0; len < n; len++) {
    uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees any overread */
    memcpy(copy, b, len);
    cs_read_error_t err;
    cs_doc_t *t = read_bytes(copy, len, &err);
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
    cs_doc_t *t = read_bytes(copy, len, &err);
    if (len < end && t != NULL) fail_msg("JSON cut to %zu of %zu bytes parsed", len, n);
    if (len >= end && t == NULL) fail_msg("JSON of %zu bytes failed: %s", len, err.message);
    if (t == NULL) assert_true(err.offset <= len);
    cs_doc_free(t);
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
    cs_doc_t *t = read_bytes(b, n, &err);
    if (t != NULL) parsed++;
    cs_doc_free(t);
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

/* `levels` lists nested in a pickle: EMPTY_LIST x levels, then APPEND x levels-1 (each list goes
 * into the one below it), or MARK x levels then LIST x levels. */
static uint8_t *nested_pickle(size_t levels, bool marks, size_t *len) {
  uint8_t *b = malloc(2 * levels + 3);
  assert_non_null(b);
  size_t n = 0;
  b[n++] = 0x80;
  b[n++] = 2;
  for (size_t i = 0; i < levels; i++) b[n++] = marks ? '(' : ']';
  for (size_t i = 0; i < (marks ? levels : levels - 1); i++) b[n++] = marks ? 'l' : 'a';
  b[n++] = '.';
  *len = n;
  return b;
}

static uint8_t *nested_json(size_t levels, size_t *len) {
  uint8_t *b = malloc(2 * levels);
  assert_non_null(b);
  memset(b, '[', levels);
  memset(b + levels, ']', levels);
  *len = 2 * levels;
  return b;
}

static void expect_depth(const uint8_t *b, size_t n, bool ok, unsigned depth) {
  cs_read_error_t err;
  cs_doc_t *t = read_bytes(b, n, &err);
  if (ok) {
    if (t == NULL) fail_msg("%u levels refused: %s", depth, err.message);
    assert_int_equal(cs_doc_depth(t, cs_doc_root(t)), depth);
    cs_doc_free(t);
  } else {
    if (t != NULL) fail_msg("%u levels read", depth);
    if (strstr(err.message, "nested more than") == NULL) fail_msg("%u levels: '%s'", depth, err.message);
    assert_true(err.offset <= n);
  }
}

/* Containers nest at most CS_DOC_MAX_DEPTH (1000) deep, in JSON and in a pickle alike. */
static void test_deep_nesting(void **state) {
  (void)state;
  static const size_t levels[] = {1000, 1001, 10000};
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
    bool ok = levels[i] <= CS_DOC_MAX_DEPTH;
    size_t n;
    uint8_t *b = nested_pickle(levels[i], false, &n);
    expect_depth(b, n, ok, (unsigned)levels[i]);
    free(b);
    b = nested_pickle(levels[i], true, &n);
    expect_depth(b, n, ok, (unsigned)levels[i]);
    free(b);
    b = nested_json(levels[i], &n);
    expect_depth(b, n, ok, (unsigned)levels[i]);
    free(b);
  }
  /* 1001 levels in a dict: {"a": {"a": ... [] }} */
  enum { D = 1001 };
  char *j = malloc(D * 8 + 8);
  size_t n = 0;
  for (int i = 0; i < D - 1; i++) n += (size_t)sprintf(j + n, "{\"a\":");
  n += (size_t)sprintf(j + n, "[]");
  for (int i = 0; i < D - 1; i++) j[n++] = '}';
  expect_depth((const uint8_t *)j, n, false, D);
  free(j);
}

/* The memo keeps the indices some GET names (reader/memo_refs.h), and reads as if it kept them all:
 * explicit indices ahead of the count (within the slack), an index put twice, a GET before its put,
 * GETs after STOP and past the slack. */
static void test_memo_refs(void **state) {
  (void)state;
  cs_memo_refs_t refs;
  static const uint8_t p[] = "\x80\x04]\x94]\x94]\x94h\x01h\x01j\x05\x00\x00\x00" "(l.h\x02";
  assert_true(cs_memo_refs_scan(&refs, p, sizeof p - 1, 1024));
  assert_int_equal(refs.count, 2); /* 1 and 5; 2 is named after STOP only */
  assert_true(cs_memo_refs_slot(&refs, 1) == 0);
  assert_true(cs_memo_refs_slot(&refs, 5) == 1);
  assert_true(cs_memo_refs_slot(&refs, 0) == SIZE_MAX);
  assert_true(cs_memo_refs_slot(&refs, 2) == SIZE_MAX);
  assert_true(cs_memo_refs_slot(&refs, 1u << 20) == SIZE_MAX);
  cs_memo_refs_free(&refs);
  /* a GET past every put plus the slack is never marked: the unpickler says it was never stored */
  static const uint8_t far[] = "\x80\x04j\x01\x04\x00\x00.";
  assert_true(cs_memo_refs_scan(&refs, far, sizeof far - 1, 1024));
  assert_int_equal(refs.count, 0);
  cs_memo_refs_free(&refs);

  cs_read_error_t err;
  /* explicit indices 7 and 3 (7 ahead of the one put before it), 3 put twice: the last value */
  cs_doc_t *t = READ_LIT("\x80\x02(K\x01q\x07K\x02q\x03K\x04q\x03h\x07h\x03K\x09q\x09l.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  cs_val_t l = cs_doc_root(t);
  assert_int_equal(cs_doc_len(t, l), 6);
  int64_t want[] = {1, 2, 4, 1, 4, 9}, x;
  for (size_t i = 0; i < 6; i++) {
    assert_true(cs_doc_int(t, cs_doc_at(t, l, i), &x));
    assert_true(x == want[i]);
  }
  cs_doc_free(t);
  /* a GET before its put, and one of an index never put, are errors */
  EXPECT_ERROR_LIT("\x80\x02(h\x00K\x01q\x00l.", "memo index 0 was never stored");
  EXPECT_ERROR_LIT("\x80\x02(K\x01q\x00h\x01l.", "memo index 1 was never stored");
  /* a container memoized while open and read back once closed, beside many memoized and never read */
  t = READ_LIT("\x80\x04(]\x94K\x01" "a]\x94]\x94h\x00l.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  l = cs_doc_root(t);
  assert_int_equal(cs_doc_len(t, l), 4);
  assert_true(cs_doc_at(t, l, 0) == cs_doc_at(t, l, 3));
  assert_int_equal(cs_doc_len(t, cs_doc_at(t, l, 3)), 1);
  cs_doc_free(t);
}

/* A small pickle whose memo references double the size at each step: 2^60 values once expanded.
 * They stay shared: the model holds 60 tuples of two words. */
static void test_memo_doubling(void **state) {
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
  cs_read_error_t err;
  cs_unpickle_stats_t st;
  cs_doc_t *t = cs_read_snapshot_ex(b, n, NULL, &err, &st);
  if (t == NULL) fail_msg("%s", err.message);
  assert_int_equal(st.memo_copies, 2 * 59);
  cs_val_t v = cs_doc_root(t);
  assert_int_equal(cs_doc_depth(t, v), 60);
  for (int i = 0; i < 59; i++) {
    assert_true(cs_val_is_tuple(v));
    assert_int_equal(cs_doc_len(t, v), 2);
    assert_true(cs_doc_at(t, v, 0) == cs_doc_at(t, v, 1)); /* one value, referred to twice */
    v = cs_doc_at(t, v, 0);
  }
  assert_true(cs_doc_at(t, v, 0) == cs_doc_at(t, v, 1)); /* (1, 1) */
  assert_true(cs_doc_bytes(t) < 64 * 1024);
  cs_doc_free(t);
}

/* About 1 MB of BINGETs of one list of 10,000 items (5e9 items once expanded, what the old tree
 * refused): read in memory bounded by the file's size, every reference the same value. */
static void test_memo_big_list(void **state) {
  (void)state;
  enum { ITEMS = 10000, REFS = 500000 };
  size_t cap = 2 * ITEMS + 2 * REFS + 2 * (ITEMS + REFS) / 1000 + 64, n = 0;
  uint8_t *b = malloc(cap);
  assert_non_null(b);
  b[n++] = 0x80;
  b[n++] = 2;
  b[n++] = ']'; /* the root list */
  b[n++] = '(';
  b[n++] = ']'; /* the big list, memo 0 */
  b[n++] = 'q';
  b[n++] = 0;
  for (size_t i = 0; i < ITEMS; i++) {
    if (i % 1000 == 0) b[n++] = '(';
    b[n++] = 'K';
    b[n++] = (uint8_t)(i % 251);
    if (i % 1000 == 999) b[n++] = 'e';
  }
  for (size_t i = 1; i < REFS; i++) { /* the root's first batch holds the big list itself */
    if (i % 1000 == 0) b[n++] = '(';
    b[n++] = 'h';
    b[n++] = 0;
    if (i % 1000 == 999) b[n++] = 'e';
  }
  if (REFS % 1000 != 0) b[n++] = 'e';
  b[n++] = '.';
  assert_true(n <= cap);
  cs_read_error_t err;
  cs_unpickle_stats_t st;
  cs_doc_t *t = cs_read_snapshot_ex(b, n, NULL, &err, &st);
  if (t == NULL) fail_msg("%s", err.message);
  assert_int_equal(st.memo_copies, REFS - 1);
  cs_val_t root = cs_doc_root(t);
  assert_int_equal(cs_doc_len(t, root), REFS);
  const cs_val_t *items = cs_doc_items(t, root);
  assert_int_equal(cs_doc_len(t, items[0]), ITEMS);
  for (size_t i = 1; i < REFS; i++)
    if (items[i] != items[0]) fail_msg("reference %zu is another value", i);
  print_message("%zu bytes of pickle: a model of %zu bytes\n", n, cs_doc_bytes(t));
  assert_true(cs_doc_bytes(t) < 16 * n);
  cs_doc_free(t);
  free(b);
}

static void test_pickle_semantics(void **state) {
  (void)state;
  cs_read_error_t err;
  /* integer keys become decimal strings; a repeated key keeps its first place and last value */
  cs_doc_t *t = READ_LIT("\x80\x02}(K\x05N\x8c\x01" "aK\x01\x8c\x01" "bK\x02\x8c\x01" "aK\x03u.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  cs_val_t d = cs_doc_root(t);
  assert_true(cs_val_is_dict(d));
  assert_int_equal(cs_doc_len(t, d), 3);
  assert_string_equal(cs_doc_key_at(t, d, 0), "5");
  assert_true(cs_val_is_null(cs_doc_at(t, d, 0)));
  assert_string_equal(cs_doc_key_at(t, d, 1), "a");
  int64_t x;
  assert_true(cs_doc_int(t, cs_doc_at(t, d, 1), &x));
  assert_true(x == 3);
  assert_string_equal(cs_doc_key_at(t, d, 2), "b");
  assert_true(cs_doc_get(t, d, "a") == cs_doc_at(t, d, 1));
  assert_true(cs_val_absent(cs_doc_get(t, d, "c")));
  cs_doc_free(t);
  /* memo references stay shared: the same value twice; memoized keys still work */
  t = READ_LIT("\x80\x04}\x94(\x8c\x04name\x94]\x94(K\x01K\x02" "e\x8c\x05other\x94h\x02h\x01h\x02u.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  d = cs_doc_root(t);
  assert_int_equal(cs_doc_len(t, d), 2); /* name, other, then name again (its last value) */
  cs_val_t name = cs_doc_get(t, d, "name");
  cs_val_t other = cs_doc_get(t, d, "other");
  assert_true(cs_val_is_array(name));
  assert_true(cs_val_is_array(other));
  assert_true(name == other);
  assert_int_equal(cs_doc_len(t, name), 2);
  cs_doc_free(t);
  /* a protocol-1 pickle (no PROTO) loads like in the viewer, after the JSON attempt fails */
  cs_snapshot_format_t fmt = CS_SNAPSHOT_JSON;
  static const char p1[] = "}(X\x01\x00\x00\x00" "aK\x01u.";
  t = cs_read_snapshot(p1, sizeof p1 - 1, &fmt, &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_int_equal(fmt, CS_SNAPSHOT_PICKLE);
  assert_true(cs_doc_int(t, cs_doc_get(t, cs_doc_root(t), "a"), &x));
  assert_true(x == 1);
  cs_doc_free(t);
  /* invalid UTF-8 becomes U+FFFD, as the viewer's TextDecoder does */
  t = READ_LIT("\x80\x02\x8c\x03" "a\xff" "b.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_string_equal(cs_doc_str(t, cs_doc_root(t), NULL), "a\xEF\xBF\xBD" "b");
  cs_doc_free(t);
  /* a three-byte invalid subpart: as long as its U+FFFD, still replaced */
  t = READ_LIT("\x80\x02\x8c\x04" "\xF0\x90\x80" "x.", &err);
  if (t == NULL) fail_msg("%s", err.message);
  assert_string_equal(cs_doc_str(t, cs_doc_root(t), NULL), "\xEF\xBF\xBD" "x");
  cs_doc_free(t);
  /* strings read again (the unpickler's cache of strings read before): the same bytes give the
   * same string; bytes that share a cache slot (length, first and last 8 bytes) stay apart; an
   * invalid string repeated is repaired each time, and its repair written out is the same string */
  t = READ_LIT("\x80\x02(\x8c\x11" "abcdefghZ12345678" "\x8c\x11" "abcdefghY12345678" "\x8c\x11" "abcdefghZ12345678"
               "\x8c\x02" "a\xff" "\x8c\x02" "a\xff" "\x8c\x04" "a\xEF\xBF\xBD" "\x8c\x00" "\x8c\x00" "l.",
               &err);
  if (t == NULL) fail_msg("%s", err.message);
  cs_val_t l = cs_doc_root(t);
  assert_int_equal(cs_doc_len(t, l), 8);
  assert_string_equal(cs_doc_str(t, cs_doc_at(t, l, 0), NULL), "abcdefghZ12345678");
  assert_string_equal(cs_doc_str(t, cs_doc_at(t, l, 1), NULL), "abcdefghY12345678");
  assert_true(cs_doc_at(t, l, 0) == cs_doc_at(t, l, 2));
  assert_true(cs_doc_at(t, l, 0) != cs_doc_at(t, l, 1));
  assert_string_equal(cs_doc_str(t, cs_doc_at(t, l, 3), NULL), "a\xEF\xBF\xBD");
  assert_true(cs_doc_at(t, l, 3) == cs_doc_at(t, l, 4));
  assert_true(cs_doc_at(t, l, 3) == cs_doc_at(t, l, 5));
  assert_string_equal(cs_doc_str(t, cs_doc_at(t, l, 6), NULL), "");
  assert_true(cs_doc_at(t, l, 6) == cs_doc_at(t, l, 7));
  cs_doc_free(t);
  /* bytes after STOP are ignored (the NUL padding of add_local_files) */
  t = READ_LIT("\x80\x02N.\x00\x00", &err);
  assert_non_null(t);
  assert_true(cs_val_is_null(cs_doc_root(t)));
  cs_doc_free(t);
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
      B("[\"abc"),    B("\xEF\xBB{}"), B("{\"a\":1}}"),  B("[1e]"),        B("[-]"),
#undef B
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cs_read_error_t err;
    cs_doc_t *t = read_bytes(bad[i].text, bad[i].len, &err);
    if (t != NULL) fail_msg("bad JSON #%zu parsed", i);
    assert_true(err.message[0] != '\0');
    assert_true(err.offset <= bad[i].len);
  }
  /* where: the byte that breaks it */
  static const struct {
    const char *text;
    size_t len, offset;
  } at[] = {
#define A(s, o) {s, sizeof(s) - 1, o}
      A("{} x", 3), A("{}\0", 2), A("[1, NaN]", 4), A("{\"a\": 01}", 6), A("[\"ab\x01\"]", 4),
#undef A
  };
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    cs_read_error_t err;
    cs_doc_t *t = read_bytes(at[i].text, at[i].len, &err);
    if (t != NULL) fail_msg("bad JSON '%s' parsed", at[i].text);
    if (err.offset != at[i].offset)
      fail_msg("bad JSON #%zu: error at byte %zu, expected %zu (%s)", i, err.offset, at[i].offset, err.message);
  }
  static const char *const good[] = {" {} \n", "\xEF\xBB\xBF{}", "[-0, 0.5e-3, 1E+2, true, false, null]",
                                     "{\"a\":\"\\u00e9\\n\\\"\"}", "\t[\r\n]\n"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    cs_read_error_t err;
    cs_doc_t *t = read_bytes(good[i], strlen(good[i]), &err);
    if (t == NULL) fail_msg("good JSON #%zu failed: %s", i, err.message);
    cs_doc_free(t);
  }
  /* escapes decoded */
  cs_read_error_t err;
  cs_doc_t *t = READ_LIT("{\"a\":\"\\u00e9\\n\\\"\"}", &err);
  assert_non_null(t);
  assert_string_equal(cs_doc_str(t, cs_doc_get(t, cs_doc_root(t), "a"), NULL), "\xC3\xA9\n\"");
  cs_doc_free(t);
  /* duplicate keys: JSON.parse keeps the first position and the last value */
  t = READ_LIT("{\"a\":1,\"b\":2,\"a\":3}", &err);
  assert_non_null(t);
  cs_val_t d = cs_doc_root(t);
  assert_int_equal(cs_doc_len(t, d), 2);
  assert_string_equal(cs_doc_key_at(t, d, 0), "a");
  assert_string_equal(cs_doc_key_at(t, d, 1), "b");
  int64_t x;
  assert_true(cs_doc_int(t, cs_doc_get(t, d, "a"), &x));
  assert_true(x == 3);
  cs_doc_free(t);
}

/* JSON whitespace is space, tab, CR and LF only: JSON.parse refuses a vertical tab or a form feed
 * anywhere (the viewer then fails to load the file). */
static void test_json_whitespace(void **state) {
  (void)state;
  static const struct {
    const char *text;
    size_t len, offset;
  } bad[] = {
#define B(s, o) {s, sizeof(s) - 1, o}
      B("\x0b{}", 0), B("\x0c{}", 0), B("{}\x0b", 2), B("{}\x0c", 2), B("[1,\x0c" "2]", 3), B("{\"a\":\x0b" "1}", 5),
#undef B
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cs_read_error_t err;
    cs_doc_t *t = read_bytes(bad[i].text, bad[i].len, &err);
    if (t != NULL) {
      cs_doc_free(t);
      fail_msg("JSON #%zu with a vertical tab or form feed parsed", i);
    }
    assert_int_equal(err.offset, bad[i].offset);
  }
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
  assert_null(cs_read_snapshot_file(path, &fmt, NULL, &err));
  assert_int_equal(err.io_errno, ENOENT);
  assert_true(err.message[0] != '\0');
  /* from a file, streamed (JSON) or not (pickle): the same models and sizes as from the bytes */
  static const char *const files[] = {"memviz_minimal_valid.p4.pickle", "memviz_minimal_valid.json",
                                      "memviz_silent_addresses_above_2p53.json"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/fixtures/%s", CS_TEST_DATA_DIR, files[i]);
    size_t bytes = 0;
    cs_doc_t *t = cs_read_snapshot_file(path, &fmt, &bytes, &err);
    if (t == NULL) fail_msg("%s: %s", files[i], err.message);
    assert_int_equal(fmt, strstr(files[i], "pickle") ? CS_SNAPSHOT_PICKLE : CS_SNAPSHOT_JSON);
    cs_snapshot_format_t fmt2;
    cs_doc_t *m = read_fixture(files[i], &fmt2);
    b = slurp(files[i], &n);
    free(b);
    assert_int_equal(bytes, n);
    assert_true(same_value(t, cs_doc_root(t), m, cs_doc_root(m), true));
    cs_doc_free(m);
    cs_doc_free(t);
  }
  /* a file that is not JSON gets the unpickler too, and its error */
  snprintf(path, sizeof path, "%s/fixtures/%s", CS_TEST_DATA_DIR, "memviz_bad_json_trailing_nul.json");
  assert_null(cs_read_snapshot_file(path, &fmt, NULL, &err));
  assert_int_equal(err.io_errno, 0);
  b = slurp("memviz_bad_json_trailing_nul.json", &n);
  free(b);
  assert_int_equal(err.offset, n - 1);
}

/* Python's types survive reading: a float stays a float (2.0 is not 2), a tuple a tuple; what
 * `convert` needs to write the same objects back (cs_doc_is_float, cs_val_is_tuple). */
static void test_number_and_tuple_types(void **state) {
  (void)state;
  cs_read_error_t err;
  cs_doc_t *t = READ_LIT("{\"n\": [0.0, 0, 1e3, -0.0, 2, 1E-2, 12345678901234567890.5, 9007199254740993, 1.5e300, "
                         "-7, 2.0], \"segment_pool_id\": [0, 0], \"s\": [{\"segment_pool_id\": [1, 2], \"l\": [1, 2]}], "
                         "\"dup\": 0, \"dup\": 1.0}",
                         &err);
  if (t == NULL) fail_msg("%s", err.message);
  static const bool is_float[] = {true, false, true, true, false, true, true, false, true, false, true};
  cs_val_t root = cs_doc_root(t);
  cs_val_t n = cs_doc_get(t, root, "n");
  assert_int_equal(cs_doc_len(t, n), 11);
  for (size_t i = 0; i < 11; i++) {
    if (cs_doc_is_float(t, cs_doc_at(t, n, i)) != is_float[i]) fail_msg("n[%zu]: float mark wrong", i);
  }
  int64_t x;
  assert_true(cs_doc_int(t, cs_doc_at(t, n, 7), &x)); /* an exact int beside the floats */
  assert_true(x == INT64_C(9007199254740993));
  assert_true(cs_doc_int(t, cs_doc_at(t, n, 0), &x)); /* the value of an integral float */
  assert_true(cs_doc_int(t, cs_doc_at(t, n, 10), &x));
  assert_true(x == 2);
  assert_true(cs_doc_at(t, n, 10) != cs_doc_at(t, n, 4)); /* 2.0 and 2: two values */
  assert_true(signbit(cs_doc_number(t, cs_doc_at(t, n, 3))));    /* -0.0 */
  assert_true(cs_doc_is_float(t, cs_doc_get(t, root, "dup")));  /* the last value's type */
  assert_true(cs_val_is_tuple(cs_doc_get_key(t, root, CS_KEY_SEGMENT_POOL_ID)));
  cs_val_t seg = cs_doc_at(t, cs_doc_get(t, root, "s"), 0);
  assert_true(cs_val_is_tuple(cs_doc_get_key(t, seg, CS_KEY_SEGMENT_POOL_ID)));
  assert_false(cs_val_is_tuple(cs_doc_get(t, seg, "l")));
  assert_true(cs_val_is_array(cs_doc_get(t, seg, "l")));
  assert_false(cs_val_is_tuple(n));
  assert_false(cs_doc_is_float(t, CS_VAL_ABSENT));
  assert_false(cs_val_is_tuple(CS_VAL_ABSENT));
  cs_doc_free(t);

  /* [0.0, 0, <memo ref to 0.0>, (1, 2), <memo ref to (1, 2)>, (), [1, 2]] */
  static const uint8_t pk[] = {0x80, 0x02, ']', '(', 'G', 0, 0, 0, 0, 0, 0, 0, 0, 'q', 0, 'K', 0, 'h', 0,
                               'K', 1, 'K', 2, 0x86, 'q', 1, 'h', 1, ')', '(', 'K', 1, 'K', 2, 'l', 'e', '.'};
  t = read_bytes(pk, sizeof pk, &err);
  if (t == NULL) fail_msg("%s", err.message);
  root = cs_doc_root(t);
  assert_int_equal(cs_doc_len(t, root), 7);
  const cs_val_t *it = cs_doc_items(t, root);
  assert_true(cs_doc_is_float(t, it[0]));
  assert_false(cs_doc_is_float(t, it[1]));
  assert_true(cs_doc_is_float(t, it[2]));
  assert_true(it[2] == it[0]);
  assert_true(cs_val_is_tuple(it[3]));
  assert_true(cs_val_is_tuple(it[4]));
  assert_true(it[4] == it[3]);
  assert_true(cs_val_is_tuple(it[5]));
  assert_int_equal(cs_doc_len(t, it[5]), 0);
  assert_false(cs_val_is_tuple(it[6]));
  assert_true(cs_val_is_array(it[6]));
  assert_false(cs_val_is_tuple(root));
  cs_doc_free(t);
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
      cmocka_unit_test(test_memo_refs),
      cmocka_unit_test(test_memo_doubling),
      cmocka_unit_test(test_memo_big_list),
      cmocka_unit_test(test_pickle_semantics),
      cmocka_unit_test(test_json_strictness),
      cmocka_unit_test(test_json_whitespace),
      cmocka_unit_test(test_fixture_errors),
      cmocka_unit_test(test_number_and_tuple_types),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

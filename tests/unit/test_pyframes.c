/* SPDX-License-Identifier: Apache-2.0 */
/* Python frame lines: the CPython 3.11+ location table parser (and 3.10's and 3.9's tables, below)
 * (snapshot/pyframe_names.h) against the lines CPython itself gives. The table and the expected
 * lines were printed by Debian's Python 3.11.2 for this function (first line 1) with co_linetable and co_lines():
 *
 *   def f(a, b):
 *       x = a + b
 *
 *       if x > 3:
 *           y = [i * 2
 *                for i in range(x)]
 *       else:
 *           y = None
 *       return (x,
 *               y)
 *
 * It has short forms, one-line forms, and the long form across lines (the comprehension). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "record/pyframes.h"
#include "snapshot/pyframe_names.h"

static const unsigned char table[] = {
    0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xe0, 0x07, 0x08, 0x88, 0x31, 0x82,
    0x75, 0x80, 0x75, 0xf0, 0x02, 0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0xdd, 0x16, 0x1b, 0x98,
    0x41, 0x91, 0x68, 0x94, 0x68, 0xf0, 0x03, 0x01, 0x0d, 0x20, 0xf1, 0x00, 0x01, 0x0d, 0x20, 0xf4, 0x00,
    0x01, 0x0d, 0x20, 0x88, 0x01, 0x88, 0x01, 0xf0, 0x06, 0x00, 0x0d, 0x11, 0x88, 0x01, 0xd8, 0x0c, 0x0d,
    0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f};

/* line of instruction i (2-byte code units), from co_lines() */
static const int lines[] = {1, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6,
                            6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 8, 8, 9, 10, 9, 9};

static void test_lines_311(void **state) {
  (void)state;
  for (uint32_t i = 0; i < sizeof lines / sizeof *lines; i++) {
    int got = cs_pyframe_line_311(table, sizeof table, 1, i);
    if (got != lines[i]) fail_msg("instruction %u: line %d, CPython says %d", i, got, lines[i]);
  }
  /* past the table, and a table that does not start at an entry: no line rather than a guess */
  assert_int_equal(cs_pyframe_line_311(table, sizeof table, 1, 1000), 0);
  assert_int_equal(cs_pyframe_line_311(table + 1, sizeof table - 1, 1, 0), 0);
  /* the first line moves every line */
  assert_int_equal(cs_pyframe_line_311(table, sizeof table, 101, 41), 110);
}

/* The same function compiled by pyenv's CPython 3.10.13 (co_linetable, co_lines()) and 3.9.18
 * (co_lnotab, dis.findlinestarts()). */
static const unsigned char table_310[] = {0x08, 0x01, 0x08, 0x02, 0x06, 0x01, 0x06, 0x01, 0x06, 0xff, 0x02, 0x04,
                                          0x02, 0x01, 0x04, 0xff, 0x04, 0xff, 0x02, 0x01, 0x02, 0x01, 0x04, 0xff};
static const int lines_310[] = {2, 2, 2, 2, 4, 4, 4, 4, 5, 5, 5, 6, 6, 6, 5, 5, 5, 9, 10, 9, 9, 8, 8, 9, 10, 9, 9};
static const unsigned char table_39[] = {0x00, 0x01, 0x08, 0x02, 0x08, 0x01, 0x06, 0x01, 0x06,
                                         0xff, 0x08, 0x03, 0x04, 0x01, 0x02, 0x01, 0x02, 0xff};
static const int lines_39[] = {2, 2, 2, 2, 4, 4, 4, 4, 5, 5, 5, 6, 6, 6, 5, 5, 5, 5, 8, 8, 9, 10, 9, 9};

static void test_lines_310_39(void **state) {
  (void)state;
  for (uint32_t i = 0; i < sizeof lines_310 / sizeof *lines_310; i++) {
    int got = cs_pyframe_line_310(table_310, sizeof table_310, 1, i);
    if (got != lines_310[i]) fail_msg("3.10, instruction %u: line %d, CPython says %d", i, got, lines_310[i]);
  }
  for (uint32_t i = 0; i < sizeof lines_39 / sizeof *lines_39; i++) {
    int got = cs_pyframe_line_39(table_39, sizeof table_39, 1, i);
    if (got != lines_39[i]) fail_msg("3.9, instruction %u: line %d, CPython says %d", i, got, lines_39[i]);
  }
}

/* An entry the hot path could not name (record 0) is named so, not read. */
static void test_unnamed(void **state) {
  (void)state;
  char name[64], file[64];
  int line = -1;
  assert_false(cs_pyframe_name(CS_PY_FRAME_TAG, name, sizeof name, file, sizeof file, &line));
  assert_string_equal(name, "(python frame)");
  assert_string_equal(file, "??");
  assert_int_equal(line, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_lines_311), cmocka_unit_test(test_lines_310_39),
                                     cmocka_unit_test(test_unnamed)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

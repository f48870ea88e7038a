/* SPDX-License-Identifier: Apache-2.0 */
/* Text from a program made safe (common/cs_text.h), and a cut by bytes trimmed back to a
 * character (cs_utf8_trim): what every label value, JSON string and terminal line of the live view
 * goes through. The expected bytes follow Python's bytes.decode("utf-8", "replace") (maximal
 * subparts), then each C0, DEL and C1 character replaced by '?'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/cs_text.h"
#include "common/cs_utf8.h"

#define FFFD "\xEF\xBF\xBD"

static void check_safe(const char *in, size_t n, const char *want) {
  char out[256];
  size_t len = cs_text_safe(out, sizeof out, in, n);
  assert_int_equal(len, strlen(want));
  assert_memory_equal(out, want, len + 1);
}

static void test_safe(void **state) {
  (void)state;
  check_safe("plain text", 10, "plain text");
  check_safe("\x1b[2J\x1b[H", 8, "?[2J?[H");             /* C0: ESC */
  check_safe("a\tb\nc\rd\x7f" "e", 9, "a?b?c?d?e");       /* tab, newline, CR, DEL */
  check_safe("csi \xc2\x9b" "2J \xc2\x80 \xc2\x9f", 14, "csi ?2J ? ?"); /* C1: U+0080..U+009F */
  check_safe("nbsp \xc2\xa0 e \xc3\xa9", 12, "nbsp \xc2\xa0 e \xc3\xa9"); /* U+00A0 and on: kept */
  check_safe("\xe2\x82\xac \xf0\x9f\x98\x80", 8, "\xe2\x82\xac \xf0\x9f\x98\x80");
  check_safe("bad \xff\xfe", 6, "bad " FFFD FFFD);
  check_safe("\xed\xa0\x80", 3, FFFD FFFD FFFD); /* a surrogate: three subparts, as Python */
  check_safe("cut \xe2\x82", 6, "cut " FFFD);     /* one subpart */
  check_safe("\xc0\xaf", 2, FFFD FFFD);           /* overlong */
  check_safe("\x9b" "2J", 3, FFFD "2J");          /* a lone continuation byte, not a C1 */
  check_safe("stops\0here", 10, "stops");        /* at the first NUL */
  check_safe("no terminator", 2, "no");          /* within n */
}

static void test_safe_cut(void **state) {
  (void)state;
  char out[6];
  /* "ab" + U+20AC (3 bytes) + "c": 5 bytes fit, the euro sign whole */
  assert_int_equal(cs_text_safe(out, sizeof out, "ab\xe2\x82\xac" "cd", 7), 5);
  assert_string_equal(out, "ab\xe2\x82\xac");
  /* 4 bytes of room: the euro sign does not fit whole and is left out, never cut */
  assert_int_equal(cs_text_safe(out, 5, "ab\xe2\x82\xac", 5), 2);
  assert_string_equal(out, "ab");
  /* a replacement is one character too */
  assert_int_equal(cs_text_safe(out, 4, "ab\xff", 3), 2);
  assert_string_equal(out, "ab");
  assert_int_equal(cs_text_safe(out, 1, "abc", 3), 0);
  assert_string_equal(out, "");
}

static void test_safe_in_place(void **state) {
  (void)state;
  char s[] = "\x1b[2J \xc2\x9b \xff \xe2\x82\xac \xed\xa0\x80!";
  size_t n = cs_text_safe_in_place(s, sizeof s - 1);
  assert_int_equal(n, strlen("?[2J ? ? \xe2\x82\xac ???" "!"));
  assert_memory_equal(s, "?[2J ? ? \xe2\x82\xac ???" "!", n);
}

static void check_trim(const char *in, const char *want) {
  char s[64];
  snprintf(s, sizeof s, "%s", in);
  assert_int_equal(cs_utf8_trim(s), strlen(want));
  assert_string_equal(s, want);
}

static void test_trim(void **state) {
  (void)state;
  check_trim("", "");
  check_trim("ascii", "ascii");
  check_trim("caf\xc3\xa9", "caf\xc3\xa9");           /* whole: kept */
  check_trim("caf\xc3", "caf");                       /* e acute cut after its first byte */
  check_trim("euro \xe2\x82", "euro ");               /* cut after 2 of 3 */
  check_trim("euro \xe2", "euro ");                   /* after 1 of 3 */
  check_trim("smile \xf0\x9f\x98", "smile ");         /* after 3 of 4 */
  check_trim("smile \xf0\x9f\x98\x80", "smile \xf0\x9f\x98\x80");
  check_trim("bad \xff", "bad \xff");                 /* invalid, not a cut: the reader replaces it */
  check_trim("bad \xe0\x80", "bad \xe0\x80");         /* E0 80 starts no sequence: not a cut either */
  check_trim("lone \x80", "lone \x80");
  check_trim("\xc3", "");
  /* a field cut by bytes, as the live record's writer copies a name: "abcde" + the first byte of
   * e acute */
  char field[7];
  memcpy(field, "abcde\xc3\xa9xyz", sizeof field - 1);
  field[sizeof field - 1] = '\0';
  assert_int_equal(cs_utf8_trim(field), 5);
  assert_string_equal(field, "abcde");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_safe),
      cmocka_unit_test(test_safe_cut),
      cmocka_unit_test(test_safe_in_place),
      cmocka_unit_test(test_trim),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* top's site names fitted to a column (cli/live_site.h): the function and file:line are what a
 * narrow column keeps, each cut marked, never a UTF-8 sequence cut in two, never past the width. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cli/live_site.h"

static const char *fit(const char *site, size_t width) {
  static char out[256];
  memset(out, 'X', sizeof out);
  cs_live_site_fit(site, width, out, sizeof out);
  assert_true(strlen(out) <= width);
  return out;
}

static void test_whole_name_fits(void **state) {
  (void)state;
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 40), "main /srv/build/train_rank.c:48");
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 31), "main /srv/build/train_rank.c:48");
}

static void test_path_by_base_name(void **state) {
  (void)state;
  /* issue 46: 80 columns showed "main /srv/b" */
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 30), "main train_rank.c:48");
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 20), "main train_rank.c:48");
  /* C++ names hold spaces; the path starts at " /" */
  assert_string_equal(fit("worker_main(int, int) /srv/app/src/inference_server.cpp:47", 45),
                      "worker_main(int, int) inference_server.cpp:47");
  /* an absolute path with a space in it */
  assert_string_equal(fit("f /srv/my dir/x.c:3", 10), "f x.c:3");
  /* a relative path: the last word */
  assert_string_equal(fit("load_table src/server/tables.c:410", 25), "load_table tables.c:410");
}

static void test_function_cut(void **state) {
  (void)state;
  assert_string_equal(fit("worker_main(int, int) /srv/app/inference_server.cpp:47", 32),
                      "worker_~ inference_server.cpp:47");
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 18), "m~ train_rank.c:48");
  /* a UTF-8 function name is cut before a sequence, never in it */
  assert_string_equal(fit("f\xc3\xa9\xc3\xa9 /a/b.c:1", 10), "f\xc3\xa9~ b.c:1");
  assert_string_equal(fit("f\xc3\xa9\xc3\xa9 /a/b.c:1", 9), "f~ b.c:1");
}

static void test_end_of_file_and_line(void **state) {
  (void)state;
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 17), "~train_rank.c:48");
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 16), "~train_rank.c:48");
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 15), "~rain_rank.c:48");
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 6), "~.c:48");
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 1), "~");
  assert_string_equal(fit("main /srv/build/train_rank.c:48", 0), "");
}

static void test_names_without_a_line(void **state) {
  (void)state;
  assert_string_equal(fit("(no stack)", 20), "(no stack)");
  assert_string_equal(fit("(no stack)", 6), "(no st");
  assert_string_equal(fit("cuda_alloc finetune_sim.py", 12), "cuda_alloc f");
  /* a cut at the width that would split a UTF-8 sequence stops before it */
  assert_string_equal(fit("ab\xc3\xa9", 3), "ab");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_whole_name_fits),     cmocka_unit_test(test_path_by_base_name),
      cmocka_unit_test(test_function_cut),        cmocka_unit_test(test_end_of_file_and_line),
      cmocka_unit_test(test_names_without_a_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

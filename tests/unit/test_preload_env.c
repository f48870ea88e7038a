/* SPDX-License-Identifier: Apache-2.0 */
/* CUDASNAP_CHILDREN=0 takes cudasnap out of LD_PRELOAD and keeps every other entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "interpose/preload_env.h"

static void check(const char *in, const char *out, bool removed) {
  char buf[256];
  strcpy(buf, in);
  assert_int_equal(cs_preload_env_strip(buf), removed);
  assert_string_equal(buf, out);
}

static void test_strip(void **state) {
  (void)state;
  check("/opt/cudasnap/lib/libcudasnap.so", "", true);
  check("libcudasnap.so", "", true);
  check("/usr/lib/libjemalloc.so.2:/opt/lib/libcudasnap.so", "/usr/lib/libjemalloc.so.2", true);
  check("/opt/lib/libcudasnap.so /usr/lib/libspy.so", "/usr/lib/libspy.so", true);
  check("a.so::libcudasnap.so.0: b.so", "a.so:b.so", true);
  check("/usr/lib/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2", false);
  check("/home/libcudasnap-fan/liba.so", "/home/libcudasnap-fan/liba.so", false); /* only the file name counts */
  check("", "", false);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_strip)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

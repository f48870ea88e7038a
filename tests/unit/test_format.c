/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch's size format in the OOM answer, to the letter: users compare it with PyTorch's own
 * "Tried to allocate ..." (c10's format_size keeps a unit up to and including 1024 of it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/cs_format.h"

static void check_torch(uint64_t bytes, const char *want) {
  char got[64];
  cs_format_size_torch(bytes, got, sizeof got);
  assert_string_equal(got, want);
}

static void test_size_torch(void **state) {
  (void)state;
  check_torch(0, "0 bytes");
  check_torch(512, "512 bytes");
  check_torch(1024, "1024 bytes");
  check_torch(1025, "1.00 KiB");
  check_torch(1536, "1.50 KiB");
  check_torch(1ull << 20, "1024.00 KiB");
  check_torch((1ull << 20) + 1, "1.00 MiB");
  check_torch(48ull << 20, "48.00 MiB");
  check_torch(1ull << 30, "1024.00 MiB");
  check_torch(3ull << 29, "1.50 GiB");
  check_torch(80ull << 30, "80.00 GiB");
  check_torch(2ull << 40, "2048.00 GiB"); /* GiB is PyTorch's largest unit */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_size_torch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

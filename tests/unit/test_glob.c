/* SPDX-License-Identifier: Apache-2.0 */
/* Shell globs (common/cs_glob.h): fixed cases, every glob of a small alphabet against fnmatch(3)
 * (no flags, the C locale) on every name of another, and the time a glob that makes fnmatch
 * backtrack takes here. */
#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "common/cs_glob.h"

static bool matches(const char *glob, const char *name) {
  static cs_glob_t g; /* 4 KiB: not on the stack */
  if (!cs_glob_compile(&g, glob, strlen(glob))) fail_msg("refused: %s", glob);
  return cs_glob_match(&g, name, strlen(name));
}

static void test_cases(void **state) {
  (void)state;
  assert_true(matches("cuda_alloc", "cuda_alloc"));
  assert_false(matches("cuda_alloc", "cuda_alloc2"));
  assert_false(matches("cuda_alloc", "my_cuda_alloc"));
  assert_true(matches("Pool::*", "Pool::allocate(unsigned long)"));
  assert_true(matches("*::allocate*", "mem::Pool<float>::allocate(unsigned long)"));
  assert_false(matches("*::allocate", "mem::Pool<float>::allocate(unsigned long)"));
  assert_true(matches("*", ""));
  assert_true(matches("**", "abc"));
  assert_false(matches("?", ""));
  assert_true(matches("a?c", "abc"));
  assert_true(matches("[ab]x", "bx"));
  assert_false(matches("[!ab]x", "bx"));
  assert_true(matches("[^ab]x", "cx"));
  assert_true(matches("[]]", "]"));
  assert_true(matches("[a-c]", "b"));
  assert_true(matches("[a-]", "-"));
  assert_true(matches("operator\\[\\]", "operator[]"));
  assert_true(matches("\\*", "*"));
  assert_false(matches("\\*", "x"));
  assert_true(matches("Trainer.cuda_alloc", "Trainer.cuda_alloc"));
  assert_true(matches("*<locals>*", "make.<locals>.alloc"));
}

static void test_refused(void **state) {
  (void)state;
  const char *bad[] = {"", "a\tb", "[abc", "[!]", "abc\\", "[[:alpha:]]", "[[=a=]]", "[[.a.]]", "x\x7f"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (cs_glob_check(bad[i], strlen(bad[i])) == NULL) fail_msg("accepted: \"%s\"", bad[i]);
  char longest[CS_GLOB_MAX_BYTES + 2];
  memset(longest, '*', sizeof longest);
  longest[CS_GLOB_MAX_BYTES] = '\0';
  assert_null(cs_glob_check(longest, CS_GLOB_MAX_BYTES));
  longest[CS_GLOB_MAX_BYTES] = '*';
  assert_non_null(cs_glob_check(longest, CS_GLOB_MAX_BYTES + 1));
  char many[CS_GLOB_MAX_POSITIONS + 2];
  memset(many, 'a', sizeof many);
  assert_null(cs_glob_check(many, CS_GLOB_MAX_POSITIONS));
  assert_non_null(cs_glob_check(many, CS_GLOB_MAX_POSITIONS + 1));
  /* 127 positions is the last state's bit 127: still matched */
  many[CS_GLOB_MAX_POSITIONS] = '\0';
  assert_true(matches(many, many));
  many[CS_GLOB_MAX_POSITIONS - 1] = 'b';
  assert_false(matches(many, "aaa"));
}

/* Every string of up to `max` symbols from `alphabet`, into out[]; returns how many. */
static size_t strings_of(const char *alphabet, size_t max, char (*out)[8], size_t cap) {
  size_t n = 0, k = strlen(alphabet);
  out[n++][0] = '\0';
  for (size_t from = 0, len = 1; len <= max; len++) {
    size_t to = n;
    for (size_t i = from; i < to; i++)
      for (size_t c = 0; c < k && n < cap; c++) {
        size_t had = strlen(out[i]); /* i < n: another row than the one written */
        memcpy(out[n], out[i], had);
        out[n][had] = alphabet[c];
        out[n][had + 1] = '\0';
        n++;
      }
    from = to;
  }
  return n;
}

/* Every glob of up to 5 symbols over `*?[]!-\ab` against every name of up to 5 over `ab-]\`: the
 * same answer as fnmatch for each glob this file takes. */
static void test_same_as_fnmatch(void **state) {
  (void)state;
  enum { GLOBS = 120000, NAMES = 4000 };
  char (*globs)[8] = malloc(GLOBS * sizeof *globs);
  char (*names)[8] = malloc(NAMES * sizeof *names);
  assert_non_null(globs);
  assert_non_null(names);
  size_t nglobs = strings_of("*?[]!-\\ab", 5, globs, GLOBS);
  size_t nnames = strings_of("ab-]\\", 5, names, NAMES);
  size_t compared = 0;
  static cs_glob_t g;
  for (size_t i = 0; i < nglobs; i++) {
    if (!cs_glob_compile(&g, globs[i], strlen(globs[i]))) continue;
    for (size_t j = 0; j < nnames; j++) {
      bool ours = cs_glob_match(&g, names[j], strlen(names[j]));
      bool theirs = fnmatch(globs[i], names[j], 0) == 0;
      if (ours != theirs) fail_msg("glob \"%s\", name \"%s\": %d, fnmatch %d", globs[i], names[j], ours, theirs);
      compared++;
    }
  }
  assert_true(compared > 10000000);
  free(globs);
  free(names);
}

/* fnmatch takes a power of the name's length on this; here it is one pass. */
static void test_linear(void **state) {
  (void)state;
  enum { LEN = 1 << 20 };
  char *name = malloc(LEN + 1);
  assert_non_null(name);
  memset(name, 'a', LEN);
  name[LEN] = '\0';
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_false(matches("*a*a*a*a*a*a*a*a*a*a*a*a*b", name));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  if (ms > 1000) fail_msg("1 MiB name: %.0f ms", ms); /* a few ms, on a loaded machine too */
  free(name);
}

static bool collect(void *ctx, const char *item, size_t len) {
  char *out = ctx;
  strncat(out, item, len);
  strcat(out, "|");
  return len != 4 || memcmp(item, "stop", 4) != 0;
}

static void test_list(void **state) {
  (void)state;
  char out[256] = "";
  assert_true(cs_glob_list_each(" cuda_alloc , Pool::*,x", collect, out));
  assert_string_equal(out, "cuda_alloc|Pool::*|x|");
  out[0] = '\0';
  assert_true(cs_glob_list_each("a,,b,", collect, out));
  assert_string_equal(out, "a||b||");
  out[0] = '\0';
  assert_false(cs_glob_list_each("a,stop,b", collect, out));
  assert_string_equal(out, "a|stop|");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cases), cmocka_unit_test(test_refused), cmocka_unit_test(test_same_as_fnmatch),
      cmocka_unit_test(test_linear), cmocka_unit_test(test_list),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

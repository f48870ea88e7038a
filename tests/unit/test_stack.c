/* SPDX-License-Identifier: Apache-2.0 */
/* Stack capture: a known call chain a -> b -> c comes back innermost first, the depth limit holds,
 * and cudasnap's own leading frames are skipped. In this executable "cudasnap's own code" is the
 * whole test binary, so most tests switch the skipping off with the cs_stack_set_skip_range seam
 * and one test checks the skipping itself. A capture that starts where the thread's last one did, on
 * the same stack, replays that walk; one return address changed makes it walk again. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/cs_compiler.h"
#include "record/stack.h"

/* noclone: GCC must not turn these into "a.constprop.0" copies with other return addresses. */
#ifdef __clang__
#define TEST_FRAME __attribute__((noinline))
#else
#define TEST_FRAME __attribute__((noinline, noclone))
#endif
/* After a call, so it is not a tail call and the caller's frame stays on the stack. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

typedef struct chain_s {
  uintptr_t pcs[CS_STACK_MAX_DEPTH];
  size_t n;
  uintptr_t ret_c, ret_b, ret_a; /* return addresses into b, a and the test, seen from inside */
} chain_t;

TEST_FRAME static void chain_c(chain_t *ch, size_t max) {
  ch->ret_c = (uintptr_t)__builtin_return_address(0);
  ch->n = cs_stack_capture(ch->pcs, max);
  KEEP_FRAME();
}

TEST_FRAME static void chain_b(chain_t *ch, size_t max) {
  ch->ret_b = (uintptr_t)__builtin_return_address(0);
  chain_c(ch, max);
  KEEP_FRAME();
}

TEST_FRAME static void chain_a(chain_t *ch, size_t max) {
  ch->ret_a = (uintptr_t)__builtin_return_address(0);
  chain_b(ch, max);
  KEEP_FRAME();
}

static int no_skip(void **state) {
  (void)state;
  cs_stack_init();
  cs_stack_set_skip_range(0, 0);
  return 0;
}

/* Where ret_c, ret_b, ret_a appear one after another; -1 if they do not. */
static long find_chain(const chain_t *ch) {
  for (size_t i = 0; i + 2 < ch->n; i++)
    if (ch->pcs[i] == ch->ret_c && ch->pcs[i + 1] == ch->ret_b && ch->pcs[i + 2] == ch->ret_a)
      return (long)i;
  return -1;
}

static void test_chain_innermost_first(void **state) {
  (void)state;
  chain_t ch = {.n = 0};
  chain_a(&ch, CS_STACK_MAX_DEPTH);
  assert_true(ch.n > 4);
  const long at = find_chain(&ch);
  assert_true(at >= 1);
  /* before the return address into b comes the PC inside c itself, after the capture call */
  assert_true(ch.pcs[at - 1] > (uintptr_t)&chain_c);
  for (size_t i = 0; i < ch.n; i++) assert_true(ch.pcs[i] != 0);
}

static void test_depth_limit(void **state) {
  (void)state;
  chain_t full = {.n = 0};
  chain_a(&full, CS_STACK_MAX_DEPTH);
  for (size_t max = 1; max <= 4; max++) {
    chain_t ch = {.n = 0};
    chain_a(&ch, max);
    assert_int_equal(ch.n, max);
    /* the same call sites, so the same innermost PCs as the full capture */
    assert_memory_equal(ch.pcs, full.pcs, max * sizeof ch.pcs[0]);
  }
  /* more than CS_STACK_MAX_DEPTH asked: never more written than that */
  chain_t ch = {.n = 0};
  chain_a(&ch, (size_t)CS_STACK_MAX_DEPTH * 4);
  assert_true(ch.n <= CS_STACK_MAX_DEPTH);
}

static void test_max_zero(void **state) {
  (void)state;
  uintptr_t pc = 0x1234;
  assert_int_equal(cs_stack_capture(&pc, 0), 0);
  assert_int_equal(pc, 0x1234); /* untouched */
}

/* Deep recursion: the depth limit holds at CS_STACK_MAX_DEPTH too. */
TEST_FRAME static size_t recurse(int depth, uintptr_t *pcs, size_t max) {
  size_t n = depth == 0 ? cs_stack_capture(pcs, max) : recurse(depth - 1, pcs, max);
  KEEP_FRAME();
  return n;
}

static void test_deep_stack_truncated(void **state) {
  (void)state;
  uintptr_t pcs[CS_STACK_MAX_DEPTH];
  assert_int_equal(recurse(CS_STACK_MAX_DEPTH + 20, pcs, CS_STACK_MAX_DEPTH), CS_STACK_MAX_DEPTH);
  assert_int_equal(recurse(40, pcs, 32), 32);
}

static bool in_test_binary(uintptr_t pc) {
  Dl_info self, other;
  if (!dladdr((void *)(uintptr_t)&test_max_zero, &self)) return false;
  return dladdr((void *)pc, &other) && other.dli_fbase == self.dli_fbase;
}

/* The range cs_stack_init finds is the object holding stack.c: here, this executable. So the
 * leading frames in it (stack.c, chain_*, this test) are dropped and the stack starts in cmocka,
 * while main, further out, stays. Runs first, before any setup narrows the range. */
static void test_init_skips_own_leading_frames(void **state) {
  (void)state;
  cs_stack_init();
  cs_stack_init(); /* idempotent */
  chain_t ch = {.n = 0};
  chain_a(&ch, CS_STACK_MAX_DEPTH);
  assert_true(ch.n > 0);
  assert_int_equal(find_chain(&ch), -1);
  assert_false(in_test_binary(ch.pcs[0]));
  bool later_inside = false; /* only leading frames are skipped */
  for (size_t i = 1; i < ch.n; i++) later_inside |= in_test_binary(ch.pcs[i]);
  assert_true(later_inside);
}

/* An explicit range: exactly the leading frames inside it go. */
static void test_skip_range_seam(void **state) {
  (void)state;
  chain_t full = {.n = 0};
  chain_a(&full, CS_STACK_MAX_DEPTH);
  const long at = find_chain(&full);
  assert_true(at >= 1);
  /* everything up to and including the return address into b lies in [lo, hi) */
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (long i = 0; i <= at; i++) {
    if (full.pcs[i] < lo) lo = full.pcs[i];
    if (full.pcs[i] + 1 > hi) hi = full.pcs[i] + 1;
  }
  cs_stack_set_skip_range(lo, hi);
  chain_t ch = {.n = 0};
  chain_a(&ch, CS_STACK_MAX_DEPTH);
  cs_stack_set_skip_range(0, 0);
  assert_true(ch.n > 0);
  /* the first kept frame is the first one of the full capture outside the range */
  size_t first = 0;
  while (first < full.n && full.pcs[first] >= lo && full.pcs[first] < hi) first++;
  assert_true(first > (size_t)at);
  assert_int_equal(ch.pcs[0], full.pcs[first]);
}

/* test seam: a replacement capture produces a chosen stack */
static size_t fixed_capture(uintptr_t *pcs, size_t max) {
  static const uintptr_t fixed[] = {0x1000, 0x2000, 0x3000};
  size_t n = max < 3 ? max : 3;
  for (size_t i = 0; i < n; i++) pcs[i] = fixed[i];
  return n;
}

static void test_capture_seam(void **state) {
  (void)state;
  cs_stack_capture_fn saved = cs_stack_capture_impl;
  cs_stack_capture_impl = fixed_capture;
  uintptr_t pcs[8];
  assert_int_equal(cs_stack_capture(pcs, 8), 3);
  assert_int_equal(pcs[2], 0x3000);
  assert_int_equal(cs_stack_capture(pcs, 2), 2);
  cs_stack_capture_impl = saved;
  assert_true(cs_stack_capture(pcs, 8) > 3);
}

/* ---- the thread's last walk, replayed (issue 36) ---- */

/* Two callers of one leaf, alike: called from one call site, they leave the leaf's capture starting
 * at the same place, and only the leaf's return address (into one caller or the other) differs. */
static uint64_t replay_number[3];
TEST_FRAME static void replay_leaf(chain_t *ch) {
  ch->ret_c = (uintptr_t)__builtin_return_address(0);
  ch->n = cs_stack_capture_numbered(ch->pcs, 16, &replay_number[ch->ret_a]);
  KEEP_FRAME();
}
static volatile int replay_sink; /* the callers differ, so that no build folds them into one */
TEST_FRAME static void replay_via_one(chain_t *ch) {
  replay_sink = 1;
  replay_leaf(ch);
  KEEP_FRAME();
}
TEST_FRAME static void replay_via_two(chain_t *ch) {
  replay_sink = 2;
  replay_leaf(ch);
  KEEP_FRAME();
}
static void (*volatile replay_via[2])(chain_t *) = {replay_via_one, replay_via_two};

static bool has_pc(const chain_t *ch, uintptr_t pc) {
  for (size_t i = 0; i < ch->n; i++)
    if (ch->pcs[i] == pc) return true;
  return false;
}

/* The same stack captured again from the same place is the replay's, and the same frames; a stack
 * that differs in one return address is walked, and has that address. */
static void test_replay_only_the_same_stack(void **state) {
  (void)state;
  chain_t *ch = calloc(3, sizeof *ch);
  assert_non_null(ch);
  for (uintptr_t k = 0; k < 3; k++) ch[k].ret_a = k; /* where replay_leaf puts its number */
  uintptr_t ret_one = 0, ret_two = 0;
  uint64_t seen[8];
  unsigned long before = cs_stack_test_replays();
  for (volatile int i = 0; i < 8; i++) { /* one, two, one, two ...: never the last stack again */
    replay_via[i & 1](&ch[i & 1]);
    uintptr_t *ret = (i & 1) ? &ret_two : &ret_one;
    if (!*ret) *ret = ch[i & 1].ret_c;
    assert_int_equal(ch[i & 1].ret_c, *ret);
    assert_true(has_pc(&ch[i & 1], *ret));
    seen[i] = replay_number[i & 1]; /* every walk a new number */
    assert_int_not_equal(seen[i], 0);
    for (int j = 0; j < i; j++) assert_int_not_equal(seen[i], seen[j]);
  }
  assert_int_not_equal(ret_one, ret_two);
  assert_false(has_pc(&ch[0], ret_two));
  assert_false(has_pc(&ch[1], ret_one));
  assert_int_equal(cs_stack_test_replays(), before);
  /* one, one, one: the second and third are replays, with the first one's frames */
  for (volatile int i = 0; i < 3; i++) {
    replay_via[0](&ch[i == 0 ? 0 : 2]);
    if (i > 0) {
      assert_int_equal(ch[2].n, ch[0].n);
      assert_memory_equal(ch[2].pcs, ch[0].pcs, ch[0].n * sizeof ch[0].pcs[0]);
    }
  }
  assert_int_equal(cs_stack_test_replays(), before + 2);
  assert_true(has_pc(&ch[2], ret_one));
  assert_int_equal(replay_number[2], replay_number[0]); /* a replay: the number of its walk */
  assert_int_not_equal(replay_number[0], seen[7]);
  free(ch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_skips_own_leading_frames), /* first: init's own range */
      cmocka_unit_test_setup(test_chain_innermost_first, no_skip),
      cmocka_unit_test_setup(test_depth_limit, no_skip),
      cmocka_unit_test_setup(test_max_zero, no_skip),
      cmocka_unit_test_setup(test_deep_stack_truncated, no_skip),
      cmocka_unit_test_setup(test_skip_range_seam, no_skip),
      cmocka_unit_test_setup(test_capture_seam, no_skip),
      cmocka_unit_test_setup(test_replay_only_the_same_stack, no_skip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

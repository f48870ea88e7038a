/* SPDX-License-Identifier: Apache-2.0 */
/* A shared library for test_stack_rules, built -O2 -fomit-frame-pointer whatever the build type:
 * frames without frame pointers, reached through the PLT, calling back into the test. */
#include <stddef.h>

typedef size_t (*stack_rules_lib_fn)(void *arg);

/* noclone: GCC must not make "constprop" copies; the volatile sum keeps each frame's own work. */
__attribute__((visibility("default"), noinline, noclone)) size_t stack_rules_lib_chain(int depth, stack_rules_lib_fn fn, void *arg) {
  volatile size_t local[4] = {(size_t)depth, 1, 2, 3};
  size_t n = depth <= 0 ? fn(arg) : stack_rules_lib_chain(depth - 1, fn, arg);
  return n + local[0] * 0; /* not a tail call: the frame stays on the stack */
}

/* A frame with a big local array and alloca: the CFA moves a long way from rsp, and the
 * alloca makes GCC keep rbp as the frame's base (a CFA rule on rbp). */
__attribute__((visibility("default"), noinline, noclone)) size_t stack_rules_lib_big(int n, stack_rules_lib_fn fn, void *arg) {
  volatile char big[3000];
  volatile char *dyn = __builtin_alloca((size_t)n * 64 + 16);
  big[n] = 1;
  dyn[n] = 2;
  return fn(arg) + (size_t)big[n] * 0 + (size_t)dyn[n] * 0;
}

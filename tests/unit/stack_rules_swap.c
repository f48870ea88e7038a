/* SPDX-License-Identifier: Apache-2.0 */
/* Two builds of this file, told apart by SWAP_FRAME (the bytes of each frame's array), for
 * test_stack_rules: the same code at the same offsets, frames of other sizes, so that one build
 * loaded where the other was unloaded has the same return addresses and other unwind rules. */
#include <stddef.h>

#ifndef SWAP_FRAME
#error "SWAP_FRAME: the frame's array size"
#endif

typedef size_t (*stack_rules_swap_fn)(void *arg);

__attribute__((visibility("default"), noinline, noclone)) size_t stack_rules_swap_chain(int depth, stack_rules_swap_fn fn,
                                                                                       void *arg) {
  volatile char frame[SWAP_FRAME];
  frame[0] = (char)depth;
  size_t n = depth <= 0 ? fn(arg) : stack_rules_swap_chain(depth - 1, fn, arg);
  return n + (size_t)frame[0] * 0; /* not a tail call: the frame stays on the stack */
}

/* The size of this build's frames, to tell the builds apart. */
__attribute__((visibility("default"))) size_t stack_rules_swap_frame(void) { return SWAP_FRAME; }

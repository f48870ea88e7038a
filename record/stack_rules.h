/* SPDX-License-Identifier: Apache-2.0 */
/* Walking a native stack by cached unwind rules (issue 36): the fast path of stack.c's capture.
 *
 * Each frame's rule (stack_cfi.h) is looked up by its return address in a fixed-size table, and
 * compiled from the unwind tables the first time an address is seen. libunwind's unw_backtrace
 * does the same with its own cache, but its lookup, its cursor and its per-thread cache cost
 * ~11 ns a frame on an Intel Xeon; this walk is a hash, a compare and two loads per frame.
 *
 * No I/O, no lock, no allocation (the table is static and never evicts a rule of the current
 * generation: once full, new addresses are compiled each time they are met, bounded work),
 * async-signal-safe. Rules belong to a generation of the loaded objects, which ends when a library
 * is unloaded (cs_stack_rules_forget): a walk uses only rules of the generation it began in, so a
 * rule of a library that is gone never describes the frames of one mapped at its addresses since.
 * A frame the rules cannot
 * walk (no unwind tables, a signal frame, an expression) fails the whole walk: the caller then
 * unwinds the stack with libunwind, so the frames are always libunwind's. */
#ifndef CS_STACK_RULES_H
#define CS_STACK_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/stack_cfi.h"

/* A frame to start from: its return address, its CFA (the stack pointer in its caller after the
 * return) and the caller's rbp. */
typedef struct cs_stack_start_s {
  uintptr_t ra;
  uintptr_t cfa;
  uintptr_t rbp;
} cs_stack_start_t;

enum { CS_STACK_WALK_FAILED = -1 };

/* The words a walk read from the stack, in the order it read them (stack.c replays them, issue 36),
 * as windows of two words: a return address is the upper word of its window, and the saved rbp
 * read next, where it lies just below it (a frame-pointer frame), the lower word of the same
 * window; an rbp found elsewhere gets a window of its own. `where`: bytes from start->cfa to the
 * window; `compared`: its bytes a replay compares, as a mask of a 16-byte compare (0xff00: the
 * upper word alone, 0xffff: both). A walk that
 * needed more than CS_WALK_TRACE_WINDOWS windows, or one farther away than an int32_t reaches,
 * leaves `windows` above CS_WALK_TRACE_WINDOWS. */
enum { CS_WALK_TRACE_WINDOWS = 48 }; /* the default 32 frames and the 16 leading ones allowed */
enum { CS_WALK_WINDOW_UPPER = 0xff00, CS_WALK_WINDOW_BOTH = 0xffff };
typedef struct cs_walk_window_s {
  int32_t where;
  uint32_t compared;
} cs_walk_window_t;
typedef struct cs_walk_trace_s {
  uint32_t windows;
  cs_walk_window_t window[CS_WALK_TRACE_WINDOWS];
  _Alignas(16) uint64_t value[CS_WALK_TRACE_WINDOWS][2]; /* lower word, upper word */
} cs_walk_trace_t;

static inline void cs_walk_trace_note(cs_walk_trace_t *trace, uintptr_t base, uintptr_t at, uintptr_t value,
                                      bool rbp) {
  const uint32_t k = trace->windows;
  if (rbp && k > 0 && k <= CS_WALK_TRACE_WINDOWS && trace->window[k - 1].compared == CS_WALK_WINDOW_UPPER &&
      at - base == (uintptr_t)(intptr_t)trace->window[k - 1].where) { /* just below its return address */
    trace->window[k - 1].compared = CS_WALK_WINDOW_BOTH;
    trace->value[k - 1][0] = value;
    return;
  }
  const intptr_t where = (intptr_t)(at - 8 - base);
  if (k < CS_WALK_TRACE_WINDOWS && where == (int32_t)where) {
    trace->window[k] = (cs_walk_window_t){.where = (int32_t)where, .compared = CS_WALK_WINDOW_UPPER};
    trace->value[k][0] = 0;
    trace->value[k][1] = value;
    trace->windows = k + 1;
  } else {
    trace->windows = CS_WALK_TRACE_WINDOWS + 1;
  }
}

/* Writes up to `max` return addresses, outward from `start->ra`, skipping leading ones in
 * [skip_lo, skip_hi); at most `limit` frames are walked in all. Returns how many it wrote, or
 * CS_STACK_WALK_FAILED when a frame on the way cannot be walked by rule. With `trace` (else NULL),
 * notes there every word it read. */
long cs_stack_walk_rules(const cs_stack_start_t *start, uintptr_t skip_lo, uintptr_t skip_hi,
                         uintptr_t *pcs, size_t max, size_t limit, cs_walk_trace_t *trace);

/* The rule for a return address, from the table or compiled now (and kept if there is room). */
cs_frame_rule_t cs_stack_rule_for(uintptr_t ra);

/* A library was unloaded (interpose/dlclose.c): every rule compiled so far, in the table and in
 * each thread's memo of its last walk, is of a past generation and is compiled again when next
 * met. Lock-free, async-signal-safe; walks already under way finish with the rules they began
 * with. */
void cs_stack_rules_forget(void);

/* The generation now: 0 until the first library is unloaded. */
uint64_t cs_stack_rules_generation(void);

#ifdef CS_TESTING
/* test seam: how many walks succeeded and failed since the start */
void cs_stack_rules_counts(unsigned long *walked, unsigned long *failed);
#endif

#endif

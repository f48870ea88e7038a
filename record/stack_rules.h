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

/* Writes up to `max` return addresses, outward from `start->ra`, skipping leading ones in
 * [skip_lo, skip_hi); at most `limit` frames are walked in all. Returns how many it wrote, or
 * CS_STACK_WALK_FAILED when a frame on the way cannot be walked by rule. */
long cs_stack_walk_rules(const cs_stack_start_t *start, uintptr_t skip_lo, uintptr_t skip_hi,
                         uintptr_t *pcs, size_t max, size_t limit);

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

/* SPDX-License-Identifier: Apache-2.0 */
/* Native stack capture for the allocation hot path: raw program counters into a caller's fixed
 * buffer (a walk by cached unwind rules, stack_rules.h, or libunwind's unw_backtrace where those
 * cannot walk a stack), innermost first, with cudasnap's own frames skipped. A capture that starts
 * where the thread's last walk did, over the same words, replays it (stack.c).
 * No allocation, no lock, no symbol lookup (that happens at dump time: symbolize.h).
 * Thread-safe. Returns the number of PCs written (0..max). */
#ifndef CS_STACK_H
#define CS_STACK_H

#include <stddef.h>
#include <stdint.h>

enum { CS_STACK_MAX_DEPTH = 256 };

size_t cs_stack_capture(uintptr_t *pcs, size_t max);

/* The same, and a number for the frames written: two captures of one thread that get the same
 * number other than 0 wrote the same frames (a replay gets the number of the walk it replays), so
 * a caller may keep what it made of the last one by its number. 0: no number (a capture from a
 * signal handler inside another, one libunwind answered, one too deep to replay). */
size_t cs_stack_capture_numbered(uintptr_t *pcs, size_t max, uint64_t *number);

/* Call once, early and outside any hook (the first unwind may load libgcc_s or allocate):
 * records the address range of cudasnap's own code (frames there are skipped) and warms up the
 * unwinder. Idempotent. */
void cs_stack_init(void);

/* A library was unloaded (interpose/dlclose.c): the unwind rules kept so far are forgotten
 * (stack_rules.h), libunwind's caches flushed, and threads whose libunwind walks kept frame layouts
 * from before (unw_backtrace never forgets them) walk with unw_step instead from now on. Another
 * library may now be mapped at the same addresses, with other frames. Lock-free. */
void cs_stack_forget_unloaded(void);

#ifdef CS_TESTING
/* test seam: replace the capture function (e.g. to produce identical stacks on purpose) */
typedef size_t (*cs_stack_capture_fn)(uintptr_t *pcs, size_t max);
extern cs_stack_capture_fn cs_stack_capture_impl;
/* test seam: leading frames whose PC lies in [lo, hi) are skipped. cs_stack_init sets this to the
 * object holding stack.c, which in a unit test is the whole test executable; lo == hi skips none. */
void cs_stack_set_skip_range(uintptr_t lo, uintptr_t hi);
/* test seam: each unwinder alone (the capture walks by rules and falls back to libunwind); the
 * walk returns -1 where it would have fallen back */
size_t cs_stack_capture_libunwind(uintptr_t *pcs, size_t max);
long cs_stack_capture_by_rules(uintptr_t *pcs, size_t max);
/* test seam: captures answered by replaying the thread's last walk (stack.c) */
unsigned long cs_stack_test_replays(void);
#endif

#endif

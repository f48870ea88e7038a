/* SPDX-License-Identifier: Apache-2.0 */
/* One frame's unwind rule, compiled from the program's own unwind tables (.eh_frame, reached through
 * .eh_frame_hdr's sorted table), for the frame-walking unwinder of stack_rules.c (issue 36).
 *
 * A rule says where a frame's caller left its state, relative to the frame's canonical frame
 * address (CFA, the stack pointer before the call):
 *   CFA = (rsp or rbp) + cfa_offset
 *   return address at CFA + ra_offset
 *   the caller's rbp at CFA + rbp_offset, or rbp unchanged (rbp_offset == 0)
 * That is all x86-64 compilers emit for ordinary code. Everything else (expressions, registers
 * saved in other registers, signal trampolines, frames without unwind tables) compiles to
 * CS_FRAME_RULE_UNKNOWN: the caller then unwinds the whole stack with libunwind instead.
 *
 * Compiling reads only memory the loader mapped (no I/O, no allocation, no lock: glibc's
 * _dl_find_object is lock-free and async-signal-safe) and runs at most a bounded number of
 * instructions, so a miss may compile on the hot path, from a signal handler too. */
#ifndef CS_STACK_CFI_H
#define CS_STACK_CFI_H

#include <stdint.h>

typedef enum cs_frame_rule_kind_e {
  CS_FRAME_RULE_UNKNOWN = 0, /* cannot be walked by rule: unwind this stack with libunwind */
  CS_FRAME_RULE_STEP = 1,    /* an ordinary frame: step to its caller by the rule */
  CS_FRAME_RULE_LAST = 2,    /* the outermost frame: its return address is undefined (_start, clone) */
} cs_frame_rule_kind_t;

enum { CS_FRAME_RULE_CFA_RSP = 0, CS_FRAME_RULE_CFA_RBP = 1 };

/* Eight bytes, so that the rule table stores one in a single atomic word. */
typedef struct cs_frame_rule_s {
  int32_t cfa_offset;
  uint8_t kind;       /* cs_frame_rule_kind_t */
  uint8_t cfa_reg;    /* CS_FRAME_RULE_CFA_RSP or _RBP */
  int8_t ra_slot;     /* return address at CFA + 8 * ra_slot */
  int8_t rbp_slot;    /* caller's rbp at CFA + 8 * rbp_slot; 0: rbp is unchanged */
} cs_frame_rule_t;

_Static_assert(sizeof(cs_frame_rule_t) == 8, "a rule is one word");

/* The rule of the frame whose return address is `ra` (the rule of the call instruction, ra - 1).
 * Returns kind UNKNOWN when the tables cannot answer or say more than a rule can hold. */
cs_frame_rule_t cs_frame_rule_compile(uintptr_t ra);

#endif

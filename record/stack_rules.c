/* The rule table and the walk by rules (stack_rules.h). */
#include "record/stack_rules.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "common/cs_compiler.h"

/* The walk reads the program's own stack outside the frames the compiler knows about. */
#define CS_NO_SANITIZE __attribute__((no_sanitize("address", "thread")))

/* 16,384 slots of 16 bytes (256 KiB of zero pages until used): a program's allocation stacks
 * pass through a few thousand return addresses at most. Open addressing, 8 probes. */
enum { CS_RULE_TABLE_BITS = 14, CS_RULE_TABLE_SIZE = 1 << CS_RULE_TABLE_BITS, CS_RULE_PROBES = 8 };
/* A slot's key: 0 empty, 1 being filled, else the return address it holds. A slot is filled once
 * and never changes after (no eviction), so a reader that sees the key sees the rule written
 * before it (release/acquire) and no reader can pair a key with another key's rule. */
enum { CS_RULE_EMPTY = 0, CS_RULE_FILLING = 1 };
/* A CFA more than this far above the previous one means the rules or the stack are not what they
 * seem: let libunwind decide. */
#define CS_STACK_FRAME_MAX ((uintptr_t)1 << 26)

typedef struct cs_rule_slot_s {
  _Atomic uintptr_t key;
  _Atomic uint64_t rule; /* a cs_frame_rule_t */
} cs_rule_slot_t;

static cs_rule_slot_t cs_rule_table[CS_RULE_TABLE_SIZE];

#ifdef CS_TESTING
static atomic_ulong cs_stack_rules_walked, cs_stack_rules_failed;
void cs_stack_rules_counts(unsigned long *walked, unsigned long *failed) {
  *walked = atomic_load(&cs_stack_rules_walked);
  *failed = atomic_load(&cs_stack_rules_failed);
}
#define CS_RULES_COUNT(counter) atomic_fetch_add_explicit(&(counter), 1, memory_order_relaxed)
#else
#define CS_RULES_COUNT(counter) ((void)0)
#endif

static inline size_t cs_rule_hash(uintptr_t ra) {
  return (size_t)(((uint64_t)ra * 0x9e3779b97f4a7c15ull) >> (64 - CS_RULE_TABLE_BITS));
}

static inline cs_frame_rule_t cs_rule_unpack(uint64_t word) {
  cs_frame_rule_t rule;
  memcpy(&rule, &word, sizeof rule);
  return rule;
}

CS_NOINLINE static cs_frame_rule_t cs_stack_rule_miss(uintptr_t ra) {
  const cs_frame_rule_t rule = cs_frame_rule_compile(ra);
  uint64_t word;
  memcpy(&word, &rule, sizeof word);
  size_t i = cs_rule_hash(ra);
  for (int k = 0; k < CS_RULE_PROBES; k++, i = (i + 1) & (CS_RULE_TABLE_SIZE - 1)) {
    uintptr_t key = atomic_load_explicit(&cs_rule_table[i].key, memory_order_acquire);
    if (key == ra) break; /* another thread kept it first */
    if (key != CS_RULE_EMPTY) continue;
    if (!atomic_compare_exchange_strong_explicit(&cs_rule_table[i].key, &key, CS_RULE_FILLING,
                                                 memory_order_acquire, memory_order_relaxed))
      continue;
    atomic_store_explicit(&cs_rule_table[i].rule, word, memory_order_relaxed);
    atomic_store_explicit(&cs_rule_table[i].key, ra, memory_order_release);
    break;
  }
  return rule;
}

cs_frame_rule_t cs_stack_rule_for(uintptr_t ra) {
  size_t i = cs_rule_hash(ra);
  for (int k = 0; k < CS_RULE_PROBES; k++, i = (i + 1) & (CS_RULE_TABLE_SIZE - 1)) {
    const uintptr_t key = atomic_load_explicit(&cs_rule_table[i].key, memory_order_acquire);
    if (CS_LIKELY(key == ra))
      return cs_rule_unpack(atomic_load_explicit(&cs_rule_table[i].rule, memory_order_relaxed));
    if (key == CS_RULE_EMPTY) break;
  }
  return cs_stack_rule_miss(ra);
}

/* ---- the thread's last walk ----
 *
 * Allocations come from a few call paths, so a frame's return address is usually the one the
 * same frame had in this thread's last capture. That frame's rule, kept here by depth, comes
 * from a load that does not wait for the walk so far; the table's lookup (hash, key, rule) sits
 * on the walk's chain of dependent loads, and costs about as much again as the rest of a step.
 * A capture from a signal handler that interrupted a capture does not use it (`busy`): its
 * entries may be half written. 40 entries: the default 32 frames and the leading frames skipped. */
enum { CS_WALK_MEMO = 40 };
typedef struct cs_walk_memo_s {
  uintptr_t ra;
  cs_frame_rule_t rule; /* unpacked: its fields are read as they are */
} cs_walk_memo_t;
static CS_TLS cs_walk_memo_t cs_walk_memo[CS_WALK_MEMO];
static CS_TLS volatile sig_atomic_t cs_walk_busy;

static inline cs_frame_rule_t cs_walk_rule(uintptr_t pc, size_t frame, bool memo) {
  if (memo && frame < CS_WALK_MEMO) {
    cs_walk_memo_t *m = &cs_walk_memo[frame];
    if (CS_LIKELY(m->ra == pc)) return m->rule;
    const cs_frame_rule_t rule = cs_stack_rule_for(pc);
    m->rule = rule;
    m->ra = pc;
    return rule;
  }
  return cs_stack_rule_for(pc);
}

/* Reads the program's own stack: the slots the unwind tables name (a return address, a saved
 * rbp) hold what the program put there, but a sanitizer would see reads of other frames. */
CS_NO_SANITIZE long cs_stack_walk_rules(const cs_stack_start_t *start, uintptr_t skip_lo,
                                        uintptr_t skip_hi, uintptr_t *pcs, size_t max, size_t limit,
                                        cs_walk_trace_t *trace) {
  uintptr_t pc = start->ra, sp = start->cfa, bp = start->rbp;
  size_t n = 0;
  bool leading = true;
  long result = CS_STACK_WALK_FAILED;
  const bool memo = !cs_walk_busy;
  cs_walk_busy = 1;
  atomic_signal_fence(memory_order_seq_cst);
  for (size_t frame = 0; frame < limit; frame++) {
    if (!leading || pc - skip_lo >= skip_hi - skip_lo) { /* not lo <= pc < hi */
      leading = false;
      if (n == max) break;
      pcs[n++] = pc;
    }
    const cs_frame_rule_t rule = cs_walk_rule(pc, frame, memo);
    if (CS_UNLIKELY(rule.kind != CS_FRAME_RULE_STEP)) {
      if (rule.kind == CS_FRAME_RULE_LAST) break;
      goto done;
    }
    const uintptr_t cfa = (rule.cfa_reg == CS_FRAME_RULE_CFA_RBP ? bp : sp) + (uintptr_t)rule.cfa_offset;
    if (CS_UNLIKELY(cfa - sp - 1 >= CS_STACK_FRAME_MAX)) goto done; /* not sp < cfa <= sp + MAX */
    const uintptr_t ra_at = cfa + (uintptr_t)((intptr_t)rule.ra_slot * 8);
    pc = *(const uintptr_t *)ra_at;
    if (trace) cs_walk_trace_note(trace, start->cfa, ra_at, pc, false);
    if (rule.rbp_slot) {
      const uintptr_t rbp_at = cfa + (uintptr_t)((intptr_t)rule.rbp_slot * 8);
      bp = *(const uintptr_t *)rbp_at;
      if (trace) cs_walk_trace_note(trace, start->cfa, rbp_at, bp, true);
    }
    sp = cfa;
    if (CS_UNLIKELY(pc == 0)) goto done;
  }
  result = (long)n;
done:
  atomic_signal_fence(memory_order_seq_cst);
  if (memo) cs_walk_busy = 0;
  if (result >= 0) CS_RULES_COUNT(cs_stack_rules_walked);
  else CS_RULES_COUNT(cs_stack_rules_failed);
  return result;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The rule table and the walk by rules (stack_rules.h). */
#include "record/stack_rules.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "common/cs_compiler.h"

/* The walk reads the program's own stack outside the frames the compiler knows about. */
#define CS_NO_SANITIZE __attribute__((no_sanitize("address", "thread")))

/* 16,384 slots of 32 bytes (512 KiB of zero pages until used): a program's allocation stacks
 * pass through a few thousand return addresses at most. Open addressing, 8 probes. */
enum { CS_RULE_TABLE_BITS = 14, CS_RULE_TABLE_SIZE = 1 << CS_RULE_TABLE_BITS, CS_RULE_PROBES = 8 };
/* A CFA more than this far above the previous one means the rules or the stack are not what they
 * seem: let libunwind decide. */
#define CS_STACK_FRAME_MAX ((uintptr_t)1 << 26)

/* The loaded objects' generation: bumped when a library is unloaded (cs_stack_rules_forget, from
 * interpose/dlclose.c), since another one may then be mapped at the same addresses with other
 * frames. A rule is used only in the generation it was compiled in: a stale one would read a
 * caller's state at the wrong offsets, outside any frame. 64 bits: it never wraps. */
static _Atomic uint64_t cs_rule_generation;

/* A slot under a sequence lock, so that it can be filled again when its rule is of a past
 * generation while other threads read it, without a lock (a signal handler may read it): `seq` is
 * odd while a writer changes the slot, 0 while it was never filled, and grows by 2 with each fill,
 * so a reader that reads the same even `seq` before and after the fields read one fill's fields. */
typedef struct cs_rule_slot_s {
  _Atomic uint64_t seq;
  _Atomic uintptr_t key;        /* the return address */
  _Atomic uint64_t generation;  /* the generation the rule was compiled in */
  _Atomic uint64_t rule;        /* a cs_frame_rule_t */
} cs_rule_slot_t;
_Static_assert(sizeof(cs_rule_slot_t) == 32, "two slots a cache line");

static _Alignas(64) cs_rule_slot_t cs_rule_table[CS_RULE_TABLE_SIZE];

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

void cs_stack_rules_forget(void) { atomic_fetch_add_explicit(&cs_rule_generation, 1, memory_order_acq_rel); }

static inline uint64_t cs_rules_generation_now(void) {
  return atomic_load_explicit(&cs_rule_generation, memory_order_acquire);
}

uint64_t cs_stack_rules_generation(void) { return cs_rules_generation_now(); }

static inline size_t cs_rule_hash(uintptr_t ra) {
  return (size_t)(((uint64_t)ra * 0x9e3779b97f4a7c15ull) >> (64 - CS_RULE_TABLE_BITS));
}

static inline cs_frame_rule_t cs_rule_unpack(uint64_t word) {
  cs_frame_rule_t rule;
  memcpy(&rule, &word, sizeof rule);
  return rule;
}

/* One slot's fields as one fill left them; false while a writer is changing the slot or changed
 * it during the read (the caller goes on as if the slot held another address). */
typedef struct cs_rule_read_s {
  uint64_t seq;
  uintptr_t key;
  uint64_t generation;
  uint64_t rule;
} cs_rule_read_t;

/* Acquire loads of fields a writer stores with release after making `seq` odd: a reader that
 * reads one writer's field reads that odd `seq`, or a later one, after it. No fence (ThreadSanitizer
 * does not follow fences); on x86-64 these are plain loads and stores. */
static inline bool cs_rule_slot_read(cs_rule_slot_t *s, cs_rule_read_t *out) {
  out->seq = atomic_load_explicit(&s->seq, memory_order_acquire);
  out->key = atomic_load_explicit(&s->key, memory_order_acquire);
  out->generation = atomic_load_explicit(&s->generation, memory_order_acquire);
  out->rule = atomic_load_explicit(&s->rule, memory_order_acquire);
  return (out->seq & 1) == 0 && atomic_load_explicit(&s->seq, memory_order_relaxed) == out->seq;
}

/* Keeps `word`, the rule of `ra` compiled in `generation`, in an empty slot or one whose rule is of
 * an earlier generation; leaves the table as it is when there is none among the probes, or when
 * the rule is there already. */
static void cs_rule_keep(uintptr_t ra, uint64_t generation, uint64_t word) {
  size_t i = cs_rule_hash(ra);
  for (int k = 0; k < CS_RULE_PROBES; k++, i = (i + 1) & (CS_RULE_TABLE_SIZE - 1)) {
    cs_rule_slot_t *s = &cs_rule_table[i];
    cs_rule_read_t held;
    if (!cs_rule_slot_read(s, &held)) continue;
    if (held.seq != 0) {
      if (held.key == ra && held.generation == generation) return; /* another thread kept it first */
      if (held.generation >= generation) continue; /* a rule of this generation, or of a later one */
    }
    /* Claimed only if no writer came between the read and now (`seq` never repeats). */
    uint64_t expected = held.seq;
    if (!atomic_compare_exchange_strong_explicit(&s->seq, &expected, held.seq + 1, memory_order_acq_rel,
                                                 memory_order_relaxed))
      continue;
    atomic_store_explicit(&s->key, ra, memory_order_release); /* after `seq` odd (cs_rule_slot_read) */
    atomic_store_explicit(&s->generation, generation, memory_order_release);
    atomic_store_explicit(&s->rule, word, memory_order_release);
    atomic_store_explicit(&s->seq, held.seq + 2, memory_order_release);
    return;
  }
}

CS_NOINLINE static cs_frame_rule_t cs_stack_rule_miss(uintptr_t ra, uint64_t generation) {
  const cs_frame_rule_t rule = cs_frame_rule_compile(ra);
  uint64_t word;
  memcpy(&word, &rule, sizeof word);
  cs_rule_keep(ra, generation, word);
  return rule;
}

/* The rule of `ra` in `generation`, read before the walk began: a rule compiled in it may be kept
 * after a library is unloaded, but only a walk that began before will use it. */
static inline cs_frame_rule_t cs_rule_lookup(uintptr_t ra, uint64_t generation) {
  size_t i = cs_rule_hash(ra);
  for (int k = 0; k < CS_RULE_PROBES; k++, i = (i + 1) & (CS_RULE_TABLE_SIZE - 1)) {
    cs_rule_read_t held;
    if (!cs_rule_slot_read(&cs_rule_table[i], &held)) continue;
    if (CS_LIKELY(held.key == ra && held.generation == generation)) return cs_rule_unpack(held.rule);
    if (held.seq == 0) break; /* never filled: the probes of `ra` end here */
  }
  return cs_stack_rule_miss(ra, generation);
}

cs_frame_rule_t cs_stack_rule_for(uintptr_t ra) { return cs_rule_lookup(ra, cs_rules_generation_now()); }

/* ---- the thread's last walk ----
 *
 * Allocations come from a few call paths, so a frame's return address is usually the one the
 * same frame had in this thread's last capture. That frame's rule, kept here by depth, comes
 * from a load that does not wait for the walk so far; the table's lookup (hash, key, rule) sits
 * on the walk's chain of dependent loads, and costs about as much again as the rest of a step.
 * A capture from a signal handler that interrupted a capture does not use it (`busy`): its
 * entries may be half written. The memo holds rules of one generation: a walk in a later one
 * forgets them first. 40 entries: the default 32 frames and the leading frames skipped. */
enum { CS_WALK_MEMO = 40 };
typedef struct cs_walk_memo_s {
  uintptr_t ra;
  cs_frame_rule_t rule; /* unpacked: its fields are read as they are */
} cs_walk_memo_t;
static CS_TLS cs_walk_memo_t cs_walk_memo[CS_WALK_MEMO];
static CS_TLS uint64_t cs_walk_memo_generation;
static CS_TLS volatile sig_atomic_t cs_walk_busy;

static inline cs_frame_rule_t cs_walk_rule(uintptr_t pc, size_t frame, bool memo, uint64_t generation) {
  if (memo && frame < CS_WALK_MEMO) {
    cs_walk_memo_t *m = &cs_walk_memo[frame];
    if (CS_LIKELY(m->ra == pc)) return m->rule;
    const cs_frame_rule_t rule = cs_rule_lookup(pc, generation);
    m->rule = rule;
    m->ra = pc;
    return rule;
  }
  return cs_rule_lookup(pc, generation);
}

CS_COLD static void cs_walk_memo_forget(uint64_t generation) {
  for (size_t i = 0; i < CS_WALK_MEMO; i++) cs_walk_memo[i].ra = 0;
  cs_walk_memo_generation = generation;
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
  const uint64_t generation = cs_rules_generation_now();
  if (memo && CS_UNLIKELY(cs_walk_memo_generation != generation)) cs_walk_memo_forget(generation);
  for (size_t frame = 0; frame < limit; frame++) {
    if (!leading || pc - skip_lo >= skip_hi - skip_lo) { /* not lo <= pc < hi */
      leading = false;
      if (n == max) break;
      pcs[n++] = pc;
    }
    const cs_frame_rule_t rule = cs_walk_rule(pc, frame, memo, generation);
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

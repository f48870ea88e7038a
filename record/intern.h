/* SPDX-License-Identifier: Apache-2.0 */
/* Stack interning: a stack of PCs -> a small integer id, equal stacks -> equal ids.
 *
 * The hot path calls cs_intern_stack for every allocation: it hashes the PCs and finds or inserts
 * the stack in a hash table. Lookups of known stacks take no lock; inserts take a short one.
 * Stacks live in arena chunks allocated as the table grows (amortized, never per call); the total
 * is bounded by `max_stacks`, after which new stacks get id 0 ("no stack"), so a program with
 * unbounded distinct stacks cannot make cudasnap grow without limit.
 *
 * Ids are dense, from 1, so writers can index arrays by them. A stack, once interned, is never
 * moved or freed until cs_intern_destroy: the dump thread reads stacks while others insert. */
#ifndef CS_INTERN_H
#define CS_INTERN_H

#include <stddef.h>
#include <stdint.h>

typedef struct cs_intern_s cs_intern_t;

/* NULL without host memory. */
cs_intern_t *cs_intern_create(size_t max_stacks);
void cs_intern_destroy(cs_intern_t *t);

/* The id of this stack (n > 0), or 0 when n == 0 or the table is full. Thread-safe. */
uint32_t cs_intern_stack(cs_intern_t *t, const uintptr_t *pcs, size_t n);

/* The PCs of id (1..count); sets *n. NULL for unknown ids. Thread-safe. */
const uintptr_t *cs_intern_get(const cs_intern_t *t, uint32_t id, size_t *n);

/* Ids handed out so far (the largest id). */
uint32_t cs_intern_count(const cs_intern_t *t);

/* The table's contents: a number that changes at each clear, and differs between tables, so that
 * an id kept with it is known to name the same stack while it stays. Never 0 (0 for NULL). */
uint32_t cs_intern_serial(const cs_intern_t *t);

/* Called with each new stack, under the insert lock (so one call at a time), after the stack is
 * whole and before its id is handed out: what a mirror has recorded covers every id in use. Not
 * on the lookup path. */
typedef void (*cs_intern_mirror_fn)(void *ctx, uint32_t id, const uintptr_t *pcs, size_t n);

/* Set (or, with fn NULL, remove) the mirror; a new mirror is called first with every stack
 * interned so far, in id order. Not concurrent with inserts: at set-up, or in a fork child before
 * it runs anything else (or, in a fork child, at its activation). */
void cs_intern_set_mirror(cs_intern_t *t, cs_intern_mirror_fn fn, void *ctx);

/* Forget everything (after fork in the child: the parent's stacks stay valid memory but are not
 * the child's history). Not concurrent with anything else. */
void cs_intern_clear(cs_intern_t *t);

#ifdef CS_TESTING
/* test seam: lookups the calling thread's last stack answered (no hash, no probe) */
unsigned long cs_intern_test_last_hits(void);
#endif

#endif

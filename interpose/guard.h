/* SPDX-License-Identifier: Apache-2.0 */
/* The reentrancy guard: a per-thread depth counter in initial-exec TLS (reading it never calls
 * __tls_get_addr, so never allocates). A hook entered while the thread is already inside cudasnap
 * (the driver calling a hooked export from within, or cudasnap's own work) passes straight through
 * to the real function.
 *
 * Every exit matches an enter on every path: a depth left below zero makes every later hook on
 * the thread read as nested, so its allocations skip the cache and its frees of cached blocks
 * reach the driver (issue 44). Debug builds assert it. */
#ifndef CS_GUARD_H
#define CS_GUARD_H

#include <stdbool.h>

#include "common/cs_assert.h"
#include "common/cs_compiler.h"

extern CS_TLS int cs_guard_depth;

/* True when this is the outermost entry; every enter is paired with exactly one exit. */
static inline bool cs_guard_enter(void) { return cs_guard_depth++ == 0; }
static inline void cs_guard_exit(void) {
  cs_assert(cs_guard_depth > 0);
  cs_guard_depth--;
}

/* Is the calling thread inside cudasnap or a CUDA call it hooked? For the signal handler
 * (process/signals.h), which the constructor tells this way. Async-signal-safe. */
bool cs_guard_in_call(void);

#endif

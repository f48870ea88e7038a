/* The library's life in a process (interposition.md sections 7.7-7.9 and 9.1).
 *
 * Inert until the first CUDA activity (a redirected lookup or a hook's first call): a process
 * that never uses CUDA gets no thread, no file and no output from cudasnap. Activation parses the
 * options (warnings appear then) and installs the fork handlers. The constructor only takes
 * cudasnap out of LD_PRELOAD when CUDASNAP_CHILDREN=0. Nothing calls CUDA at exit. */
#ifndef CS_LIFECYCLE_H
#define CS_LIFECYCLE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "common/cs_compiler.h"

extern atomic_bool cs_lifecycle_active;

CS_COLD void cs_lifecycle_activate_slow(void);

/* Cheap after the first call. */
static inline void cs_lifecycle_activate(void) {
  if (CS_UNLIKELY(!atomic_load_explicit(&cs_lifecycle_active, memory_order_acquire)))
    cs_lifecycle_activate_slow();
}

#endif

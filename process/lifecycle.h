/* SPDX-License-Identifier: Apache-2.0 */
/* The library's life in a process (interposition.md sections 7.7-7.9 and 9.1).
 *
 * Inert until the first CUDA activity (a redirected lookup or a hook's first call): a process
 * that never uses CUDA gets no thread, no file and no output from cudasnap. Activation parses the
 * options (warnings appear then), starts each part of the process's life with them (recording,
 * contexts, snapshots, signals) and installs the fork handlers, which take every module's locks in
 * one order. The constructor (interpose/preload.c) only takes cudasnap out of LD_PRELOAD when
 * CUDASNAP_CHILDREN=0. Nothing calls CUDA at exit. */
#ifndef CS_LIFECYCLE_H
#define CS_LIFECYCLE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "common/cs_compiler.h"

extern atomic_bool cs_lifecycle_active;

CS_COLD void cs_lifecycle_activate_slow(void);

/* The device of the calling thread's current context as cudasnap knows it once it is active
 * (device/contexts.h's cs_contexts_thread_device), else 0, with no CUDA call: the device an
 * annotation (an NVTX range, the API's phase) is recorded on. */
int cs_lifecycle_thread_device(void);

/* Cheap after the first call. */
static inline void cs_lifecycle_activate(void) {
  if (CS_UNLIKELY(!atomic_load_explicit(&cs_lifecycle_active, memory_order_acquire)))
    cs_lifecycle_activate_slow();
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The calling thread's id as the kernel numbers it (gettid), which is what nvtxNameOsThread takes,
 * /proc/self/task/ lists and trace viewers show: the thread of a history entry and of a phase.
 * Asked of the kernel once per thread and kept in thread-local storage, so reading it is one load
 * on the allocation hot path. Ids are below 2^22 (the kernel's PID_MAX_LIMIT); 0 is no thread. */
#ifndef CS_THREAD_ID_H
#define CS_THREAD_ID_H

#include <stdint.h>

#include "common/cs_compiler.h"

enum { CS_THREAD_ID_BITS = 22 };

extern CS_TLS uint32_t cs_thread_id_cached;
uint32_t cs_thread_id_ask(void);

static inline uint32_t cs_thread_id(void) {
  uint32_t id = cs_thread_id_cached;
  return CS_LIKELY(id != 0) ? id : cs_thread_id_ask();
}

/* In a fork's child: the forking thread, its only one, has a new id (called by the child handlers
 * of the history and of the phases). */
void cs_thread_id_postfork_child(void);

#endif

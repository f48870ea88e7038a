/* SPDX-License-Identifier: Apache-2.0 */
#include "record/thread_id.h"

#include <sys/syscall.h>
#include <unistd.h>

CS_TLS uint32_t cs_thread_id_cached;

CS_COLD uint32_t cs_thread_id_ask(void) {
  long id = syscall(SYS_gettid);
  /* never 0 (no thread) and within the bits kept, whatever a kernel answers */
  uint32_t kept = id > 0 ? (uint32_t)id & ((UINT32_C(1) << CS_THREAD_ID_BITS) - 1) : 0;
  return cs_thread_id_cached = kept ? kept : 1;
}

void cs_thread_id_postfork_child(void) { cs_thread_id_cached = 0; }

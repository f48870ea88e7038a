/* SPDX-License-Identifier: Apache-2.0 */
/* dlclose: when it unloads a library, the unwind rules the stack walk keeps by return address
 * (record/stack_rules.h) may describe code that is gone, and the next library mapped at those
 * addresses has other frames; a rule kept from before would read a caller's state at the wrong
 * offsets, and so would libunwind's own tables. After a dlclose that unloaded something, both are
 * forgotten (cs_stack_forget_unloaded).
 *
 * Only the program's calls come here: glibc's own unloading (NSS and iconv modules) calls its
 * internal dlclose, and those modules never call CUDA. A library's constructors that run in a
 * dlopen on one thread while another thread's dlclose has unmapped the library at the same
 * addresses and not yet returned could still meet a rule of the old one: the generation ends when
 * the dlclose returns. */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "interpose/dlclose.h"
#include "real/libc_dlsym.h"
#include "record/stack.h"

typedef int (*cs_dlclose_fn)(void *);
static _Atomic(cs_dlclose_fn) cs_dlclose_next;

/* The loader's count of objects unloaded so far (dl_phdr_info.dlpi_subs): it takes the loader's
 * lock, as dlclose itself does. UINT64_MAX where the loader does not give it. */
static int cs_dlclose_subs_of_first(struct dl_phdr_info *info, size_t size, void *arg) {
  unsigned long long *subs = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) *subs = info->dlpi_subs;
  return 1; /* the first object is enough: every one carries the same counts */
}

static unsigned long long cs_dlclose_unloads(void) {
  unsigned long long subs = ~0ull;
  dl_iterate_phdr(cs_dlclose_subs_of_first, &subs);
  return subs;
}

void cs_dlclose_resolve(void) {
  void *p = cs_libc_dlsym(RTLD_NEXT, "dlclose");
  cs_dlclose_fn fn;
  memcpy(&fn, &p, sizeof fn);
  atomic_store_explicit(&cs_dlclose_next, fn, memory_order_release);
}

CS_EXPORT int dlclose(void *handle) {
  if (!atomic_load_explicit(&cs_dlclose_next, memory_order_acquire)) cs_dlclose_resolve(); /* before the constructor */
  cs_dlclose_fn next = atomic_load_explicit(&cs_dlclose_next, memory_order_acquire);
  if (!next) return -1; /* no dlclose after cudasnap's: cannot be, a libc has one */
  const unsigned long long before = cs_dlclose_unloads();
  const int result = next(handle);
  const unsigned long long after = cs_dlclose_unloads();
  if (after != before || after == ~0ull) cs_stack_forget_unloaded();
  return result;
}

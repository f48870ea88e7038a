/* SPDX-License-Identifier: Apache-2.0 */
/* Reaching libc's dlsym and the next dlsym in the search order without calling dlsym (contract
 * in libc_dlsym.h). */
#include "real/libc_dlsym.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

/* glibc's versioned dlsym, found without calling dlsym. */
static cs_dlsym_fn cs_libc_dlsym_fn(void) {
  static _Atomic(cs_dlsym_fn) cached;
  cs_dlsym_fn fn = atomic_load_explicit(&cached, memory_order_acquire);
  if (fn) return fn;
  void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
#if defined(__x86_64__)
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#elif defined(__aarch64__)
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
#endif
  memcpy(&fn, &p, sizeof fn);
  atomic_store_explicit(&cached, fn, memory_order_release);
  return fn;
}

void *cs_libc_dlsym(void *handle, const char *name) { return cs_libc_dlsym_fn()(handle, name); }

/* The dlsym after cudasnap in the search order: another overrider or libc's. Asking libc's dlsym
 * for RTLD_NEXT "dlsym" from here keeps unversioned overriders behind cudasnap in the chain, which
 * dlvsym would skip (interposition.md section 4.2, pitfall 5). */
cs_dlsym_fn cs_next_dlsym_fn(void) {
  static _Atomic(cs_dlsym_fn) cached;
  cs_dlsym_fn fn = atomic_load_explicit(&cached, memory_order_acquire);
  if (fn) return fn;
  void *p = cs_libc_dlsym(RTLD_NEXT, "dlsym");
  fn = p ? NULL : cs_libc_dlsym_fn();
  if (p) memcpy(&fn, &p, sizeof fn);
  atomic_store_explicit(&cached, fn, memory_order_release);
  return fn;
}

void *cs_next_dlsym(void *handle, const char *name) { return cs_next_dlsym_fn()(handle, name); }

/* The narrow dlsym override (interposition.md sections 4.2 and 5.2). The exported entry is
 * dlsym_trampoline.S; this file decides and redirects.
 *
 * Forwarded untouched, by a tail jump to the next dlsym: RTLD_NEXT lookups, names that are not
 * driver hooks of hooks.def (exact names), lookups made by libcuda itself, and cudasnap's own.
 * Redirected: the rest. The next dlsym answers; a NULL answer stays NULL (feature probes keep
 * working); otherwise cudasnap keeps the answer as the real function and returns its hook. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "common/cs_log.h"
#include "interpose/guard.h"
#include "interpose/lifecycle.h"
#include "interpose/real.h"

typedef void *(*cs_dlsym_fn)(void *, const char *);

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
static cs_dlsym_fn cs_next_dlsym_fn(void) {
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

/* Was the lookup made from inside the CUDA driver? The driver's own lookups of hooked names must
 * get the driver's functions, or a driver that resolves its entry points with dlsym would hand
 * our hooks back to us as "real" (interposition.md section 4.2, pitfall 2). */
static bool cs_caller_is_libcuda(void *caller) {
  Dl_info info;
  if (!caller || !dladdr(caller, &info) || !info.dli_fname) return false;
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  return strncmp(base, "libcuda.so", 10) == 0;
}

/* Only driver entry points are redirected: there is one driver, but a process may hold several
 * copies of libcudart (a framework's and the program's), and a runtime hook has one real slot, so
 * answering dlsym(handle, "cudaMalloc") with it could send calls to another copy's state. Runtime
 * hooks interpose by symbol binding only. */
static bool cs_dlsym_redirects(const char *name) {
  cs_fn_t fn = cs_fn_find(name);
  return fn != CS_FN_COUNT && cs_fn_info[fn].kind == CS_FN_DRIVER_HOOK;
}

/* Called by the trampoline: the function to jump to, or NULL to redirect. */
cs_dlsym_fn cs_dlsym_forward_target(void *handle, const char *name, void *caller);
cs_dlsym_fn cs_dlsym_forward_target(void *handle, const char *name, void *caller) {
  if (handle == RTLD_NEXT || cs_guard_depth > 0 || !cs_dlsym_redirects(name) ||
      cs_caller_is_libcuda(caller))
    return cs_next_dlsym_fn();
  return NULL;
}

void *cs_dlsym_redirect(void *handle, const char *name);
void *cs_dlsym_redirect(void *handle, const char *name) {
  void *p = cs_next_dlsym(handle, name);
  if (!p) return NULL;
  cs_fn_t fn = cs_fn_find(name);
  cs_any_fn found = cs_fn_from_ptr(p);
  if (cs_fn_is_hook(found)) return p; /* already ours (a global lookup finds the preload first) */
  cs_real_offer(fn, found);
  cs_lifecycle_activate();
  cs_log_debug("redirected %s via dlsym", name);
  return cs_ptr_from_fn(cs_fn_info[fn].hook);
}

/* SPDX-License-Identifier: Apache-2.0 */
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
#include "interpose/hook_table.h"
#include "process/lifecycle.h"
#include "real/libc_dlsym.h"
#include "real/real.h"

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
  return cs_ptr_from_fn(cs_fn_hook(fn));
}

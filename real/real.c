/* SPDX-License-Identifier: Apache-2.0 */
#include "real/real.h"

#include <dlfcn.h>

#include "common/cs_log.h"
#include "real/libc_dlsym.h"

const cs_fn_info_t cs_fn_info[CS_FN_COUNT] = {
#define CS_HOOK(name_, pfn, base_, version_, ptds_)                                                 \
  [CS_FN_##name_] = {.name = #name_, .base = base_, .version = version_, .ptds = ptds_,             \
                     .kind = CS_FN_DRIVER_HOOK},
#define CS_RUNTIME(name_) [CS_FN_##name_] = {.name = #name_, .kind = CS_FN_RUNTIME_HOOK},
#define CS_REAL(name_, pfn) [CS_FN_##name_] = {.name = #name_, .kind = CS_FN_DRIVER_REAL},
#include "real/hooks.def"
#undef CS_HOOK
#undef CS_RUNTIME
#undef CS_REAL
};

cs_any_fn _Atomic cs_real_slots[CS_FN_COUNT];

cs_fn_t cs_fn_find(const char *name) {
  /* Every CUDA name starts "cu"; most lookups in a process are something else. */
  if (name == NULL || name[0] != 'c' || name[1] != 'u') return CS_FN_COUNT;
  for (int i = 0; i < CS_FN_COUNT; i++)
    if (cs_fn_info[i].kind != CS_FN_DRIVER_REAL && strcmp(cs_fn_info[i].name, name) == 0) return (cs_fn_t)i;
  return CS_FN_COUNT;
}

void cs_real_store(cs_fn_t fn, cs_any_fn p) {
  if (!p) return;
  cs_any_fn expected = NULL;
  if (atomic_compare_exchange_strong(&cs_real_slots[fn], &expected, p)) return;
  if (expected != p)
    cs_log_debug("%s: keeping the first real address %p, also offered %p", cs_fn_info[fn].name,
                 cs_ptr_from_fn(expected), cs_ptr_from_fn(p));
}

/* Is p inside libcudasnap.so itself? A lookup of a CUDA name that lands there has found one of
 * cudasnap's hooks (through another overrider of dlsym that hands them back), which is never kept
 * as real. */
static bool cs_real_is_own(void *p) {
  Dl_info mine, found;
  return dladdr((void *)&cs_real_slots, &mine) && dladdr(p, &found) && mine.dli_fbase == found.dli_fbase;
}

/* The driver as the program loaded it. Never loads it: a process that has not loaded libcuda
 * has made no driver call for cudasnap to forward. */
static void *cs_libcuda_handle(void) {
  static void *_Atomic handle;
  void *h = atomic_load_explicit(&handle, memory_order_acquire);
  if (!h) {
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) atomic_store_explicit(&handle, h, memory_order_release);
  }
  return h;
}

cs_any_fn cs_real_resolve(cs_fn_t fn) {
  const char *name = cs_fn_info[fn].name;
  void *p = NULL;
  if (cs_fn_info[fn].kind != CS_FN_RUNTIME_HOOK) {
    void *h = cs_libcuda_handle();
    if (h) p = cs_next_dlsym(h, name);
  }
  /* The next definition after cudasnap: libcudart for runtime hooks, or a driver that was
   * loaded under another name. */
  if (!p) p = cs_libc_dlsym(RTLD_NEXT, name);
  if (p && !cs_real_is_own(p)) cs_real_store(fn, cs_fn_from_ptr(p));
  return atomic_load_explicit(&cs_real_slots[fn], memory_order_acquire);
}

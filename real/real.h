/* SPDX-License-Identifier: Apache-2.0 */
/* The functions cudasnap hooks or calls, one slot each for the real implementation, driven by
 * real/hooks.def: the boundary out, which every folder that calls CUDA calls through.
 *
 * A slot is filled the first time the real function is seen: the result of a lookup the program
 * made (dlsym, cuGetProcAddress, cudaGetDriverEntryPoint*) that cudasnap answered with its hook
 * (interpose/hook_table.h offers it, refusing cudasnap's own hooks: storing one as "real" would
 * recurse forever, interposition.md section 4.2, pitfall 2), or else, on first use, a lookup in
 * the loaded libcuda.so.1 (driver functions) or past cudasnap in the symbol search order (runtime
 * functions), which never finds one of cudasnap's hooks. */
#ifndef CS_REAL_H
#define CS_REAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "real/cuda_api.h"

typedef enum cs_fn_e {
#define CS_HOOK(name, pfn, base, version, ptds) CS_FN_##name,
#define CS_RUNTIME(name) CS_FN_##name,
#define CS_REAL(name, pfn) CS_FN_##name,
#include "real/hooks.def"
#undef CS_HOOK
#undef CS_RUNTIME
#undef CS_REAL
  CS_FN_COUNT
} cs_fn_t;

typedef enum cs_fn_kind_e {
  CS_FN_DRIVER_HOOK,  /* exported, in libcuda.so.1 */
  CS_FN_RUNTIME_HOOK, /* exported, in libcudart */
  CS_FN_DRIVER_REAL,  /* only called */
} cs_fn_kind_t;

/* Any function pointer, for storage: C converts between function pointer types freely. */
typedef void (*cs_any_fn)(void);

typedef struct cs_fn_info_s {
  const char *name;   /* the exact exported name */
  const char *base;   /* the name cuGetProcAddress is asked for; NULL unless a driver hook */
  int version;        /* first CUDA version of this variant */
  bool ptds;          /* the per-thread-default-stream variant */
  cs_fn_kind_t kind;
} cs_fn_info_t;

extern const cs_fn_info_t cs_fn_info[CS_FN_COUNT];
extern cs_any_fn _Atomic cs_real_slots[CS_FN_COUNT];

/* dlsym's void * as a function pointer and back (ISO C has no direct conversion). */
static inline cs_any_fn cs_fn_from_ptr(void *p) {
  cs_any_fn f;
  memcpy(&f, &p, sizeof f);
  return f;
}

static inline void *cs_ptr_from_fn(cs_any_fn f) {
  void *p;
  memcpy(&p, &f, sizeof p);
  return p;
}

/* The hooked entry of this exact name, or CS_FN_COUNT. Cheap for names not starting "cu". */
cs_fn_t cs_fn_find(const char *name);

/* Remember p as the real implementation of fn; the first one stored wins. p is never one of
 * cudasnap's hooks (the caller's guarantee). */
void cs_real_store(cs_fn_t fn, cs_any_fn p);

/* Slow path of cs_real: look the function up. NULL when it cannot be found. */
CS_COLD cs_any_fn cs_real_resolve(cs_fn_t fn);

static inline cs_any_fn cs_real(cs_fn_t fn) {
  cs_any_fn p = atomic_load_explicit(&cs_real_slots[fn], memory_order_acquire);
  return CS_LIKELY(p != NULL) ? p : cs_real_resolve(fn);
}

/* Typed access, e.g. CS_REAL_FN(cuMemAlloc_v2, PFN_cuMemAlloc_v3020)(&p, n). */
#define CS_REAL_FN(name, pfn) ((pfn)cs_real(CS_FN_##name))

#endif

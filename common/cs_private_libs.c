/* SPDX-License-Identifier: Apache-2.0 */
#include "common/cs_private_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

/* dlsym's void * as a function pointer (ISO C has no direct conversion). */
#define CS_SYM(handle, name, out)                                                                  \
  do {                                                                                             \
    void *cs_sym_ = dlsym((handle), (name));                                                       \
    memcpy(&(out), &cs_sym_, sizeof cs_sym_);                                                      \
  } while (0)

static pthread_once_t cs_unwind_once = PTHREAD_ONCE_INIT;
static cs_unw_backtrace_fn cs_unw_backtrace;

static cs_unw_step_api_t cs_unw_step_table;
static const cs_unw_step_api_t *cs_unw_step_api;

static void cs_load_unwind(void) {
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  CS_SYM(h, "unw_backtrace", cs_unw_backtrace);
  cs_unw_step_api_t *t = &cs_unw_step_table;
  CS_SYM(h, "_Ux86_64_getcontext", t->getcontext);
  CS_SYM(h, "_ULx86_64_init_local", t->init_local);
  CS_SYM(h, "_ULx86_64_step", t->step);
  CS_SYM(h, "_ULx86_64_get_reg", t->get_reg);
  CS_SYM(h, "_Ux86_64_flush_cache", t->flush_cache);
  t->local_space = dlsym(h, "_ULx86_64_local_addr_space");
  if (t->getcontext && t->init_local && t->step && t->get_reg && t->flush_cache && t->local_space)
    cs_unw_step_api = t;
}

cs_unw_backtrace_fn cs_private_unw_backtrace(void) {
  pthread_once(&cs_unwind_once, cs_load_unwind);
  return cs_unw_backtrace;
}

const cs_unw_step_api_t *cs_private_unw_step(void) {
  pthread_once(&cs_unwind_once, cs_load_unwind);
  return cs_unw_step_api;
}

static pthread_once_t cs_dw_once = PTHREAD_ONCE_INIT;
static cs_dw_api_t cs_dw_table;
static const cs_dw_api_t *cs_dw;

static void cs_load_dw(void) {
  void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  bool complete = true;
  /* a handle lookup searches libdw and its dependencies, libelf included */
#define CS_DW_LOAD(name)                                                                            \
  CS_SYM(h, #name, cs_dw_table.name);                                                              \
  complete = complete && cs_dw_table.name != NULL;
  CS_DW_FUNCTIONS(CS_DW_LOAD)
#undef CS_DW_LOAD
  if (complete) cs_dw = &cs_dw_table;
}

const cs_dw_api_t *cs_private_dw(void) {
  pthread_once(&cs_dw_once, cs_load_dw);
  return cs_dw;
}

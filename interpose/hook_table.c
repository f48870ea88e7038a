/* SPDX-License-Identifier: Apache-2.0 */
/* The hooks of real/hooks.def's entries (contract in interpose/hook_table.h). */
#include "interpose/hook_table.h"

#include "interpose/hooks.h"

/* cudaGetDriverEntryPoint is deprecated, but programs still call it: it is hooked on purpose. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static const cs_any_fn cs_fn_hooks[CS_FN_COUNT] = {
#define CS_HOOK(name_, pfn, base_, version_, ptds_) [CS_FN_##name_] = (cs_any_fn)&name_,
#define CS_RUNTIME(name_) [CS_FN_##name_] = (cs_any_fn)&name_,
#define CS_REAL(name_, pfn) [CS_FN_##name_] = NULL,
#include "real/hooks.def"
#undef CS_HOOK
#undef CS_RUNTIME
#undef CS_REAL
};
#pragma GCC diagnostic pop

cs_any_fn cs_fn_hook(cs_fn_t fn) { return fn < CS_FN_COUNT ? cs_fn_hooks[fn] : NULL; }

bool cs_fn_is_hook(cs_any_fn p) {
  for (int i = 0; i < CS_FN_COUNT; i++)
    if (cs_fn_hooks[i] == p) return true;
  return false;
}

void cs_real_offer(cs_fn_t fn, cs_any_fn p) {
  if (!p || cs_fn_is_hook(p)) return;
  cs_real_store(fn, p);
}

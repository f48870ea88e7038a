/* SPDX-License-Identifier: Apache-2.0 */
/* Which of libcudasnap.so's exported functions is the hook of each entry of real/hooks.def, and
 * the real functions the program's lookups hand over (dlsym, cuGetProcAddress,
 * cudaGetDriverEntryPoint*), kept unless they are one of these hooks. */
#ifndef CS_HOOK_TABLE_H
#define CS_HOOK_TABLE_H

#include <stdbool.h>

#include "real/real.h"

/* cudasnap's exported hook for fn; NULL for a function it only calls (CS_FN_DRIVER_REAL). */
cs_any_fn cs_fn_hook(cs_fn_t fn);

/* Is p one of cudasnap's own hooks? */
bool cs_fn_is_hook(cs_any_fn p);

/* Remember p as the real implementation of fn (first one wins; ours are refused). */
void cs_real_offer(cs_fn_t fn, cs_any_fn p);

#endif

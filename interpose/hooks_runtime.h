/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime label: which cuda* call of a dynamically linked libcudart is in progress on this
 * thread (its cs_fn_t, or 0 = none). Set by hooks_runtime.c around the real call; read by the
 * driver hooks, which do all the accounting, so nothing is counted twice
 * (interposition.md section 5.6). */
#ifndef CS_HOOKS_RUNTIME_H
#define CS_HOOKS_RUNTIME_H

#include <stdbool.h>

#include "common/cs_compiler.h"

extern CS_TLS int cs_rt_label;

/* The first runtime call of the process that returned an error: its cs_fn_t and cudaError_t.
 * false when none did. */
bool cs_rt_first_failure(int *fn, int *error);

#endif

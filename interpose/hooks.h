/* SPDX-License-Identifier: Apache-2.0 */
/* Declares every hook of hooks.def with default visibility (the rest of the library is hidden)
 * and with its variant's type, so each definition is checked against the toolkit's typedef.
 * Included by the files that define hooks. */
#ifndef CS_HOOKS_H
#define CS_HOOKS_H

#include "common/cs_compiler.h"
#include "interpose/cudart_api.h"
#include "real/cuda_api.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* cudaGetDriverEntryPoint */
#define CS_HOOK(name, pfn, base, version, ptds) extern __typeof__(*(pfn)0) name CS_EXPORT;
#define CS_RUNTIME(name) extern __typeof__(name) name CS_EXPORT;
#define CS_REAL(name, pfn)
#include "real/hooks.def"
#undef CS_HOOK
#undef CS_RUNTIME
#undef CS_REAL
#pragma GCC diagnostic pop

#endif

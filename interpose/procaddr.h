/* SPDX-License-Identifier: Apache-2.0 */
/* Mapping a resolver request to a hooked variant (used by procaddr.c; exposed for tests). */
#ifndef CS_PROCADDR_H
#define CS_PROCADDR_H

#include <stdbool.h>

#include "real/real.h"

/* The hooked variant for (symbol, version, ptds): among the hooks of that base name whose first
 * version is at most `version`, the newest; a per-thread-stream variant when ptds and one exists,
 * else a legacy one. CS_FN_COUNT when cudasnap hooks no variant of it. */
cs_fn_t cs_procaddr_variant(const char *symbol, int version, bool ptds);

#endif

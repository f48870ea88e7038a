/* SPDX-License-Identifier: Apache-2.0 */
/* The functions a compiler inlined at an address, from DWARF's inline scopes (libdw): what
 * `eu-addr2line -i` and `perf` show as frames of their own. For the symbolizer (symbolize.c), at
 * dump or recovery time only. */
#ifndef CS_SNAPSHOT_INLINE_CALLS_H
#define CS_SNAPSHOT_INLINE_CALLS_H

#include <stddef.h>

#include "common/cs_private_libs.h"

/* One inlined function and the call it stands for. The strings are libdw's (.debug_str, the unit's
 * file table): valid while the Dwfl that gave the unit lives. */
typedef struct cs_inline_call_s {
  const char *name;      /* its linkage name (mangled) or, without one, its DW_AT_name; NULL unknown */
  const char *call_file; /* the file of the call the code was inlined for; NULL unknown */
  int call_line;         /* its line; 0 unknown */
} cs_inline_call_t;

/* A unit's functions by address: read once, asked for many addresses. */
typedef struct cs_inline_unit_s cs_inline_unit_t;

/* The functions of the unit cu; NULL without host memory. */
cs_inline_unit_t *cs_inline_unit_read(const cs_dw_api_t *dw, Dwarf_Die *cu);
void cs_inline_unit_free(cs_inline_unit_t *u);

/* The functions inlined at addr (a DWARF address: the module's bias taken off) in the unit u,
 * innermost first, into out[0..max): the first is the function the address's own line belongs to,
 * each next one the function the previous was inlined into, and the last's call is in the
 * function the code belongs to (the DW_TAG_subprogram). Their count; 0 when the address is in no
 * inlined function, or in more than max (the address is then named by its function alone).
 * Never fails otherwise: a name or call it cannot read is left NULL / 0. */
size_t cs_inline_calls(const cs_dw_api_t *dw, const cs_inline_unit_t *u, Dwarf_Addr addr, cs_inline_call_t *out,
                       size_t max);

#endif

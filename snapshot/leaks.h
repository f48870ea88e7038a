/* SPDX-License-Identifier: Apache-2.0 */
/* The exit leak report: blocks the program never freed, how many and how many bytes, and the five
 * allocation sites (function file:line) holding the most bytes. A site is named by the
 * rule of memviz/site_rule.h, as the tool names it. Written as cs_log_info lines. */
#ifndef CS_LEAKS_H
#define CS_LEAKS_H

#include "record/intern.h"
#include "snapshot/snapshot.h"
#include "snapshot/symbolize.h"

enum { CS_LEAK_TOP_SITES = 5 };

/* Says nothing when every block was freed. sym may be NULL (sites are then not named). */
void cs_leak_report(const cs_snap_state_t *s, const cs_intern_t *intern, cs_symbolizer_t *sym);

#endif

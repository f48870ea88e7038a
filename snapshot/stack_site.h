/* The site of a recorded stack (its program counters, innermost first), by the one site rule
 * (memviz/site_rule.h) over the frames the symbolizer names: what the exit leak report and the
 * snapshot's per-process summary both call a stack's site, as the tool does from a file's frames. */
#ifndef CS_SNAPSHOT_STACK_SITE_H
#define CS_SNAPSHOT_STACK_SITE_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/symbolize.h"

/* The site's program counter among pcs[0..n), n > 0. */
uintptr_t cs_stack_site_pc(cs_symbolizer_t *sym, const uintptr_t *pcs, size_t n);

#endif

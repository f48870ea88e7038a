/* SPDX-License-Identifier: Apache-2.0 */
/* The site of a recorded stack (its program counters, innermost first), by the one site rule
 * (memviz/site_rule.h) over the frames the symbolizer names, inlined functions as frames of their
 * own: what the exit leak report, the snapshot's per-process summary and the live record all call
 * a stack's site, as the tool does from a file's frames. */
#ifndef CS_SNAPSHOT_STACK_SITE_H
#define CS_SNAPSHOT_STACK_SITE_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot/symbolize.h"

/* The site's frame among the frames pcs[0..n) stand for, n > 0; its strings live as long as sym.
 * The rule counts the process's allocator frames (memviz/allocator_frames.h) as it is now. */
cs_frame_t cs_stack_site(cs_symbolizer_t *sym, const uintptr_t *pcs, size_t n);

#endif

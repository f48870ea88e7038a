/* The exit leak report: blocks the program never freed, how many and how many bytes, and the five
 * allocation sites (function file:line) holding the most bytes. A site is the innermost frame
 * outside the CUDA runtime and driver, so static and dynamic cudart programs both point at the
 * program's own call. Written as cs_log_info lines. */
#ifndef CS_LEAKS_H
#define CS_LEAKS_H

#include "snapshot/intern.h"
#include "snapshot/snapshot.h"
#include "snapshot/symbolize.h"

enum { CS_LEAK_TOP_SITES = 5 };

/* Says nothing when every block was freed. sym may be NULL (sites are then not named). */
void cs_leak_report(const cs_snap_state_t *s, const cs_intern_t *intern, cs_symbolizer_t *sym);

/* Is this frame part of CUDA's own libraries (to be looked through)? Exposed for tests. */
bool cs_leak_frame_is_cuda(const cs_frame_t *f);

#endif

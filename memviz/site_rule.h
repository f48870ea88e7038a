/* Which frames may name an allocation's site. One rule for the exit leak report (inside the
 * program) and for the tool's summary and diff (on files), so they name the same site. */
#ifndef CS_SITE_RULE_H
#define CS_SITE_RULE_H

#include <stdbool.h>

#include "memviz/frame.h"

/* True for a frame of CUDA's runtime or driver (by library file, or by name when the runtime is
 * linked statically into the program) or of cudasnap itself: never a site. */
bool cs_frame_is_cuda(const cs_frame_t *f);

#endif

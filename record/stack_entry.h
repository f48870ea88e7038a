/* SPDX-License-Identifier: Apache-2.0 */
/* What one entry of a recorded stack is: a native return address, or a Python frame entry
 * (record/pyframes.h makes them on the hot path) with the top bit set, which native return
 * addresses never have on the 48-bit address spaces this runs on. A format fact, with no state:
 * the snapshot writer tells them apart to name them, and so does the tool when it reads the
 * stacks of a recording file (record/recfile.h). */
#ifndef CS_STACK_ENTRY_H
#define CS_STACK_ENTRY_H

#include <stdbool.h>
#include <stdint.h>

#define CS_PY_FRAME_TAG ((uintptr_t)1 << 63)

static inline bool cs_py_is_frame(uintptr_t entry) { return (entry & CS_PY_FRAME_TAG) != 0; }

#endif

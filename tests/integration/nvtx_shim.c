/* SPDX-License-Identifier: Apache-2.0 */
/* A library that uses NVTX v3 the way PyTorch's extension does (header-only, its own copy of
 * NVTX's globals), exported for Python's ctypes: nvtx_shim.py-style callers push and pop ranges
 * through it. */
#include <nvtx3/nvToolsExt.h>

#define SHIM_API __attribute__((visibility("default")))
SHIM_API int shim_push(const char *name);
SHIM_API int shim_pop(void);
SHIM_API void shim_mark(const char *name);

int shim_push(const char *name) { return nvtxRangePushA(name); }
int shim_pop(void) { return nvtxRangePop(); }
void shim_mark(const char *name) { nvtxMarkA(name); }

/* SPDX-License-Identifier: Apache-2.0 */
/* libcudasnap.so as the process's NVTX injection (interpose/nvtx.c). */
#ifndef CS_NVTX_H
#define CS_NVTX_H

#include <stdbool.h>

/* Is this copy of libcudasnap.so in the program's global scope (preloaded), rather than opened by
 * a child's NVTX through an inherited NVTX_INJECTION64_PATH? Only a preloaded copy profiles or
 * reports anything. */
bool cs_nvtx_library_preloaded(void);

/* Does cudasnap take NVTX's calls in this process (it set NVTX_INJECTION64_PATH to itself, and
 * CUDASNAP_NVTX is on)? */
bool cs_nvtx_attached(void);

#endif

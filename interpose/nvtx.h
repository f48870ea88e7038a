/* libcudasnap.so as the process's NVTX injection (interpose/nvtx.c). */
#ifndef CS_NVTX_H
#define CS_NVTX_H

#include <stdbool.h>
#include <stdint.h>

/* Is this copy of libcudasnap.so in the program's global scope (preloaded), rather than opened by
 * a child's NVTX through an inherited NVTX_INJECTION64_PATH? Only a preloaded copy profiles or
 * reports anything. */
bool cs_nvtx_library_preloaded(void);

/* Does cudasnap take NVTX's calls in this process (it set NVTX_INJECTION64_PATH to itself, and
 * CUDASNAP_NVTX is on)? */
bool cs_nvtx_attached(void);

/* After fork the child forgets its parent's phases and pools (installed once, at NVTX's first call). */
void cs_nvtx_install_fork_handler(void);

/* A range started and ended as nvtxRangeStartA / nvtxRangeEnd record it, on the thread's current
 * device, for the API's phases too (interpose/api_phase.c). The id carries the name (0: nothing
 * recorded), so the end may come on another thread. */
uint64_t cs_nvtx_range_start(uint32_t name);
void cs_nvtx_range_end(uint64_t id);

#endif

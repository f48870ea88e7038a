/* SPDX-License-Identifier: Apache-2.0 */
/* What a call that makes memory past the cache does when the driver answers out of memory
 * (interpose/hooks_driver.c): cudasnap gives back what its caches hold free on the device and the
 * call is asked once more, so the program gets what it would get without the cache; an
 * out-of-memory answer the program then gets is recorded as the cache's own are: an `oom` entry
 * (size asked, device_free, stream) in the history, num_ooms and passthrough_ooms.<kind>; the
 * hook then has the OOM snapshot written as CUDASNAP_DUMP_ON says. Neither is called from inside
 * cudasnap (the hook's guard says). */
#ifndef CS_PASSTHROUGH_OOM_H
#define CS_PASSTHROUGH_OOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memviz/passthrough.h"

/* Give back the caches' free segments on device (every context's, as empty_cache does); whether
 * asking again may succeed. Nothing for device -1 (memory of no device: host memory is not the
 * caches' business) or during a capture. */
bool cs_passthrough_oom_release(int device);

/* The program gets CUDA_ERROR_OUT_OF_MEMORY for `size` bytes of `kind` on device (-1: host memory,
 * or no device known) and stream: record it, with the caller's stack. */
void cs_passthrough_oom_record(cs_passthrough_kind_t kind, int device, size_t size, uintptr_t stream);

#endif

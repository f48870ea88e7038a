/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA driver API as the library sees it: cuda.h and cudaTypedefs.h without the macros that
 * rename legacy entry points (cuda.h maps cuMemAlloc to cuMemAlloc_v2, cuGetProcAddress to
 * cuGetProcAddress_v2, ...; interposition.md section 3.1), so that hooks can be defined under
 * their exact exported names and typed by each variant's PFN. Only the folders that call CUDA
 * include CUDA headers (interpose/, api/, process/, publish/, device/, real/), through here; the
 * layers below them include none. */
#ifndef CS_CUDA_API_H
#define CS_CUDA_API_H

/* cuda.h's own switch for this: it undoes the renaming macros and declares the legacy (v1)
 * prototypes, and cudaTypedefs.h then declares their PFN types too. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA runtime API as interpose/ sees it: cuda_runtime_api.h, plus the two _ptsz resolvers
 * that it declares only for per-thread-default-stream builds (libcudart exports both forms). */
#ifndef CS_CUDART_API_H
#define CS_CUDART_API_H

#include <cuda_runtime_api.h>

#undef cudaGetDriverEntryPoint
#undef cudaGetDriverEntryPointByVersion

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                  unsigned int cudaVersion, unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus);

#endif

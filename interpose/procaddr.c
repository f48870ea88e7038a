/* SPDX-License-Identifier: Apache-2.0 */
/* Entry-point resolvers: cuGetProcAddress (both ABIs) and cudaGetDriverEntryPoint* (all four).
 * interposition.md sections 3.4, 5.3 and 5.4.
 *
 * The real resolver answers first, and its return code and symbolStatus reach the caller
 * untouched: a NULL answer (unknown name, version too old, the empty probe) stays NULL. Only a
 * non-NULL answer for a hooked (name, version, PTDS) variant is swapped for cudasnap's hook, the
 * answer being kept as that variant's real function. The runtime's self-query for
 * "cuGetProcAddress" is such a variant, so every later lookup of the runtime comes back here. */
#include "common/cs_log.h"
#include "interpose/cudart_api.h"
#include "interpose/guard.h"
#include "interpose/hook_table.h"
#include "interpose/hooks.h"
#include "interpose/procaddr.h"
#include "process/lifecycle.h"
#include "real/real.h"

cs_fn_t cs_procaddr_variant(const char *symbol, int version, bool ptds) {
  cs_fn_t best[2] = {CS_FN_COUNT, CS_FN_COUNT}; /* [legacy, ptds] */
  for (int i = 0; i < CS_FN_COUNT; i++) {
    const cs_fn_info_t *f = &cs_fn_info[i];
    if (!f->base || f->version > version || strcmp(f->base, symbol) != 0) continue;
    cs_fn_t *slot = &best[f->ptds];
    if (*slot == CS_FN_COUNT || cs_fn_info[*slot].version < f->version) *slot = (cs_fn_t)i;
  }
  return ptds && best[1] != CS_FN_COUNT ? best[1] : best[0];
}

static void cs_procaddr_redirect(const char *symbol, int version, bool ptds, void **pfn, const char *route) {
  if (!symbol || !pfn || !*pfn || cs_guard_depth > 0) return;
  cs_fn_t fn = cs_procaddr_variant(symbol, version, ptds);
  if (fn == CS_FN_COUNT) return;
  cs_any_fn found = cs_fn_from_ptr(*pfn);
  if (cs_fn_is_hook(found)) return; /* resolved through one of our hooks already */
  cs_real_offer(fn, found);
  *pfn = cs_ptr_from_fn(cs_fn_hook(fn));
  cs_lifecycle_activate();
  cs_log_debug("redirected %s (version %d%s) to %s via %s", symbol, version, ptds ? ", per-thread stream" : "",
               cs_fn_info[fn].name, route);
}

/* ---- the driver's resolvers ---- */

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbol_status) {
  PFN_cuGetProcAddress_v12000 real = CS_REAL_FN(cuGetProcAddress_v2, PFN_cuGetProcAddress_v12000);
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(symbol, pfn, cuda_version, flags, symbol_status);
  if (r == CUDA_SUCCESS)
    cs_procaddr_redirect(symbol, cuda_version, flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, pfn,
                         "cuGetProcAddress");
  return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags) {
  PFN_cuGetProcAddress_v11030 real = CS_REAL_FN(cuGetProcAddress, PFN_cuGetProcAddress_v11030);
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(symbol, pfn, cuda_version, flags);
  if (r == CUDA_SUCCESS)
    cs_procaddr_redirect(symbol, cuda_version, flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, pfn,
                         "cuGetProcAddress");
  return r;
}

/* ---- the runtime's resolvers ---- */

/* The unversioned resolvers answer for the runtime's own CUDA version; these headers' version
 * stands in for it (no hooked entry point changed its ABI after CUDA 12). In the _ptsz resolvers
 * cudaEnableDefault means per-thread default streams. */
static bool cs_rt_ptds(unsigned long long flags, bool ptsz_resolver) {
  if (flags & cudaEnablePerThreadDefaultStream) return true;
  return ptsz_resolver && !(flags & cudaEnableLegacyStream);
}

typedef cudaError_t (*cs_rt_resolver_fn)(const char *, void **, unsigned long long,
                                          enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*cs_rt_resolver_by_version_fn)(const char *, void **, unsigned int, unsigned long long,
                                                     enum cudaDriverEntryPointQueryResult *);

static cudaError_t cs_rt_resolve(cs_fn_t self, bool ptsz, const char *symbol, void **fn,
                                 unsigned long long flags, enum cudaDriverEntryPointQueryResult *status) {
  cs_rt_resolver_fn real = (cs_rt_resolver_fn)cs_real(self);
  if (!real) return cudaErrorInitializationError;
  cudaError_t r = real(symbol, fn, flags, status);
  if (r == cudaSuccess) cs_procaddr_redirect(symbol, CUDA_VERSION, cs_rt_ptds(flags, ptsz), fn, "cudaGetDriverEntryPoint");
  return r;
}

static cudaError_t cs_rt_resolve_by_version(cs_fn_t self, bool ptsz, const char *symbol, void **fn,
                                            unsigned int version, unsigned long long flags,
                                            enum cudaDriverEntryPointQueryResult *status) {
  cs_rt_resolver_by_version_fn real = (cs_rt_resolver_by_version_fn)cs_real(self);
  if (!real) return cudaErrorInitializationError;
  cudaError_t r = real(symbol, fn, version, flags, status);
  if (r == cudaSuccess)
    cs_procaddr_redirect(symbol, (int)version, cs_rt_ptds(flags, ptsz), fn, "cudaGetDriverEntryPoint");
  return r;
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *status) {
  return cs_rt_resolve(CS_FN_cudaGetDriverEntryPoint, false, symbol, fn, flags, status);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **fn, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *status) {
  return cs_rt_resolve(CS_FN_cudaGetDriverEntryPoint_ptsz, true, symbol, fn, flags, status);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status) {
  return cs_rt_resolve_by_version(CS_FN_cudaGetDriverEntryPointByVersion, false, symbol, fn, version, flags,
                                  status);
}

cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **fn, unsigned int version,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *status) {
  return cs_rt_resolve_by_version(CS_FN_cudaGetDriverEntryPointByVersion_ptsz, true, symbol, fn, version,
                                  flags, status);
}

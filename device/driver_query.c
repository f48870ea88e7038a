/* SPDX-License-Identifier: Apache-2.0 */
/* The driver's answer for one device (contract in device/driver_query.h). */
#include "device/driver_query.h"

#include "device/mempools.h"
#include "real/real.h"

enum { CS_DRIVER_QUERY_MAX_POOLS = 256 };

static bool cs_driver_query_pool(CUmemoryPool pool, cs_snap_driver_t *m) {
  PFN_cuMemPoolGetAttribute_v11020 get = CS_REAL_FN(cuMemPoolGetAttribute, PFN_cuMemPoolGetAttribute_v11020);
  cuuint64_t reserved = 0, used = 0;
  if (!get || get(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
      get(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS)
    return false;
  m->pool_reserved += reserved;
  m->pool_used += used;
  return true;
}

void cs_driver_query_device(int device, cs_snap_driver_t *m) {
  *m = (cs_snap_driver_t){0};
  size_t free_bytes = 0, total = 0;
  PFN_cuMemGetInfo_v3020 info = CS_REAL_FN(cuMemGetInfo_v2, PFN_cuMemGetInfo_v3020);
  if (info && info(&free_bytes, &total) == CUDA_SUCCESS) {
    m->driver_known = true;
    m->driver_total = total;
    m->driver_free = free_bytes;
  }
  PFN_cuDeviceGetDefaultMemPool_v11020 get_default =
      CS_REAL_FN(cuDeviceGetDefaultMemPool, PFN_cuDeviceGetDefaultMemPool_v11020);
  CUmemoryPool pool = NULL;
  /* a driver without pools (before CUDA 11.2) has none to count */
  m->pools_known = get_default && get_default(&pool, device) == CUDA_SUCCESS && cs_driver_query_pool(pool, m);
  /* cuMemAllocAsync's pool, when the program made another one current (cuDeviceSetMemPool) */
  PFN_cuDeviceGetMemPool_v11020 get_current = CS_REAL_FN(cuDeviceGetMemPool, PFN_cuDeviceGetMemPool_v11020);
  CUmemoryPool current = NULL;
  if (m->pools_known && get_current && get_current(&current, device) == CUDA_SUCCESS && current != pool)
    m->pools_known = cs_driver_query_pool(current, m);
  /* graph memory nodes' allocations: the device's graph memory pool (CUDA 11.4 on) */
  PFN_cuDeviceGetGraphMemAttribute_v11040 graph_attr =
      CS_REAL_FN(cuDeviceGetGraphMemAttribute, PFN_cuDeviceGetGraphMemAttribute_v11040);
  cuuint64_t graph_reserved = 0, graph_used = 0;
  m->graph_known = graph_attr && graph_attr(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &graph_reserved) == CUDA_SUCCESS &&
                   graph_attr(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &graph_used) == CUDA_SUCCESS;
  if (m->graph_known) {
    m->graph_reserved = graph_reserved;
    m->graph_used = graph_used;
  }
  uintptr_t pools[CS_DRIVER_QUERY_MAX_POOLS];
  size_t n = cs_mempools_of(device, pools, CS_DRIVER_QUERY_MAX_POOLS);
  for (size_t i = 0; i < n; i++)
    if ((CUmemoryPool)pools[i] != pool && (CUmemoryPool)pools[i] != current)
      m->pools_known = cs_driver_query_pool((CUmemoryPool)pools[i], m) && m->pools_known;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* What the parts of the fake driver share: fake_cuda.c (contexts, streams, linear allocations)
 * and fake_cuda_mem.c (VMM, stream-ordered pools, arrays). Not exported: the library is built
 * with -fvisibility=hidden and only FC_EXPORT functions are visible. */
#ifndef CS_FAKE_CUDA_INTERNAL_H
#define CS_FAKE_CUDA_INTERNAL_H

#include <cuda.h>

#include "tests/fakes/fake_cuda_control.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FC_EXPORT __attribute__((visibility("default")))

enum { FC_MEM_MAX_DEVICES = 16 };

/* The granularity of VMM, pools and graph memory: what they reserve and charge comes in these. */
#define FC_GRANULE ((size_t)2 << 20)
static inline size_t fc_round_up(size_t n) { return (n + FC_GRANULE - 1) / FC_GRANULE * FC_GRANULE; }

/* A small registry of live objects, so stale or foreign handles are rejected, not dereferenced. */
typedef struct fc_list_s {
  void **v;
  size_t n, cap;
} fc_list_t;
bool fc_list_add(fc_list_t *l, void *p); /* false: no host memory */
bool fc_list_has(const fc_list_t *l, const void *p);
void fc_list_del(fc_list_t *l, const void *p);

/* The one lock of all the driver's state. */
void fc_lock(void);
void fc_unlock(void);

/* One line in FAKE_CUDA_LOG (written outside the lock). */
void fc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* pre for the rest: the lock is held. */
CUresult fc_require_ctx(struct CUctx_st **out);
int fc_ctx_device(const struct CUctx_st *c);
CUresult fc_device_check(CUdevice dev);
bool fc_dev_ok(CUdevice d);

/* A device's used bytes (cuMemGetInfo's total - free): charged, or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult fc_charge_locked(int device, size_t bytes);
void fc_uncharge_locked(int device, size_t bytes);
size_t fc_used_locked(int device);
/* Device memory at p was freed (cuMemFree*, cuMemFreeAsync*, cuMemUnmap): the test's free hook,
 * called outside the lock before the call returns. */
void fc_freed_hook(uintptr_t p);
/* Pinned host memory (FAKE_CUDA_HOST_CAPACITY): charged, or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult fc_charge_host_locked(size_t bytes);
void fc_uncharge_host_locked(size_t bytes);

/* [p, p + n) is mapped VMM memory end to end (fake_cuda_mem.c), readable, and writable when
 * `write`: what a copy or a set into it needs, as cuMemSetAccess granted. */
bool fc_vmm_range_ok_locked(uintptr_t p, size_t n, bool write);

/* Stream-ordered pools (fake_cuda_mem.c). */
struct CUmemPoolHandle_st *fc_pool_valid_locked(CUmemoryPool pool);  /* NULL: not a live pool */
struct CUmemPoolHandle_st *fc_pool_default_locked(int device);
struct CUmemPoolHandle_st *fc_pool_current_locked(int device); /* cuMemAllocAsync's */
CUresult fc_pool_take_locked(struct CUmemPoolHandle_st *pool, size_t bytes);  /* may grow reserved */
void fc_pool_give_back_locked(struct CUmemPoolHandle_st *pool, size_t bytes);
void fc_pools_trim_device_locked(int device);
/* A synchronization: each pool of the device gives back what exceeds its release threshold. */
void fc_pools_release_locked(int device);

/* A stream handle the driver knows (cuStreamCreate'd and live, or a special one). */
bool fc_stream_valid_locked(CUstream stream);

/* Graph memory (fake_cuda_graph.c): frees the live graph allocation at p (cuMemFree, cuMemFreeAsync);
 * false if p is none. */
bool fc_graph_free_locked(uintptr_t p);
/* [p, p + n) lies inside one live graph allocation. */
bool fc_graph_range_ok_locked(uintptr_t p, size_t n);
/* Stream capture's graph: made at its beginning, given to the program at its end (or destroyed). */
struct CUgraph_st *fc_graph_new_locked(void); /* NULL: no host memory */
void fc_graph_destroy_locked(struct CUgraph_st *graph);
/* cuMemAllocAsync and cuMemFreeAsync on a capturing stream: nodes of its graph. */
CUresult fc_graph_capture_alloc_locked(struct CUgraph_st *graph, size_t size, int device, uintptr_t *dptr);
CUresult fc_graph_capture_free_locked(struct CUgraph_st *graph, uintptr_t dptr);

#endif

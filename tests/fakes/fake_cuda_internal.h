/* What the parts of the fake driver share: fake_cuda.c (contexts, streams, linear allocations)
 * and fake_cuda_mem.c (VMM, stream-ordered pools, arrays). Not exported: the library is built
 * with -fvisibility=hidden and only FC_EXPORT functions are visible. */
#ifndef CS_FAKE_CUDA_INTERNAL_H
#define CS_FAKE_CUDA_INTERNAL_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#define FC_EXPORT __attribute__((visibility("default")))

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

/* Stream-ordered pools (fake_cuda_mem.c). */
struct CUmemPoolHandle_st *fc_pool_valid_locked(CUmemoryPool pool);  /* NULL: not a live pool */
struct CUmemPoolHandle_st *fc_pool_default_locked(int device);
struct CUmemPoolHandle_st *fc_pool_current_locked(int device); /* cuMemAllocAsync's */
CUresult fc_pool_take_locked(struct CUmemPoolHandle_st *pool, size_t bytes);  /* may grow reserved */
void fc_pool_give_back_locked(struct CUmemPoolHandle_st *pool, size_t bytes);
void fc_pools_trim_device_locked(int device);
/* A synchronization: each pool of the device gives back what exceeds its release threshold. */
void fc_pools_release_locked(int device);

#endif

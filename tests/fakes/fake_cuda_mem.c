/* SPDX-License-Identifier: Apache-2.0 */
/* The fake driver's memory beyond linear allocations, with the semantics cudasnap's accounting
 * depends on (every byte a device is charged is what cuMemGetInfo reports used):
 *   - virtual memory management: address reservations (PROT_NONE host mappings), physical handles
 *     charged to their device at cuMemCreate (or, located on the host as CUDA 12.2 allows, to the
 *     pinned host memory: CU_MEM_LOCATION_TYPE_HOST, id ignored, or _HOST_NUMA, node 0 only, as on
 *     a machine without NUMA), maps at offsets of a handle into a reservation at
 *     the granularity (2 MiB), access set per mapped range (mprotect; copies and sets need it, and
 *     run across mappings side by side), unmaps of whole mappings, a released handle freed when
 *     its last mapping goes. Aliases of one handle do not share data;
 *   - stream-ordered pools: the default pool of each device and created ones; an allocation takes
 *     `used` bytes and the pool reserves (and the device is charged) whole granules to cover
 *     them; freed bytes stay reserved until a synchronization releases what exceeds the release
 *     threshold, cuMemPoolTrimTo trims, or the context goes;
 *   - arrays and mipmapped arrays, charged width x height x depth x channels x element size (all
 *     levels of a mipmapped one, each dimension halved per level, at least 1).
 * Bad use gets the driver's status codes. Every function takes the one lock of fake_cuda.c. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/fakes/fake_cuda_internal.h"

bool fc_list_add(fc_list_t *l, void *p) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    void **v = realloc(l->v, cap * sizeof *v);
    if (!v) return false;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = p;
  return true;
}

bool fc_list_has(const fc_list_t *l, const void *p) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i] == p) return true;
  return false;
}

void fc_list_del(fc_list_t *l, const void *p) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i] == p) {
      l->v[i] = l->v[--l->n];
      return;
    }
}

/* ======================================================================================== */
/* ---- virtual memory management ---- */

typedef struct fc_phys_s {
  int device; /* -1: located on the host */
  size_t size;
  unsigned maps;
  bool released; /* cuMemRelease was called; freed with its last mapping */
} fc_phys_t;

typedef struct fc_reservation_s {
  uintptr_t base;
  size_t size;
} fc_reservation_t;

typedef struct fc_mapping_s {
  uintptr_t addr;
  size_t size;
  fc_phys_t *phys;
  int prot; /* what cuMemSetAccess granted: PROT_NONE until it is called */
} fc_mapping_t;

static fc_list_t fc_physicals, fc_reservations, fc_mappings;

static bool fc_prop_on_host(const CUmemAllocationProp *prop) {
  return prop->location.type == CU_MEM_LOCATION_TYPE_HOST || prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
}

static bool fc_prop_ok(const CUmemAllocationProp *prop) {
  return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE || fc_prop_on_host(prop));
}

static CUresult fc_prop_check(const CUmemAllocationProp *prop) {
  if (!fc_prop_ok(prop)) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) return prop->location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST) return CUDA_SUCCESS;
  return fc_dev_ok(prop->location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FC_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                 CUmemAllocationGranularity_flags option) {
  fc_lock();
  CUresult rc = fc_device_check(prop && !fc_prop_on_host(prop) ? prop->location.id : 0);
  if (rc == CUDA_SUCCESS && !granularity) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) rc = fc_prop_check(prop);
  if (rc == CUDA_SUCCESS && option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *granularity = FC_GRANULE;
  fc_unlock();
  fc_log("cuMemGetAllocationGranularity status=%d", (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags) {
  fc_lock();
  bool host = prop && fc_prop_on_host(prop);
  int device = host ? -1 : prop ? prop->location.id : 0;
  CUresult rc = fc_device_check(host ? 0 : device);
  if (rc == CUDA_SUCCESS && (!handle || flags != 0 || size == 0 || size % FC_GRANULE != 0)) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) rc = fc_prop_check(prop);
  fc_phys_t *p = NULL;
  if (rc == CUDA_SUCCESS) rc = host ? fc_charge_host_locked(size) : fc_charge_locked(device, size);
  if (rc == CUDA_SUCCESS) {
    p = malloc(sizeof *p);
    if (!p || !fc_list_add(&fc_physicals, p)) {
      free(p);
      p = NULL;
      if (host) fc_uncharge_host_locked(size);
      else fc_uncharge_locked(device, size);
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      *p = (fc_phys_t){.device = device, .size = size};
      *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    }
  }
  fc_unlock();
  fc_log("cuMemCreate size=%zu -> %p status=%d", size, (void *)p, (int)rc);
  return rc;
}

/* pre: lock held; p released and unmapped. */
static void fc_phys_free_locked(fc_phys_t *p) {
  if (p->device < 0) fc_uncharge_host_locked(p->size);
  else fc_uncharge_locked(p->device, p->size);
  fc_list_del(&fc_physicals, p);
  free(p);
}

FC_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  fc_phys_t *p = (fc_phys_t *)(uintptr_t)handle;
  fc_lock();
  CUresult rc = fc_list_has(&fc_physicals, p) && !p->released ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    p->released = true;
    if (p->maps == 0) fc_phys_free_locked(p);
  }
  fc_unlock();
  fc_log("cuMemRelease handle=%p status=%d", (void *)p, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags) {
  (void)addr; /* a hint only */
  fc_lock();
  CUresult rc = CUDA_SUCCESS;
  if (!ptr || flags != 0 || size == 0 || size % FC_GRANULE != 0 || (alignment & (alignment - 1)) != 0)
    rc = CUDA_ERROR_INVALID_VALUE;
  size_t align = alignment > FC_GRANULE ? alignment : FC_GRANULE;
  uintptr_t base = 0;
  if (rc == CUDA_SUCCESS) {
    void *m = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      uintptr_t start = (uintptr_t)m;
      base = (start + align - 1) / align * align;
      if (base > start) munmap(m, base - start);
      if (start + size + align > base + size) munmap((void *)(base + size), start + size + align - (base + size));
      fc_reservation_t *r = malloc(sizeof *r);
      if (!r || !fc_list_add(&fc_reservations, r)) {
        free(r);
        munmap((void *)base, size);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
      } else {
        *r = (fc_reservation_t){.base = base, .size = size};
        *ptr = base;
      }
    }
  }
  fc_unlock();
  fc_log("cuMemAddressReserve size=%zu -> 0x%" PRIxPTR " status=%d", size, base, (int)rc);
  return rc;
}

static fc_reservation_t *fc_reservation_holding(uintptr_t p, size_t n) {
  for (size_t i = 0; i < fc_reservations.n; i++) {
    fc_reservation_t *r = fc_reservations.v[i];
    if (p >= r->base && p - r->base < r->size && n <= r->size - (p - r->base)) return r;
  }
  return NULL;
}

static bool fc_overlaps(uintptr_t a, size_t an, uintptr_t b, size_t bn) { return a < b + bn && b < a + an; }

FC_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  fc_lock();
  fc_reservation_t *r = fc_reservation_holding(ptr, size);
  CUresult rc = r && r->base == ptr && r->size == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; rc == CUDA_SUCCESS && i < fc_mappings.n; i++) {
    const fc_mapping_t *m = fc_mappings.v[i];
    if (fc_overlaps(m->addr, m->size, ptr, size)) rc = CUDA_ERROR_INVALID_VALUE; /* still mapped */
  }
  if (rc == CUDA_SUCCESS) {
    munmap((void *)r->base, r->size);
    fc_list_del(&fc_reservations, r);
    free(r);
  }
  fc_unlock();
  fc_log("cuMemAddressFree ptr=0x%llx size=%zu status=%d", (unsigned long long)ptr, size, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags) {
  fc_phys_t *p = (fc_phys_t *)(uintptr_t)handle;
  fc_lock();
  CUresult rc = CUDA_SUCCESS;
  if (flags != 0 || size == 0 || size % FC_GRANULE != 0 || offset % FC_GRANULE != 0 || ptr % FC_GRANULE != 0)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (!fc_list_has(&fc_physicals, p) || p->released)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (offset > p->size || size > p->size - offset || !fc_reservation_holding(ptr, size))
    rc = CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; rc == CUDA_SUCCESS && i < fc_mappings.n; i++) {
    const fc_mapping_t *m = fc_mappings.v[i];
    if (fc_overlaps(m->addr, m->size, ptr, size)) rc = CUDA_ERROR_INVALID_VALUE; /* already mapped */
  }
  if (rc == CUDA_SUCCESS) {
    fc_mapping_t *m = malloc(sizeof *m);
    if (!m || !fc_list_add(&fc_mappings, m)) {
      free(m);
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      *m = (fc_mapping_t){.addr = ptr, .size = size, .phys = p, .prot = PROT_NONE};
      p->maps++;
    }
  }
  fc_unlock();
  fc_log("cuMemMap ptr=0x%llx size=%zu offset=%zu handle=%p status=%d", (unsigned long long)ptr, size, offset,
         (void *)p, (int)rc);
  return rc;
}

/* Bytes of [ptr, ptr + size) covered by mappings lying wholly inside it; false when a mapping
 * crosses its edge. pre: lock held. */
static bool fc_mapped_within(uintptr_t ptr, size_t size, size_t *covered) {
  *covered = 0;
  for (size_t i = 0; i < fc_mappings.n; i++) {
    const fc_mapping_t *m = fc_mappings.v[i];
    if (!fc_overlaps(m->addr, m->size, ptr, size)) continue;
    if (m->addr < ptr || m->addr + m->size > ptr + size) return false;
    *covered += m->size;
  }
  return true;
}

FC_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  fc_lock();
  size_t covered = 0;
  CUresult rc = size > 0 && fc_reservation_holding(ptr, size) && fc_mapped_within(ptr, size, &covered) && covered == size
                    ? CUDA_SUCCESS
                    : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    for (size_t i = fc_mappings.n; i-- > 0;) {
      fc_mapping_t *m = fc_mappings.v[i];
      if (!fc_overlaps(m->addr, m->size, ptr, size)) continue;
      fc_list_del(&fc_mappings, m);
      if (--m->phys->maps == 0 && m->phys->released) fc_phys_free_locked(m->phys);
      free(m);
    }
    mprotect((void *)ptr, size, PROT_NONE);
    madvise((void *)ptr, size, MADV_DONTNEED);
  }
  fc_unlock();
  if (rc == CUDA_SUCCESS) fc_freed_hook(ptr);
  fc_log("cuMemUnmap ptr=0x%llx size=%zu status=%d", (unsigned long long)ptr, size, (int)rc);
  return rc;
}

/* Mappings side by side in one reservation form one range, as expandable segments use them. */
bool fc_vmm_range_ok_locked(uintptr_t p, size_t n, bool write) {
  if (n == 0 || p > UINTPTR_MAX - n) return false;
  const int need = write ? PROT_READ | PROT_WRITE : PROT_READ;
  for (uintptr_t at = p; at < p + n;) {
    const fc_mapping_t *hit = NULL;
    for (size_t i = 0; i < fc_mappings.n && !hit; i++) {
      const fc_mapping_t *m = fc_mappings.v[i];
      if (m->addr <= at && at - m->addr < m->size) hit = m;
    }
    if (!hit || (hit->prot & need) != need) return false;
    at = hit->addr + hit->size;
  }
  return true;
}

FC_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  fc_lock();
  size_t covered = 0;
  CUresult rc = desc && count > 0 && size > 0 && fc_mapped_within(ptr, size, &covered) && covered == size
                    ? CUDA_SUCCESS
                    : CUDA_ERROR_INVALID_VALUE;
  int prot = PROT_NONE;
  for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_ok(desc[i].location.id)) rc = CUDA_ERROR_INVALID_DEVICE;
    else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot = PROT_READ | PROT_WRITE;
    else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ) prot |= PROT_READ;
    else if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) rc = CUDA_ERROR_INVALID_VALUE;
  }
  if (rc == CUDA_SUCCESS && mprotect((void *)ptr, size, prot) != 0) rc = CUDA_ERROR_UNKNOWN;
  for (size_t i = 0; rc == CUDA_SUCCESS && i < fc_mappings.n; i++) {
    fc_mapping_t *m = fc_mappings.v[i];
    if (fc_overlaps(m->addr, m->size, ptr, size)) m->prot = prot; /* wholly inside: checked above */
  }
  fc_unlock();
  fc_log("cuMemSetAccess ptr=0x%llx size=%zu status=%d", (unsigned long long)ptr, size, (int)rc);
  return rc;
}

/* ======================================================================================== */
/* ---- stream-ordered pools ---- */

struct CUmemPoolHandle_st {
  int device;
  bool is_default;
  bool destroyed;         /* destroyed with allocations outstanding: freed with the last */
  size_t reserved, used;  /* reserved: whole granules covering used, and what was freed since */
  size_t reserved_high, used_high;
  cuuint64_t threshold;   /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
};

static struct CUmemPoolHandle_st fc_default_pools[FC_MEM_MAX_DEVICES];
static struct CUmemPoolHandle_st *fc_current_pools[FC_MEM_MAX_DEVICES]; /* NULL: the default */
static fc_list_t fc_pools; /* created pools */

struct CUmemPoolHandle_st *fc_pool_default_locked(int device) {
  if (!fc_dev_ok(device) || device >= FC_MEM_MAX_DEVICES) return NULL;
  struct CUmemPoolHandle_st *p = &fc_default_pools[device];
  p->device = device;
  p->is_default = true;
  return p;
}

struct CUmemPoolHandle_st *fc_pool_current_locked(int device) {
  struct CUmemPoolHandle_st *d = fc_pool_default_locked(device);
  return d && fc_current_pools[device] ? fc_current_pools[device] : d;
}

struct CUmemPoolHandle_st *fc_pool_valid_locked(CUmemoryPool pool) {
  for (int d = 0; d < FC_MEM_MAX_DEVICES; d++)
    if (pool == &fc_default_pools[d]) return fc_pool_default_locked(d);
  return fc_list_has(&fc_pools, pool) && !pool->destroyed ? pool : NULL;
}

CUresult fc_pool_take_locked(struct CUmemPoolHandle_st *p, size_t bytes) {
  if (bytes > SIZE_MAX - FC_GRANULE - p->used) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t need = fc_round_up(p->used + bytes);
  if (need > p->reserved) {
    CUresult rc = fc_charge_locked(p->device, need - p->reserved);
    if (rc != CUDA_SUCCESS) return rc;
    p->reserved = need;
  }
  p->used += bytes;
  if (p->used > p->used_high) p->used_high = p->used;
  if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
  return CUDA_SUCCESS;
}

/* Reserved bytes down to max(what used needs, keep). */
static void fc_pool_trim_locked(struct CUmemPoolHandle_st *p, size_t keep) {
  size_t floor = fc_round_up(p->used > keep ? p->used : keep);
  if (floor >= p->reserved) return;
  fc_uncharge_locked(p->device, p->reserved - floor);
  p->reserved = floor;
}

static void fc_pool_free_locked(struct CUmemPoolHandle_st *p) {
  fc_pool_trim_locked(p, 0);
  fc_list_del(&fc_pools, p);
  free(p);
}

void fc_pool_give_back_locked(struct CUmemPoolHandle_st *p, size_t bytes) {
  if (!p) return;
  p->used -= bytes;
  if (p->destroyed && p->used == 0) fc_pool_free_locked(p);
}

void fc_pools_trim_device_locked(int device) {
  struct CUmemPoolHandle_st *d = fc_pool_default_locked(device);
  if (d) fc_pool_trim_locked(d, 0);
  for (size_t i = 0; i < fc_pools.n; i++) {
    struct CUmemPoolHandle_st *p = fc_pools.v[i];
    if (p->device == device) fc_pool_trim_locked(p, 0);
  }
}

void fc_pools_release_locked(int device) {
  struct CUmemPoolHandle_st *d = fc_pool_default_locked(device);
  if (d) fc_pool_trim_locked(d, d->threshold > SIZE_MAX ? SIZE_MAX : (size_t)d->threshold);
  for (size_t i = 0; i < fc_pools.n; i++) {
    struct CUmemPoolHandle_st *p = fc_pools.v[i];
    if (p->device == device) fc_pool_trim_locked(p, p->threshold > SIZE_MAX ? SIZE_MAX : (size_t)p->threshold);
  }
}

FC_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS && !pool_out) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *pool_out = fc_pool_default_locked(dev);
  fc_unlock();
  fc_log("cuDeviceGetDefaultMemPool dev=%d status=%d", (int)dev, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  if (rc == CUDA_SUCCESS && !pool) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *pool = fc_pool_current_locked(dev);
  fc_unlock();
  fc_log("cuDeviceGetMemPool dev=%d status=%d", (int)dev, (int)rc);
  return rc;
}

/* cuMemAllocAsync's pool from now on; a pool of another device is refused. */
FC_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  fc_lock();
  CUresult rc = fc_device_check(dev);
  struct CUmemPoolHandle_st *p = rc == CUDA_SUCCESS ? fc_pool_valid_locked(pool) : NULL;
  if (rc == CUDA_SUCCESS && (!p || p->device != dev)) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) fc_current_pools[dev] = p->is_default ? NULL : p;
  fc_unlock();
  fc_log("cuDeviceSetMemPool dev=%d pool=%p status=%d", (int)dev, (void *)pool, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  fc_lock();
  CUresult rc = fc_device_check(props ? props->location.id : 0);
  if (rc == CUDA_SUCCESS && (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
                             props->location.type != CU_MEM_LOCATION_TYPE_DEVICE))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct CUmemPoolHandle_st *p = NULL;
  if (rc == CUDA_SUCCESS) {
    p = calloc(1, sizeof *p);
    if (!p || !fc_list_add(&fc_pools, p)) {
      free(p);
      p = NULL;
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      p->device = props->location.id;
      *pool = p;
    }
  }
  fc_unlock();
  fc_log("cuMemPoolCreate -> %p status=%d", (void *)p, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  fc_lock();
  struct CUmemPoolHandle_st *p = fc_pool_valid_locked(pool);
  CUresult rc = p && !p->is_default ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    if (fc_current_pools[p->device] == p) fc_current_pools[p->device] = NULL;
    if (p->used == 0) fc_pool_free_locked(p);
    else p->destroyed = true; /* as on the real driver: released once its allocations are freed */
  }
  fc_unlock();
  fc_log("cuMemPoolDestroy pool=%p status=%d", (void *)pool, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  fc_lock();
  struct CUmemPoolHandle_st *p = fc_pool_valid_locked(pool);
  CUresult rc = p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (p) fc_pool_trim_locked(p, minBytesToKeep);
  fc_unlock();
  fc_log("cuMemPoolTrimTo pool=%p keep=%zu status=%d", (void *)pool, minBytesToKeep, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  fc_lock();
  struct CUmemPoolHandle_st *p = fc_pool_valid_locked(pool);
  CUresult rc = p && value ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *(int *)value = 1; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
    default: rc = CUDA_ERROR_INVALID_VALUE; break;
    }
  }
  fc_unlock();
  fc_log("cuMemPoolGetAttribute pool=%p attr=%d status=%d", (void *)pool, (int)attr, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  fc_lock();
  struct CUmemPoolHandle_st *p = fc_pool_valid_locked(pool);
  CUresult rc = p && value ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->threshold = *(const cuuint64_t *)value; break;
    /* the high-water marks can only be reset, to the current value */
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (*(const cuuint64_t *)value != 0) rc = CUDA_ERROR_INVALID_VALUE;
      else p->reserved_high = p->reserved;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (*(const cuuint64_t *)value != 0) rc = CUDA_ERROR_INVALID_VALUE;
      else p->used_high = p->used;
      break;
    default: rc = CUDA_ERROR_INVALID_VALUE; break;
    }
  }
  fc_unlock();
  fc_log("cuMemPoolSetAttribute pool=%p attr=%d status=%d", (void *)pool, (int)attr, (int)rc);
  return rc;
}

/* ======================================================================================== */
/* ---- arrays ---- */

typedef struct fc_array_s {
  int device;
  size_t size;
  bool mipmapped;
} fc_array_t;

static fc_list_t fc_arrays;

static size_t fc_format_bytes(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
  default: return 0; /* the fake knows no other format */
  }
}

static size_t fc_dim(size_t n, unsigned level) {
  size_t d = (n ? n : 1) >> level;
  return d ? d : 1;
}

/* Bytes of all `levels` levels, or 0 for a descriptor the driver refuses. */
static size_t fc_array_bytes(size_t w, size_t h, size_t d, CUarray_format format, unsigned channels, unsigned levels) {
  size_t elem = fc_format_bytes(format);
  if (elem == 0 || w == 0 || (channels != 1 && channels != 2 && channels != 4) || levels == 0) return 0;
  size_t total = 0;
  for (unsigned l = 0; l < levels; l++) total += fc_dim(w, l) * fc_dim(h, l) * fc_dim(d, l) * channels * elem;
  return total;
}

static CUresult fc_array_create(const char *api, void **out, size_t size, bool mipmapped) {
  fc_lock();
  struct CUctx_st *c = NULL;
  CUresult rc = fc_require_ctx(&c);
  if (rc == CUDA_SUCCESS && (!out || size == 0)) rc = CUDA_ERROR_INVALID_VALUE;
  fc_array_t *a = NULL;
  if (rc == CUDA_SUCCESS) rc = fc_charge_locked(fc_ctx_device(c), size);
  if (rc == CUDA_SUCCESS) {
    a = malloc(sizeof *a);
    if (!a || !fc_list_add(&fc_arrays, a)) {
      free(a);
      a = NULL;
      fc_uncharge_locked(fc_ctx_device(c), size);
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      *a = (fc_array_t){.device = fc_ctx_device(c), .size = size, .mipmapped = mipmapped};
      *out = a;
    }
  }
  fc_unlock();
  fc_log("%s size=%zu -> %p status=%d", api, size, (void *)a, (int)rc);
  return rc;
}

static CUresult fc_array_destroy(const char *api, void *handle, bool mipmapped) {
  fc_array_t *a = handle;
  fc_lock();
  CUresult rc = fc_list_has(&fc_arrays, a) && a->mipmapped == mipmapped ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS) {
    fc_uncharge_locked(a->device, a->size);
    fc_list_del(&fc_arrays, a);
    free(a);
  }
  fc_unlock();
  fc_log("%s array=%p status=%d", api, handle, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuArrayCreate_v2(CUarray *array, const CUDA_ARRAY_DESCRIPTOR *desc) {
  size_t size = desc ? fc_array_bytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels, 1) : 0;
  return fc_array_create("cuArrayCreate_v2", (void **)array, size, false);
}

FC_EXPORT CUresult cuArray3DCreate_v2(CUarray *array, const CUDA_ARRAY3D_DESCRIPTOR *desc) {
  size_t size =
      desc ? fc_array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels, 1) : 0;
  return fc_array_create("cuArray3DCreate_v2", (void **)array, size, false);
}

FC_EXPORT CUresult cuArrayDestroy(CUarray array) { return fc_array_destroy("cuArrayDestroy", array, false); }

FC_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *array, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                          unsigned int levels) {
  size_t size =
      desc ? fc_array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels, levels) : 0;
  return fc_array_create("cuMipmappedArrayCreate", (void **)array, size, true);
}

FC_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  return fc_array_destroy("cuMipmappedArrayDestroy", array, true);
}

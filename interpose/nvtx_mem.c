/* SPDX-License-Identifier: Apache-2.0 */
/* NVTX's memory extension (nvToolsExtMem.h): pools that declare the regions they hand out (Umpire,
 * RMM) are followed in phases/pools.c, so snapshots draw a pool's block as its regions.
 *
 * Each NVTX extension calls InitializeInjectionNvtxExtension with its module's function slots;
 * cudasnap fills the memory module's first seven (heap register/unregister/reset, regions
 * register/resize/unregister/name) and leaves the permission calls to no-ops. Anything the program
 * passes that cudasnap cannot place (a heap outside cudasnap's memory, a region outside its heap or
 * over another, an unknown handle, a malformed batch) is one warning line (at most
 * CS_NVTX_MEM_WARNINGS per process) and is ignored: it changes nothing for the program. */
#define NVTX_NO_IMPL
#define NVTX_AS_SYSTEM_HEADER
#include <nvtx3/nvToolsExtMem.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/cs_log.h"
#include "device/contexts.h"
#include "device/passthrough_mem.h"
#include "device/recorder.h"
#include "interpose/nvtx.h"
#include "phases/phases.h"
#include "phases/pools.h"
#include "phases/ranges.h"
#include "process/lifecycle.h"
#include "record/ticks.h"

enum { CS_NVTX_MEM_WARNINGS = 10 };

/* The slots of the memory module, as nvToolsExtMem.h numbers them (NVTX3EXT_CBID_*). */
enum {
  CS_MEM_HeapRegister = 0, CS_MEM_HeapUnregister = 1, CS_MEM_HeapReset = 2, CS_MEM_RegionsRegister = 3,
  CS_MEM_RegionsResize = 4, CS_MEM_RegionsUnregister = 5, CS_MEM_RegionsName = 6, CS_MEM_SLOTS_USED = 7,
};

static void cs_nvtx_mem_warn(const char *call, const char *what, uintptr_t addr, size_t size) {
  static atomic_int warned;
  int n = atomic_fetch_add(&warned, 1);
  if (n < CS_NVTX_MEM_WARNINGS)
    cs_log_warn("%s: %s (address 0x%llx, %zu bytes): ignored%s", call, what, (unsigned long long)addr, size,
                n + 1 == CS_NVTX_MEM_WARNINGS ? "; further NVTX memory warnings are not shown" : "");
}

/* A batch's elements: count elements of at least `need` bytes each, at `stride` apart. */
static bool cs_nvtx_mem_batch_ok(const void *elements, size_t count, size_t stride, size_t need) {
  return count == 0 || (elements && stride >= need);
}

static nvtxMemHeapHandle_t cs_nvtx_HeapRegister(nvtxDomainHandle_t domain, const nvtxMemHeapDesc_t *desc) {
  (void)domain;
  if (!desc || desc->structSize < offsetof(nvtxMemHeapDesc_t, category) || desc->type != NVTX_MEM_TYPE_VIRTUAL_ADDRESS ||
      desc->typeSpecificDescSize < sizeof(nvtxMemVirtualRangeDesc_t) || !desc->typeSpecificDesc) {
    cs_nvtx_mem_warn("nvtxMemHeapRegister", "not a virtual-address heap cudasnap can read", 0, 0);
    return NULL;
  }
  const nvtxMemVirtualRangeDesc_t *r = desc->typeSpecificDesc;
  uintptr_t base = (uintptr_t)r->ptr, seg = 0;
  int device = -1;
  /* a block of the cache, or memory passed through that the snapshot draws (a stream-ordered
   * allocation, a VMM mapping, ...): the snapshot splits either */
  bool active = atomic_load(&cs_lifecycle_active), known = false;
  if (active && cs_contexts_find_segment(base, &seg)) {
    known = true;
    device = cs_contexts_thread_device();
  } else if (active) {
    known = cs_passthrough_find_drawn(base, &device);
  }
  if (!known) {
    cs_nvtx_mem_warn("nvtxMemHeapRegister", "not inside memory cudasnap draws", base, r->size);
    return NULL;
  }
  uintptr_t heap = 0;
  cs_pools_status_t st = cs_pools_heap_register(base, r->size, device, &heap);
  if (st != CS_POOLS_OK) {
    cs_nvtx_mem_warn("nvtxMemHeapRegister", cs_pools_status_text(st), base, r->size);
    return NULL;
  }
  return (nvtxMemHeapHandle_t)heap;
}

static void cs_nvtx_HeapUnregister(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap) {
  (void)domain;
  cs_pools_status_t st = cs_pools_heap_unregister((uintptr_t)heap);
  if (st != CS_POOLS_OK) cs_nvtx_mem_warn("nvtxMemHeapUnregister", cs_pools_status_text(st), (uintptr_t)heap, 0);
}

static void cs_nvtx_HeapReset(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap) {
  (void)domain;
  cs_pools_status_t st = cs_pools_heap_reset((uintptr_t)heap);
  if (st != CS_POOLS_OK) cs_nvtx_mem_warn("nvtxMemHeapReset", cs_pools_status_text(st), (uintptr_t)heap, 0);
}

static void cs_nvtx_RegionsRegister(nvtxDomainHandle_t domain, const nvtxMemRegionsRegisterBatch_t *b) {
  (void)domain;
  if (!b || b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS ||
      !cs_nvtx_mem_batch_ok(b->regionDescElements, b->regionCount, b->regionDescElementSize,
                            sizeof(nvtxMemVirtualRangeDesc_t))) {
    cs_nvtx_mem_warn("nvtxMemRegionsRegister", "not a batch of virtual-address ranges", 0, 0);
    return;
  }
  uint32_t stack = cs_record_stack();
  uint64_t now = cs_ticks_now();
  for (size_t i = 0; i < b->regionCount; i++) {
    const nvtxMemVirtualRangeDesc_t *r =
        (const void *)((const char *)b->regionDescElements + i * b->regionDescElementSize);
    uintptr_t addr = (uintptr_t)r->ptr;
    cs_pools_status_t st = cs_pools_region_register((uintptr_t)b->heap, addr, r->size, stack, now);
    if (st != CS_POOLS_OK) cs_nvtx_mem_warn("nvtxMemRegionsRegister", cs_pools_status_text(st), addr, r->size);
    if (b->regionHandleElementsOut) b->regionHandleElementsOut[i] = (nvtxMemRegionHandle_t)addr;
  }
}

static void cs_nvtx_RegionsResize(nvtxDomainHandle_t domain, const nvtxMemRegionsResizeBatch_t *b) {
  (void)domain;
  if (!b || b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS ||
      !cs_nvtx_mem_batch_ok(b->regionDescElements, b->regionDescCount, b->regionDescElementSize,
                            sizeof(nvtxMemVirtualRangeDesc_t))) {
    cs_nvtx_mem_warn("nvtxMemRegionsResize", "not a batch of virtual-address ranges", 0, 0);
    return;
  }
  for (size_t i = 0; i < b->regionDescCount; i++) {
    const nvtxMemVirtualRangeDesc_t *r =
        (const void *)((const char *)b->regionDescElements + i * b->regionDescElementSize);
    cs_pools_status_t st = cs_pools_region_resize((uintptr_t)r->ptr, r->size);
    if (st != CS_POOLS_OK) cs_nvtx_mem_warn("nvtxMemRegionsResize", cs_pools_status_text(st), (uintptr_t)r->ptr, r->size);
  }
}

/* A region reference: its pointer, or the handle cudasnap gave out (the same address). */
static uintptr_t cs_nvtx_region_ref(uint32_t type, nvtxMemRegionRef_t ref) {
  return type == NVTX_MEM_REGION_REF_TYPE_HANDLE ? (uintptr_t)ref.handle : (uintptr_t)ref.pointer;
}

static void cs_nvtx_RegionsUnregister(nvtxDomainHandle_t domain, const nvtxMemRegionsUnregisterBatch_t *b) {
  (void)domain;
  if (!b || !cs_nvtx_mem_batch_ok(b->refElements, b->refCount, b->refElementSize, sizeof(nvtxMemRegionRef_t))) {
    cs_nvtx_mem_warn("nvtxMemRegionsUnregister", "not a batch of region references", 0, 0);
    return;
  }
  for (size_t i = 0; i < b->refCount; i++) {
    const nvtxMemRegionRef_t *ref = (const void *)((const char *)b->refElements + i * b->refElementSize);
    uintptr_t addr = cs_nvtx_region_ref(b->refType, *ref);
    cs_pools_status_t st = cs_pools_region_unregister(addr);
    if (st != CS_POOLS_OK) cs_nvtx_mem_warn("nvtxMemRegionsUnregister", cs_pools_status_text(st), addr, 0);
  }
}

static void cs_nvtx_RegionsName(nvtxDomainHandle_t domain, const nvtxMemRegionsNameBatch_t *b) {
  (void)domain;
  if (!b || !cs_nvtx_mem_batch_ok(b->regionElements, b->regionCount, b->regionElementSize,
                                  sizeof(nvtxMemRegionNameDesc_t))) {
    cs_nvtx_mem_warn("nvtxMemRegionsName", "not a batch of region names", 0, 0);
    return;
  }
  for (size_t i = 0; i < b->regionCount; i++) {
    const nvtxMemRegionNameDesc_t *d = (const void *)((const char *)b->regionElements + i * b->regionElementSize);
    uintptr_t addr = cs_nvtx_region_ref(d->regionRefType, d->region);
    uint32_t name = 0;
    if (d->nameType == NVTX_MESSAGE_TYPE_ASCII && d->name.ascii) name = cs_phases_name(d->name.ascii, SIZE_MAX);
    else if (d->nameType == NVTX_MESSAGE_TYPE_REGISTERED)
      name = cs_phases_name(cs_phases_name_text((uint32_t)(uintptr_t)d->name.registered), SIZE_MAX);
    cs_pools_status_t st = cs_pools_region_name(addr, name);
    if (st != CS_POOLS_OK) cs_nvtx_mem_warn("nvtxMemRegionsName", cs_pools_status_text(st), addr, 0);
  }
}

/* Called by each NVTX copy's memory extension at its first call. 1: attached. */
__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info);
int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info) {
  if (!cs_nvtx_library_preloaded() || !cs_nvtx_attached() || !info || info->moduleId != NVTX_EXT_MODULEID_MEM ||
      info->compatId != NVTX_EXT_COMPATID_MEM || info->segmentsCount < 1 || !info->segments ||
      info->segments[0].slotCount < CS_MEM_SLOTS_USED || !info->segments[0].functionSlots || !cs_phases_init())
    return 0;
  cs_ranges_install_fork_handler();
  intptr_t *slots = info->segments[0].functionSlots;
  slots[CS_MEM_HeapRegister] = (intptr_t)cs_nvtx_HeapRegister;
  slots[CS_MEM_HeapUnregister] = (intptr_t)cs_nvtx_HeapUnregister;
  slots[CS_MEM_HeapReset] = (intptr_t)cs_nvtx_HeapReset;
  slots[CS_MEM_RegionsRegister] = (intptr_t)cs_nvtx_RegionsRegister;
  slots[CS_MEM_RegionsResize] = (intptr_t)cs_nvtx_RegionsResize;
  slots[CS_MEM_RegionsUnregister] = (intptr_t)cs_nvtx_RegionsUnregister;
  slots[CS_MEM_RegionsName] = (intptr_t)cs_nvtx_RegionsName;
  return 1;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Out-of-memory answers past the cache (contract in device/passthrough_oom.h). */
#include "device/passthrough_oom.h"

#include "device/contexts.h"
#include "device/passthrough_mem.h"
#include "device/recorder.h"
#include "device/registry.h"
#include "real/real.h"

bool cs_passthrough_oom_release(int device) { return cs_contexts_release_device(device, NULL); }

typedef struct cs_passthrough_meminfo_s {
  bool asked;
  size_t free_bytes, total;
} cs_passthrough_meminfo_t;

static void cs_passthrough_ask(void *ctx, cs_allocator_t *a) {
  cs_passthrough_meminfo_t *m = ctx;
  if (!m->asked) m->asked = cs_allocator_mem_info(a, false, &m->free_bytes, &m->total) == 0;
}

/* The device's free and total bytes as the driver says them now (PyTorch's device_free): in the
 * current context when it is the device's, else in a context of the device cudasnap serves; 0 when
 * there is none to ask in (no context is made for it). */
static cs_passthrough_meminfo_t cs_passthrough_device_mem(int device) {
  CUdevice current = -1;
  PFN_cuCtxGetDevice_v2000 get_device = CS_REAL_FN(cuCtxGetDevice, PFN_cuCtxGetDevice_v2000);
  PFN_cuMemGetInfo_v3020 mem_info = CS_REAL_FN(cuMemGetInfo_v2, PFN_cuMemGetInfo_v3020);
  cs_passthrough_meminfo_t m = {.asked = false};
  if (get_device && get_device(&current) == CUDA_SUCCESS && current == device && mem_info &&
      mem_info(&m.free_bytes, &m.total) == CUDA_SUCCESS) {
    m.asked = true;
    return m;
  }
  m = (cs_passthrough_meminfo_t){.asked = false};
  cs_registry_for_each_allocator(device, cs_passthrough_ask, &m);
  return m.asked ? m : (cs_passthrough_meminfo_t){.asked = false};
}

/* The device's cache: its contexts' caches together (the largest free block of any). */
static void cs_passthrough_add_cache(void *ctx, cs_allocator_t *a) {
  cs_cache_figures_t *sum = ctx, one;
  cs_allocator_cache_figures(a, &one);
  sum->reserved += one.reserved;
  sum->allocated += one.allocated;
  sum->small_free += one.small_free;
  if (one.largest_free > sum->largest_free) sum->largest_free = one.largest_free;
}

void cs_passthrough_oom_record(cs_passthrough_kind_t kind, int device, size_t size, uintptr_t stream) {
  uint32_t stack = cs_record_stack();
  cs_passthrough_meminfo_t mem = {.asked = false};
  if (device >= 0) mem = cs_passthrough_device_mem(device);
  cs_cache_figures_t cache = {0};
  if (device >= 0) cs_registry_for_each_allocator(device, cs_passthrough_add_cache, &cache);
  cs_passthrough_record_oom(kind, device, size, stream, mem.free_bytes, mem.total, stack,
                            device >= 0 ? &cache : NULL);
}

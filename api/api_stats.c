/* SPDX-License-Identifier: Apache-2.0 */
/* The statistics part of the opt-in API of include/cudasnap.h (api_dump.c has the snapshots),
 * over the allocators registered in device/registry.c. Each call combines the allocators of one device
 * (one per CUDA context on it). */
#define CUDASNAP_BUILDING_LIBRARY 1
#include "include/cudasnap.h"

#include <string.h>

#include "allocator/allocator.h"
#include "api/device_arg.h"
#include "device/registry.h"
#include "process/runtime.h"
#include "stats/stats.h"

_Static_assert(CUDASNAP_MEMORY_STATS_KEYS == CS_STATS_KEY_COUNT, "public key count");

static void cs_api_merge_stats(void *ctx, cs_allocator_t *a) {
  cs_stats_t one;
  cs_allocator_get_stats(a, &one);
  cs_stats_merge(ctx, &one);
}

/* The statistics of a device: zeros (with the configured max_split_size) where nothing was
 * allocated yet. Returns false for a bad device argument. */
static bool cs_api_device_stats(int device, cs_stats_t *out) {
  const cs_options_t *opts = cs_runtime_options();
  cs_stats_init(out, cs_alloc_conf_max_split_stat(&opts->alloc));
  int d = cs_device_arg_resolve(device);
  if (d < 0) return false;
  cs_registry_for_each_allocator(d, cs_api_merge_stats, out);
  out->num_ooms += cs_registry_passthrough_ooms(d); /* out of memory past the cache, as PyTorch's counts */
  return true;
}

int cudasnap_memory_stats(int device, cudasnap_stat_t *out, size_t cap) {
  cs_stats_t stats;
  if (!cs_api_device_stats(device, &stats)) return -1;
  cs_stat_kv_t kv[CS_STATS_KEY_COUNT];
  size_t n = cs_stats_flatten(&stats, kv, CS_STATS_KEY_COUNT);
  for (size_t i = 0; i < n && i < cap; i++) out[i] = (cudasnap_stat_t){kv[i].key, kv[i].value};
  return (int)n;
}

int64_t cudasnap_memory_allocated(int device) {
  cs_stats_t s;
  return cs_api_device_stats(device, &s) ? s.allocated_bytes[CS_STAT_ALL].current : 0;
}

int64_t cudasnap_max_memory_allocated(int device) {
  cs_stats_t s;
  return cs_api_device_stats(device, &s) ? s.allocated_bytes[CS_STAT_ALL].peak : 0;
}

int64_t cudasnap_memory_reserved(int device) {
  cs_stats_t s;
  return cs_api_device_stats(device, &s) ? s.reserved_bytes[CS_STAT_ALL].current : 0;
}

int64_t cudasnap_max_memory_reserved(int device) {
  cs_stats_t s;
  return cs_api_device_stats(device, &s) ? s.reserved_bytes[CS_STAT_ALL].peak : 0;
}

static void cs_api_reset_peak(void *ctx, cs_allocator_t *a) {
  (void)ctx;
  cs_allocator_reset_peak_stats(a);
}

static void cs_api_reset_accumulated(void *ctx, cs_allocator_t *a) {
  (void)ctx;
  cs_allocator_reset_accumulated_stats(a);
}

void cudasnap_reset_peak_memory_stats(int device) {
  cs_registry_for_each_allocator(cs_device_arg_resolve(device), cs_api_reset_peak, NULL);
}

void cudasnap_reset_accumulated_memory_stats(int device) {
  int d = cs_device_arg_resolve(device);
  cs_registry_for_each_allocator(d, cs_api_reset_accumulated, NULL);
  if (d >= 0) cs_registry_reset_passthrough_ooms(d);
}

static void cs_api_empty_cache(void *ctx, cs_allocator_t *a) {
  int *status = ctx;
  int rc = cs_allocator_empty_cache(a);
  if (*status == 0) *status = rc;
}

int cudasnap_empty_cache(int device) {
  int status = 0;
  cs_registry_for_each_allocator(cs_device_arg_resolve(device), cs_api_empty_cache, &status);
  return status;
}

typedef struct cs_api_meminfo_s {
  bool adjusted;
  bool found;
  int status;
  size_t free_bytes;   /* the device's free bytes (one query) plus every context's releasable segments */
  size_t total_bytes;
} cs_api_meminfo_t;

static void cs_api_meminfo(void *ctx, cs_allocator_t *a) {
  cs_api_meminfo_t *m = ctx;
  if (!m->found) {
    m->found = true;
    m->status = cs_allocator_mem_info(a, false, &m->free_bytes, &m->total_bytes);
  }
  if (m->status == 0 && m->adjusted) m->free_bytes += cs_allocator_releasable_bytes(a);
}

int cudasnap_get_memory_info(int device, size_t *free_bytes, size_t *total_bytes) {
  cs_api_meminfo_t m = {.adjusted = cs_runtime_options()->meminfo == CS_MEMINFO_ADJUSTED};
  cs_registry_for_each_allocator(cs_device_arg_resolve(device), cs_api_meminfo, &m);
  if (!m.found || m.status != 0) return -1;
  if (m.free_bytes > m.total_bytes) m.free_bytes = m.total_bytes;
  if (free_bytes) *free_bytes = m.free_bytes;
  if (total_bytes) *total_bytes = m.total_bytes;
  return 0;
}

size_t cudasnap_memory_summary(int device, int abbreviated, char *buf, size_t len) {
  cs_stats_t stats;
  int d = cs_device_arg_resolve(device);
  cs_api_device_stats(device, &stats);
  return cs_stats_summary(&stats, d < 0 ? device : d, abbreviated != 0, buf, len);
}

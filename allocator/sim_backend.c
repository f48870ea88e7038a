/* SPDX-License-Identifier: Apache-2.0 */
#include "allocator/sim_backend.h"

#include <string.h>

#include "common/cs_error.h"

#define CS_SIM_BASE ((uintptr_t)0x7f0000000000)
#define CS_SIM_ALIGN ((uintptr_t)2 << 20)

void cs_sim_device_init(cs_sim_device_t *dev, size_t capacity) {
  memset(dev, 0, sizeof *dev);
  dev->capacity = capacity;
  dev->next_addr = CS_SIM_BASE;
}

static int cs_sim_segment_alloc(void *self, size_t size, uintptr_t *addr) {
  cs_sim_device_t *dev = self;
  if (size > dev->capacity - dev->used) return -CS_ENOMEM;
  *addr = dev->next_addr;
  dev->next_addr += (size + CS_SIM_ALIGN - 1) & ~(CS_SIM_ALIGN - 1);
  dev->used += size;
  if (dev->used > dev->peak_used) dev->peak_used = dev->used;
  dev->segment_allocs++;
  return 0;
}

static int cs_sim_segment_free(void *self, uintptr_t addr, size_t size) {
  cs_sim_device_t *dev = self;
  (void)addr;
  dev->used -= size;
  dev->segment_frees++;
  return 0;
}

static int cs_sim_mem_info(void *self, size_t *free_bytes, size_t *total_bytes) {
  cs_sim_device_t *dev = self;
  *free_bytes = dev->capacity - dev->used;
  *total_bytes = dev->capacity;
  return 0;
}

static int cs_sim_synchronize(void *self) {
  ((cs_sim_device_t *)self)->syncs++;
  return 0;
}

/* Work completes as soon as it is issued: events are always complete. */
static int cs_sim_event_create(void *self, uintptr_t *event) {
  (void)self;
  *event = 1;
  return 0;
}

static int cs_sim_event_op(void *self, uintptr_t event) {
  (void)self, (void)event;
  return 0;
}

static int cs_sim_event_record(void *self, uintptr_t event, uintptr_t stream) {
  (void)self, (void)event, (void)stream;
  return 0;
}

static bool cs_sim_is_capturing(void *self) {
  (void)self;
  return false;
}

static size_t cs_sim_fence_streams(void *self, uintptr_t *streams, size_t cap) {
  (void)self;
  if (cap > 0) streams[0] = 0; /* the legacy stream orders everything */
  return 1;
}

static const cs_backend_ops_t cs_sim_ops = {
    .segment_alloc = cs_sim_segment_alloc,
    .segment_free = cs_sim_segment_free,
    .mem_info = cs_sim_mem_info,
    .synchronize = cs_sim_synchronize,
    .event_create = cs_sim_event_create,
    .event_record = cs_sim_event_record,
    .event_query = cs_sim_event_op,
    .event_destroy = cs_sim_event_op,
    .is_capturing = cs_sim_is_capturing,
    .fence_streams = cs_sim_fence_streams,
};

cs_backend_t cs_sim_backend(cs_sim_device_t *dev) { return (cs_backend_t){.ops = &cs_sim_ops, .self = dev}; }

/* SPDX-License-Identifier: Apache-2.0 */
/* A simulated device behind cs_backend_t: address space only, no memory behind it.
 *
 * It hands out 2 MiB-aligned fake device addresses up to a capacity, completes every event at
 * once and never captures. The example program, the benchmarks and trace replay use it to run the
 * allocator where there is no GPU. Not thread-safe: one allocator per simulated device. */
#ifndef CS_SIM_BACKEND_H
#define CS_SIM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "allocator/backend.h"

typedef struct cs_sim_device_s {
  size_t capacity;       /* bytes the device has */
  size_t used;           /* bytes in live segments */
  size_t peak_used;
  uintptr_t next_addr;   /* addresses are never reused, so stale pointers cannot alias */
  uint64_t segment_allocs, segment_frees, syncs;
} cs_sim_device_t;

void cs_sim_device_init(cs_sim_device_t *dev, size_t capacity);

/* A backend over dev. */
cs_backend_t cs_sim_backend(cs_sim_device_t *dev);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* cs_pools: pools that declare their sub-allocations through NVTX's memory API (Umpire, RMM):
 * heaps (a pool's memory: nvtxMemHeapRegister) and the regions handed out inside them
 * (nvtxMemRegionsRegister), followed through resizes, unregistrations and resets, so that a snapshot
 * can draw a pool's block as the regions inside it.
 *
 * Process-wide, behind one mutex of its own (never an allocator's): registrations come from the
 * program's threads, snapshots read a copy. Bad input (a region outside its heap, overlapping
 * another, an unknown handle) is refused with a reason, never stored. Bounded: at most
 * CS_POOLS_MAX_HEAPS heaps and CS_POOLS_MAX_REGIONS live regions, each region about 80 bytes of
 * host memory (its record and its tree node: 80 MiB at the bound). */
#ifndef CS_POOLS_H
#define CS_POOLS_H

#include <stddef.h>
#include <stdint.h>

enum { CS_POOLS_MAX_HEAPS = 1024, CS_POOLS_MAX_REGIONS = 1 << 20 };

typedef enum cs_pools_status_e {
  CS_POOLS_OK = 0,
  CS_POOLS_UNKNOWN_HEAP,      /* a handle cudasnap did not give out, or already unregistered */
  CS_POOLS_UNKNOWN_REGION,    /* no region starts at that address / has that handle */
  CS_POOLS_OUTSIDE_HEAP,      /* the region is not inside its heap */
  CS_POOLS_OVERLAP,           /* it overlaps a live region of its heap (or heaps overlap) */
  CS_POOLS_FULL,              /* past the bounds above, or no host memory */
} cs_pools_status_t;

const char *cs_pools_status_text(cs_pools_status_t status);

/* A heap over [base, base + size) of `device`; *heap gets its handle (never 0). */
cs_pools_status_t cs_pools_heap_register(uintptr_t base, size_t size, int device, uintptr_t *heap);
cs_pools_status_t cs_pools_heap_unregister(uintptr_t heap); /* and its regions */
cs_pools_status_t cs_pools_heap_reset(uintptr_t heap);      /* its regions only */

/* A region [addr, addr + size) of heap (0: the heap that contains it), registered now (ticks) from
 * the stack stack_id. Its handle is its address. */
cs_pools_status_t cs_pools_region_register(uintptr_t heap, uintptr_t addr, size_t size, uint32_t stack_id,
                                           uint64_t ticks);
cs_pools_status_t cs_pools_region_resize(uintptr_t addr, size_t size);
cs_pools_status_t cs_pools_region_unregister(uintptr_t addr);
cs_pools_status_t cs_pools_region_name(uintptr_t addr, uint32_t name_id); /* a phases/phases.h name */

/* A frozen copy, heaps by address, each with its live regions by address. */
typedef struct cs_pool_region_s {
  uintptr_t addr;
  size_t size;
  uint32_t stack_id;
  uint32_t name_id; /* 0: unnamed */
  uint64_t ticks;   /* when it was registered */
} cs_pool_region_t;

typedef struct cs_pool_heap_s {
  uintptr_t base;
  size_t size;
  int device;
  uint64_t ticks;         /* when it was registered */
  size_t first_region;    /* into regions */
  size_t region_count;
} cs_pool_heap_t;

typedef struct cs_pool_list_s {
  cs_pool_heap_t *heaps;
  size_t heap_count;
  cs_pool_region_t *regions;
  size_t region_count;
} cs_pool_list_t;

/* 0; -1 without host memory; 1 when the pools' lock was not had before deadline_ns
 * (CLOCK_MONOTONIC; UINT64_MAX: wait for it), as the process ends with its holder stopped. The
 * list is empty but for 0. */
int cs_pools_copy(cs_pool_list_t *out, uint64_t deadline_ns);
void cs_pool_list_free(cs_pool_list_t *list);

/* Forget everything (tests). */
void cs_pools_clear(void);

/* In a fork child: the parent's pools are not the child's (its lock may have been held). */
void cs_pools_postfork_child(void);

#endif

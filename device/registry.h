/* SPDX-License-Identifier: Apache-2.0 */
/* The caching allocators that serve each device (one per CUDA context on it), and the
 * out-of-memory answers the driver gave the program past them: what the opt-in API, the live
 * record and the out-of-memory path read per device. contexts.c registers an allocator as its
 * context comes into use and keeps it for the life of the process. All functions are thread-safe. */
#ifndef CS_REGISTRY_H
#define CS_REGISTRY_H

#include <stdint.h>

#include "allocator/allocator.h"

enum {
  CS_MAX_DEVICES = 64,
  CS_MAX_CONTEXTS_PER_DEVICE = 8, /* contexts of one device profiled at once */
};

/* Register a for `device`. Returns 0, or -CS_EINVAL for a bad ordinal or a full device slot. */
int cs_registry_add_allocator(int device, cs_allocator_t *a);

/* Forget a; the caller destroys it afterwards. */
void cs_registry_remove_allocator(cs_allocator_t *a);

/* Call fn for every allocator of `device`, under the registry's read lock (fn must not add or
 * remove allocators). Returns how many there were. */
typedef void (*cs_registry_allocator_fn)(void *ctx, cs_allocator_t *a);
int cs_registry_for_each_allocator(int device, cs_registry_allocator_fn fn, void *ctx);

/* The out-of-memory answers the driver gave the program past the cache (memory passed through,
 * device/passthrough_mem.c), per device: num_ooms counts them with the allocators' own, wherever
 * it is read (the API, snapshots, the live record). Reset as num_ooms is (reset_accumulated);
 * device -1 resets every device (a fork child). Lock-free. */
void cs_registry_count_passthrough_oom(int device);
int64_t cs_registry_passthrough_ooms(int device);
void cs_registry_reset_passthrough_ooms(int device);

#endif

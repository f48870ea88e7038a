/* SPDX-License-Identifier: Apache-2.0 */
/* The allocators of each device and their out-of-memory answers past the cache (contract in
 * device/registry.h). */
#include "device/registry.h"

#include <pthread.h>
#include <stdatomic.h>

#include "common/cs_error.h"

static pthread_rwlock_t cs_registry_lock = PTHREAD_RWLOCK_INITIALIZER;
static cs_allocator_t *cs_registry[CS_MAX_DEVICES][CS_MAX_CONTEXTS_PER_DEVICE];

int cs_registry_add_allocator(int device, cs_allocator_t *a) {
  if (device < 0 || device >= CS_MAX_DEVICES || !a) return -CS_EINVAL;
  int rc = -CS_EINVAL;
  pthread_rwlock_wrlock(&cs_registry_lock);
  for (int i = 0; i < CS_MAX_CONTEXTS_PER_DEVICE; i++) {
    if (cs_registry[device][i]) continue;
    cs_registry[device][i] = a;
    rc = 0;
    break;
  }
  pthread_rwlock_unlock(&cs_registry_lock);
  return rc;
}

void cs_registry_remove_allocator(cs_allocator_t *a) {
  pthread_rwlock_wrlock(&cs_registry_lock);
  for (int d = 0; d < CS_MAX_DEVICES; d++)
    for (int i = 0; i < CS_MAX_CONTEXTS_PER_DEVICE; i++)
      if (cs_registry[d][i] == a) cs_registry[d][i] = NULL;
  pthread_rwlock_unlock(&cs_registry_lock);
}

int cs_registry_for_each_allocator(int device, cs_registry_allocator_fn fn, void *ctx) {
  if (device < 0 || device >= CS_MAX_DEVICES) return 0;
  int n = 0;
  pthread_rwlock_rdlock(&cs_registry_lock);
  for (int i = 0; i < CS_MAX_CONTEXTS_PER_DEVICE; i++) {
    cs_allocator_t *a = cs_registry[device][i];
    if (!a) continue;
    fn(ctx, a);
    n++;
  }
  pthread_rwlock_unlock(&cs_registry_lock);
  return n;
}

/* ---- out-of-memory answers past the cache ---- */

static _Atomic int64_t cs_registry_ooms[CS_MAX_DEVICES];

void cs_registry_count_passthrough_oom(int device) {
  if (device < 0 || device >= CS_MAX_DEVICES) return;
  atomic_fetch_add_explicit(&cs_registry_ooms[device], 1, memory_order_relaxed);
}

int64_t cs_registry_passthrough_ooms(int device) {
  if (device < 0 || device >= CS_MAX_DEVICES) return 0;
  return atomic_load_explicit(&cs_registry_ooms[device], memory_order_relaxed);
}

void cs_registry_reset_passthrough_ooms(int device) {
  for (int d = 0; d < CS_MAX_DEVICES; d++)
    if (device < 0 || d == device) atomic_store_explicit(&cs_registry_ooms[d], 0, memory_order_relaxed);
}

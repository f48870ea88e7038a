/* SPDX-License-Identifier: Apache-2.0 */
/* The program's stream-ordered pools (contract in device/mempools.h). */
#include "device/mempools.h"

#include <pthread.h>
#include <stdbool.h>

enum { CS_MEMPOOLS_MAX = 256 };

typedef struct cs_mempool_s {
  uintptr_t pool;
  int device;
} cs_mempool_t;

static pthread_mutex_t cs_mempools_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_mempool_t cs_mempools[CS_MEMPOOLS_MAX];
static size_t cs_mempools_n;

void cs_mempools_used(uintptr_t pool, int device) {
  pthread_mutex_lock(&cs_mempools_lock);
  bool known = false;
  for (size_t i = 0; i < cs_mempools_n && !known; i++) known = cs_mempools[i].pool == pool;
  if (!known && cs_mempools_n < CS_MEMPOOLS_MAX)
    cs_mempools[cs_mempools_n++] = (cs_mempool_t){.pool = pool, .device = device};
  pthread_mutex_unlock(&cs_mempools_lock);
}

void cs_mempools_destroyed(uintptr_t pool) {
  pthread_mutex_lock(&cs_mempools_lock);
  for (size_t i = 0; i < cs_mempools_n; i++)
    if (cs_mempools[i].pool == pool) {
      cs_mempools[i] = cs_mempools[--cs_mempools_n];
      break;
    }
  pthread_mutex_unlock(&cs_mempools_lock);
}

size_t cs_mempools_of(int device, uintptr_t *out, size_t cap) {
  size_t n = 0;
  pthread_mutex_lock(&cs_mempools_lock);
  for (size_t i = 0; i < cs_mempools_n && n < cap; i++)
    if (cs_mempools[i].device == device) out[n++] = cs_mempools[i].pool;
  pthread_mutex_unlock(&cs_mempools_lock);
  return n;
}

size_t cs_mempools_count(void) {
  pthread_mutex_lock(&cs_mempools_lock);
  size_t n = cs_mempools_n;
  pthread_mutex_unlock(&cs_mempools_lock);
  return n;
}

void cs_mempools_prefork(void) { pthread_mutex_lock(&cs_mempools_lock); }

void cs_mempools_postfork(bool child) {
  if (!child) {
    pthread_mutex_unlock(&cs_mempools_lock);
    return;
  }
  pthread_mutex_init(&cs_mempools_lock, NULL);
  cs_mempools_n = 0;
}

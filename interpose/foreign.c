#include "interpose/foreign.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct cs_foreign_s {
  struct cs_foreign_s *next;
  uintptr_t key;
  size_t size;
  int device;
  cs_foreign_kind_t kind;
} cs_foreign_t;

enum { CS_FOREIGN_BUCKETS = 1024 };

static pthread_mutex_t cs_foreign_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_foreign_t *cs_foreign_table[CS_FOREIGN_BUCKETS];
static size_t cs_foreign_count[CS_FOREIGN_KINDS];
static size_t cs_foreign_bytes[CS_FOREIGN_KINDS];

static size_t cs_foreign_bucket(uintptr_t key) {
  return (size_t)(((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 54) % CS_FOREIGN_BUCKETS;
}

void cs_foreign_add(cs_foreign_kind_t kind, uintptr_t key, size_t size, int device) {
  cs_foreign_t *e = malloc(sizeof *e);
  if (!e) return; /* not recorded; the program's call already succeeded */
  *e = (cs_foreign_t){.key = key, .size = size, .device = device, .kind = kind};
  pthread_mutex_lock(&cs_foreign_lock);
  size_t b = cs_foreign_bucket(key);
  e->next = cs_foreign_table[b];
  cs_foreign_table[b] = e;
  cs_foreign_count[kind]++;
  cs_foreign_bytes[kind] += size;
  pthread_mutex_unlock(&cs_foreign_lock);
}

bool cs_foreign_remove(cs_foreign_kind_t kind, uintptr_t key) {
  pthread_mutex_lock(&cs_foreign_lock);
  cs_foreign_t **link = &cs_foreign_table[cs_foreign_bucket(key)];
  while (*link && !((*link)->key == key && (*link)->kind == kind)) link = &(*link)->next;
  cs_foreign_t *e = *link;
  if (e) {
    *link = e->next;
    cs_foreign_count[kind]--;
    cs_foreign_bytes[kind] -= e->size;
  }
  pthread_mutex_unlock(&cs_foreign_lock);
  free(e);
  return e != NULL;
}

void cs_foreign_totals(cs_foreign_kind_t kind, size_t *count, size_t *bytes) {
  pthread_mutex_lock(&cs_foreign_lock);
  *count = cs_foreign_count[kind];
  *bytes = cs_foreign_bytes[kind];
  pthread_mutex_unlock(&cs_foreign_lock);
}

const char *cs_foreign_kind_name(cs_foreign_kind_t kind) {
  static const char *const names[CS_FOREIGN_KINDS] = {
      [CS_FOREIGN_DEVICE] = "device",         [CS_FOREIGN_MANAGED] = "managed",
      [CS_FOREIGN_ASYNC] = "async",           [CS_FOREIGN_HOST] = "host_pinned",
      [CS_FOREIGN_HOST_REGISTERED] = "host_registered", [CS_FOREIGN_ARRAY] = "array",
      [CS_FOREIGN_VMM_HANDLE] = "vmm_physical", [CS_FOREIGN_VMM_RESERVE] = "vmm_reserved",
      [CS_FOREIGN_VMM_MAPPING] = "vmm_mapping", [CS_FOREIGN_IPC] = "ipc_imported",
  };
  return kind < CS_FOREIGN_KINDS ? names[kind] : "unknown";
}

void cs_foreign_prefork(void) { pthread_mutex_lock(&cs_foreign_lock); }

void cs_foreign_postfork(bool child) {
  if (!child) {
    pthread_mutex_unlock(&cs_foreign_lock);
    return;
  }
  pthread_mutex_init(&cs_foreign_lock, NULL);
  for (size_t b = 0; b < CS_FOREIGN_BUCKETS; b++) {
    while (cs_foreign_table[b]) {
      cs_foreign_t *e = cs_foreign_table[b];
      cs_foreign_table[b] = e->next;
      free(e);
    }
  }
  for (int k = 0; k < CS_FOREIGN_KINDS; k++) cs_foreign_count[k] = cs_foreign_bytes[k] = 0;
}

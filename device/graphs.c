/* SPDX-License-Identifier: Apache-2.0 */
/* Graph memory nodes followed from instantiation to launch (contract in device/graphs.h). */
#include "device/graphs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "device/passthrough_mem.h"
#include "real/cuda_api.h"
#include "real/real.h"

enum { CS_GRAPHS_SITE_BUCKETS = 1024, CS_GRAPHS_MAX_SITES = 65536 };

typedef struct cs_graph_site_s {
  struct cs_graph_site_s *next;
  uintptr_t addr;
  uint32_t stack;
} cs_graph_site_t;

typedef struct cs_graph_alloc_s {
  uintptr_t addr;
  size_t size;
  int device;
  uint32_t stack;
} cs_graph_alloc_t;

/* An instantiation with memory nodes: what its launch leaves live, and what it frees of others. */
typedef struct cs_graph_exec_s {
  struct cs_graph_exec_s *next;
  uintptr_t exec;
  bool auto_free;
  size_t bytes; /* of every allocation node: what a launch (or an upload) asks the pool for */
  cs_graph_alloc_t *allocs;
  size_t alloc_count;
  uintptr_t *frees;
  size_t free_count;
} cs_graph_exec_t;

/* Lock order: this lock, then passthrough_mem.c's (a launch records under it). */
static pthread_mutex_t cs_graphs_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_graph_site_t *cs_graphs_sites[CS_GRAPHS_SITE_BUCKETS];
static size_t cs_graphs_site_count;
static cs_graph_exec_t *cs_graphs_execs;
static atomic_size_t cs_graphs_exec_count; /* read without the lock by every launch */

static size_t cs_graphs_bucket(uintptr_t addr) {
  return (size_t)(((uint64_t)addr * UINT64_C(0x9E3779B97F4A7C15)) >> 54) % CS_GRAPHS_SITE_BUCKETS;
}

void cs_graphs_node_site(uintptr_t addr, uint32_t stack) {
  pthread_mutex_lock(&cs_graphs_lock);
  cs_graph_site_t **bucket = &cs_graphs_sites[cs_graphs_bucket(addr)], *s = *bucket;
  while (s && s->addr != addr) s = s->next;
  if (s) {
    s->stack = stack; /* a node at an address an earlier graph used */
  } else if (cs_graphs_site_count < CS_GRAPHS_MAX_SITES && (s = malloc(sizeof *s)) != NULL) {
    *s = (cs_graph_site_t){.next = *bucket, .addr = addr, .stack = stack};
    *bucket = s;
    cs_graphs_site_count++;
  } /* else drawn with the instantiating call's stack */
  pthread_mutex_unlock(&cs_graphs_lock);
}

static uint32_t cs_graphs_site_locked(uintptr_t addr, uint32_t otherwise) {
  for (const cs_graph_site_t *s = cs_graphs_sites[cs_graphs_bucket(addr)]; s; s = s->next)
    if (s->addr == addr) return s->stack;
  return otherwise;
}

static void cs_graph_exec_free(cs_graph_exec_t *x) {
  if (!x) return;
  free(x->allocs);
  free(x->frees);
  free(x);
}

/* The graph's memory nodes as the driver lists them. A node that cannot be read is skipped: it is
 * then not drawn, which the reconciliation's graph pool row still covers. */
static cs_graph_exec_t *cs_graphs_read(CUgraph graph, bool auto_free) {
  PFN_cuGraphGetNodes_v10000 get_nodes = CS_REAL_FN(cuGraphGetNodes, PFN_cuGraphGetNodes_v10000);
  PFN_cuGraphNodeGetType_v10000 get_type = CS_REAL_FN(cuGraphNodeGetType, PFN_cuGraphNodeGetType_v10000);
  PFN_cuGraphMemAllocNodeGetParams_v11040 alloc_params =
      CS_REAL_FN(cuGraphMemAllocNodeGetParams, PFN_cuGraphMemAllocNodeGetParams_v11040);
  PFN_cuGraphMemFreeNodeGetParams_v11040 free_params =
      CS_REAL_FN(cuGraphMemFreeNodeGetParams, PFN_cuGraphMemFreeNodeGetParams_v11040);
  size_t count = 0;
  if (!get_nodes || !get_type || !alloc_params || !free_params || get_nodes(graph, NULL, &count) != CUDA_SUCCESS ||
      count == 0)
    return NULL;
  CUgraphNode *nodes = malloc(count * sizeof *nodes);
  cs_graph_exec_t *x = calloc(1, sizeof *x);
  if (x) {
    x->allocs = malloc(count * sizeof *x->allocs);
    x->frees = malloc(count * sizeof *x->frees);
  }
  if (!nodes || !x || !x->allocs || !x->frees || get_nodes(graph, nodes, &count) != CUDA_SUCCESS) {
    free(nodes);
    cs_graph_exec_free(x);
    return NULL;
  }
  x->auto_free = auto_free;
  for (size_t i = 0; i < count; i++) {
    CUgraphNodeType type;
    if (!nodes[i] || get_type(nodes[i], &type) != CUDA_SUCCESS) continue;
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    CUdeviceptr freed = 0;
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && alloc_params(nodes[i], &p) == CUDA_SUCCESS) {
      x->allocs[x->alloc_count++] =
          (cs_graph_alloc_t){.addr = p.dptr, .size = p.bytesize, .device = p.poolProps.location.id};
      x->bytes += p.bytesize;
    }
    else if (type == CU_GRAPH_NODE_TYPE_MEM_FREE && free_params(nodes[i], &freed) == CUDA_SUCCESS)
      x->frees[x->free_count++] = freed;
  }
  free(nodes);
  /* made and freed inside one launch: not drawn (both lists lose it) */
  for (size_t f = 0; f < x->free_count;) {
    size_t a = 0;
    while (a < x->alloc_count && x->allocs[a].addr != x->frees[f]) a++;
    if (a == x->alloc_count) {
      f++;
      continue;
    }
    x->allocs[a] = x->allocs[--x->alloc_count];
    x->frees[f] = x->frees[--x->free_count];
  }
  if (x->alloc_count == 0 && x->free_count == 0 && x->bytes == 0) {
    cs_graph_exec_free(x);
    return NULL;
  }
  return x; /* with nothing drawn but its bytes, for an out-of-memory answer's size */
}

void cs_graphs_instantiated(uintptr_t exec, uintptr_t graph, bool auto_free, uint32_t stack) {
  cs_graph_exec_t *x = cs_graphs_read((CUgraph)graph, auto_free);
  if (!x) return;
  x->exec = exec;
  pthread_mutex_lock(&cs_graphs_lock);
  for (size_t i = 0; i < x->alloc_count; i++) x->allocs[i].stack = cs_graphs_site_locked(x->allocs[i].addr, stack);
  x->next = cs_graphs_execs;
  cs_graphs_execs = x;
  atomic_fetch_add_explicit(&cs_graphs_exec_count, 1, memory_order_release);
  pthread_mutex_unlock(&cs_graphs_lock);
}

static cs_graph_exec_t **cs_graphs_link_locked(uintptr_t exec) {
  cs_graph_exec_t **link = &cs_graphs_execs;
  while (*link && (*link)->exec != exec) link = &(*link)->next;
  return link;
}

void cs_graphs_launched(uintptr_t exec, uintptr_t stream, uint32_t (*stack)(void)) {
  if (atomic_load_explicit(&cs_graphs_exec_count, memory_order_acquire) == 0) return;
  pthread_mutex_lock(&cs_graphs_lock);
  const cs_graph_exec_t *x = *cs_graphs_link_locked(exec);
  if (x) {
    uint32_t freeing = x->free_count || x->auto_free ? stack() : 0;
    /* a graph instantiated to free on launch frees what its last launch left live */
    for (size_t i = 0; x->auto_free && i < x->alloc_count; i++)
      (void)cs_passthrough_remove(CS_PASSTHROUGH_GRAPH, x->allocs[i].addr, freeing);
    for (size_t i = 0; i < x->free_count; i++) (void)cs_passthrough_remove(CS_PASSTHROUGH_GRAPH, x->frees[i], freeing);
    for (size_t i = 0; i < x->alloc_count; i++) {
      const cs_graph_alloc_t *a = &x->allocs[i];
      /* still recorded live: the driver saw a free cudasnap did not; one entry per address */
      (void)cs_passthrough_remove(CS_PASSTHROUGH_GRAPH, a->addr, a->stack);
      cs_passthrough_add(CS_PASSTHROUGH_GRAPH, a->addr, a->size, a->device, stream, a->stack);
    }
  }
  pthread_mutex_unlock(&cs_graphs_lock);
}

size_t cs_graphs_exec_bytes(uintptr_t exec) {
  if (atomic_load_explicit(&cs_graphs_exec_count, memory_order_acquire) == 0) return 0;
  pthread_mutex_lock(&cs_graphs_lock);
  const cs_graph_exec_t *x = *cs_graphs_link_locked(exec);
  size_t bytes = x ? x->bytes : 0;
  pthread_mutex_unlock(&cs_graphs_lock);
  return bytes;
}

size_t cs_graphs_graph_bytes(uintptr_t graph) {
  cs_graph_exec_t *x = cs_graphs_read((CUgraph)graph, false);
  size_t bytes = x ? x->bytes : 0;
  cs_graph_exec_free(x);
  return bytes;
}

void cs_graphs_exec_destroyed(uintptr_t exec) {
  if (atomic_load_explicit(&cs_graphs_exec_count, memory_order_acquire) == 0) return;
  pthread_mutex_lock(&cs_graphs_lock);
  cs_graph_exec_t **link = cs_graphs_link_locked(exec), *x = *link;
  if (x) {
    *link = x->next;
    atomic_fetch_sub_explicit(&cs_graphs_exec_count, 1, memory_order_release);
  }
  pthread_mutex_unlock(&cs_graphs_lock);
  cs_graph_exec_free(x);
}

void cs_graphs_postfork_child(void) {
  /* the parent's lists are left, unwalked (another thread may have been changing them) */
  pthread_mutex_init(&cs_graphs_lock, NULL);
  for (size_t b = 0; b < CS_GRAPHS_SITE_BUCKETS; b++) cs_graphs_sites[b] = NULL;
  cs_graphs_site_count = 0;
  cs_graphs_execs = NULL;
  atomic_store(&cs_graphs_exec_count, 0);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The fake driver's graph memory nodes, with the semantics of cuda.h's cuGraphAddMemAllocNode that
 * cudasnap's reconciliation depends on:
 *   - an allocation node gets its address when it is added, fixed for the graph's lifetime (and
 *     its instantiation's); the memory is the device's graph memory pool's;
 *   - an upload (cuGraphUpload) reserves in the pool what a launch would need, without running it;
 *   - a launch runs the graph's memory nodes in the order they were added (the fake has no other
 *     node and no dependency order): an allocation becomes live, taking its bytes from the pool,
 *     which reserves (and charges to the device) whole granules when what it holds free is too
 *     little; a free node gives them back to the pool. Launching an allocation that is still live
 *     fails (CUDA_ERROR_INVALID_VALUE), unless the graph was instantiated with
 *     CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, which frees it first;
 *   - a live allocation not freed in its graph is freed by cuMemFree or cuMemFreeAsync (or by a
 *     free node of another graph); freed bytes stay reserved by the pool until cuDeviceGraphMemTrim;
 *   - a graph with memory nodes has at most one instantiation at a time;
 *   - cuDeviceGetGraphMemAttribute reports used (live) and reserved bytes and their high marks;
 *   - a stream capture builds a graph (fake_cuda.c): cuMemAllocAsync on the capturing stream adds
 *     an allocation node and allocates nothing, cuMemFreeAsync there a free node of a graph
 *     allocation (the fake captures no free of other memory); cuStreamEndCapture returns it.
 * Launches complete at once (the fake runs nothing), so every allocation that is not live is
 * unused and trimmable. Every function takes the one lock of fake_cuda.c. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/fakes/fake_cuda_internal.h"

typedef struct fc_graph_alloc_s {
  uintptr_t addr;
  size_t size;   /* as asked */
  size_t mapped; /* the address range held, whole granules */
  int device;
  unsigned refs; /* the graphs' nodes and the instantiations' copies that name it */
  bool live;     /* launched and not freed */
  const struct CUgraph_st *owner, *freed_in; /* the graph of its allocation node, of its free node */
} fc_graph_alloc_t;

typedef enum fc_node_kind_e { FC_NODE_ALLOC, FC_NODE_FREE } fc_node_kind_t;

struct CUgraphNode_st {
  fc_node_kind_t kind;
  fc_graph_alloc_t *alloc;
};

struct CUgraph_st {
  fc_list_t nodes; /* struct CUgraphNode_st *, in the order they were added */
  unsigned instantiations; /* live ones; at most one once it has memory nodes */
  bool has_memory_nodes;
};

struct CUgraphExec_st {
  struct CUgraph_st *graph; /* NULL once the graph is destroyed */
  struct CUgraphNode_st *nodes; /* a copy of the graph's at instantiation */
  size_t count;
  bool auto_free;
};

typedef struct fc_graph_pool_s {
  size_t used, reserved, used_high, reserved_high;
} fc_graph_pool_t;

static fc_list_t fc_graphs, fc_execs, fc_graph_allocs;
static fc_graph_pool_t fc_graph_pools[FC_MEM_MAX_DEVICES];

/* A device the fake has, with a graph memory pool. */
static CUresult fc_graph_device_check(CUdevice device) {
  CUresult rc = fc_device_check(device);
  return rc == CUDA_SUCCESS && device >= FC_MEM_MAX_DEVICES ? CUDA_ERROR_INVALID_DEVICE : rc;
}

/* A reference less; the address range goes with the last one, unless the allocation is live
 * (a live one is the program's until it frees it). */
static void fc_graph_alloc_unref_locked(fc_graph_alloc_t *a) {
  if (a->refs > 0) a->refs--;
  if (a->refs > 0 || a->live) return;
  munmap((void *)a->addr, a->mapped);
  fc_list_del(&fc_graph_allocs, a);
  free(a);
}

static void fc_graph_pool_take_locked(fc_graph_pool_t *p, fc_graph_alloc_t *a) {
  p->used += a->size;
  if (p->used > p->used_high) p->used_high = p->used;
  a->live = true;
}

static void fc_graph_pool_give_back_locked(fc_graph_alloc_t *a) {
  fc_graph_pools[a->device].used -= a->size;
  a->live = false;
}

/* The granules the pool must add so that `bytes` more fit. */
static size_t fc_graph_pool_growth(const fc_graph_pool_t *p, size_t bytes) {
  size_t spare = p->reserved - p->used;
  return bytes > spare ? fc_round_up(bytes - spare) : 0;
}

struct CUgraph_st *fc_graph_new_locked(void) {
  struct CUgraph_st *g = calloc(1, sizeof *g);
  if (g && !fc_list_add(&fc_graphs, g)) {
    free(g);
    g = NULL;
  }
  return g;
}

FC_EXPORT CUresult cuGraphCreate(CUgraph *graph, unsigned int flags) {
  fc_lock();
  CUresult rc = graph && flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  struct CUgraph_st *g = NULL;
  if (rc == CUDA_SUCCESS) {
    g = fc_graph_new_locked();
    if (!g) rc = CUDA_ERROR_OUT_OF_MEMORY;
    else *graph = g;
  }
  fc_unlock();
  fc_log("cuGraphCreate -> %p status=%d", (void *)g, (int)rc);
  return rc;
}

static CUresult fc_graph_add_node_locked(struct CUgraph_st *g, fc_node_kind_t kind, fc_graph_alloc_t *a,
                                         CUgraphNode *node) {
  struct CUgraphNode_st *n = malloc(sizeof *n);
  if (!n || !fc_list_add(&g->nodes, n)) {
    free(n);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *n = (struct CUgraphNode_st){.kind = kind, .alloc = a};
  g->has_memory_nodes = true;
  *node = n;
  return CUDA_SUCCESS;
}

/* The fake has no dependency order: the nodes named as dependencies must only be the graph's. */
static bool fc_graph_deps_ok(const struct CUgraph_st *g, const CUgraphNode *deps, size_t n) {
  if (n > 0 && !deps) return false;
  for (size_t i = 0; i < n; i++)
    if (!fc_list_has(&g->nodes, deps[i])) return false;
  return true;
}

/* An allocation node of `size` bytes of `device` in g, its address in *dptr. */
static CUresult fc_graph_alloc_node_locked(struct CUgraph_st *g, size_t size, int device, CUgraphNode *node,
                                           uintptr_t *dptr) {
  CUresult rc = fc_graph_device_check(device);
  if (rc != CUDA_SUCCESS) return rc;
  size_t mapped = fc_round_up(size);
  void *m = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  fc_graph_alloc_t *a = m == MAP_FAILED ? NULL : malloc(sizeof *a);
  if (!a || !fc_list_add(&fc_graph_allocs, a)) {
    if (m != MAP_FAILED) munmap(m, mapped);
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *a = (fc_graph_alloc_t){.addr = (uintptr_t)m, .size = size, .mapped = mapped, .device = device, .refs = 1,
                          .owner = g};
  rc = fc_graph_add_node_locked(g, FC_NODE_ALLOC, a, node);
  if (rc != CUDA_SUCCESS) {
    a->refs = 0;
    fc_graph_alloc_unref_locked(a);
    return rc;
  }
  *dptr = a->addr;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
                                          CUDA_MEM_ALLOC_NODE_PARAMS *params) {
  fc_lock();
  CUresult rc = CUDA_SUCCESS;
  if (!node || !params || !fc_list_has(&fc_graphs, graph) || !fc_graph_deps_ok(graph, deps, n) ||
      params->bytesize == 0 || params->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      params->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    rc = CUDA_ERROR_INVALID_VALUE;
  uintptr_t dptr = 0;
  if (rc == CUDA_SUCCESS) rc = fc_graph_alloc_node_locked(graph, params->bytesize, params->poolProps.location.id, node, &dptr);
  if (rc == CUDA_SUCCESS) params->dptr = dptr;
  fc_unlock();
  fc_log("cuGraphAddMemAllocNode size=%zu -> 0x%" PRIxPTR " status=%d", params ? params->bytesize : 0, dptr, (int)rc);
  return rc;
}

static fc_graph_alloc_t *fc_graph_alloc_at_locked(uintptr_t p) {
  for (size_t i = 0; i < fc_graph_allocs.n; i++) {
    fc_graph_alloc_t *a = fc_graph_allocs.v[i];
    if (a->addr == p) return a;
  }
  return NULL;
}

/* A free node in g of the graph allocation at dptr. */
static CUresult fc_graph_free_node_locked(struct CUgraph_st *g, uintptr_t dptr, CUgraphNode *node) {
  fc_graph_alloc_t *a = fc_graph_alloc_at_locked(dptr);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  /* freed once in its own graph, and then in no other; or in other graphs, and then not in its own */
  if ((a->freed_in && a->freed_in == a->owner) || (a->freed_in && g == a->owner) || a->freed_in == g)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = fc_graph_add_node_locked(g, FC_NODE_FREE, a, node);
  if (rc == CUDA_SUCCESS) {
    a->refs++;
    a->freed_in = g;
  }
  return rc;
}

FC_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
                                         CUdeviceptr dptr) {
  fc_lock();
  CUresult rc = CUDA_SUCCESS;
  if (!node || !fc_list_has(&fc_graphs, graph) || !fc_graph_deps_ok(graph, deps, n)) rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) rc = fc_graph_free_node_locked(graph, dptr, node);
  fc_unlock();
  fc_log("cuGraphAddMemFreeNode ptr=0x%llx status=%d", (unsigned long long)dptr, (int)rc);
  return rc;
}

CUresult fc_graph_capture_alloc_locked(struct CUgraph_st *g, size_t size, int device, uintptr_t *dptr) {
  CUgraphNode node = NULL;
  return size == 0 ? CUDA_ERROR_INVALID_VALUE : fc_graph_alloc_node_locked(g, size, device, &node, dptr);
}

CUresult fc_graph_capture_free_locked(struct CUgraph_st *g, uintptr_t dptr) {
  CUgraphNode node = NULL;
  return fc_graph_free_node_locked(g, dptr, &node);
}

/* The node, if a live graph has it (NULL otherwise). */
static struct CUgraphNode_st *fc_graph_node_valid_locked(CUgraphNode node) {
  for (size_t i = 0; node && i < fc_graphs.n; i++)
    if (fc_list_has(&((struct CUgraph_st *)fc_graphs.v[i])->nodes, node)) return node;
  return NULL;
}

FC_EXPORT CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *count) {
  fc_lock();
  CUresult rc = fc_list_has(&fc_graphs, graph) && count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    /* with room for more than there are, the rest of the array is set to NULL */
    for (size_t i = 0; nodes && i < *count; i++) nodes[i] = i < graph->nodes.n ? graph->nodes.v[i] : NULL;
    *count = graph->nodes.n;
  }
  fc_unlock();
  fc_log("cuGraphGetNodes graph=%p status=%d", (void *)graph, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type) {
  fc_lock();
  struct CUgraphNode_st *n = fc_graph_node_valid_locked(node);
  CUresult rc = n && type ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *type = n->kind == FC_NODE_ALLOC ? CU_GRAPH_NODE_TYPE_MEM_ALLOC : CU_GRAPH_NODE_TYPE_MEM_FREE;
  fc_unlock();
  return rc;
}

FC_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS *params) {
  fc_lock();
  struct CUgraphNode_st *n = fc_graph_node_valid_locked(node);
  CUresult rc = n && n->kind == FC_NODE_ALLOC && params ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    memset(params, 0, sizeof *params);
    params->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params->poolProps.location.id = n->alloc->device;
    params->bytesize = n->alloc->size;
    params->dptr = n->alloc->addr;
  }
  fc_unlock();
  return rc;
}

FC_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode node, CUdeviceptr *dptr) {
  fc_lock();
  struct CUgraphNode_st *n = fc_graph_node_valid_locked(node);
  CUresult rc = n && n->kind == FC_NODE_FREE && dptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) *dptr = n->alloc->addr;
  fc_unlock();
  return rc;
}

static CUresult fc_graph_instantiate(const char *api, CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  fc_lock();
  CUresult rc = CUDA_SUCCESS;
  if (!exec || !fc_list_has(&fc_graphs, graph) || (flags & ~(unsigned long long)CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH))
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (graph->has_memory_nodes && graph->instantiations > 0)
    rc = CUDA_ERROR_INVALID_VALUE; /* one instantiation at a time */
  struct CUgraphExec_st *x = NULL;
  if (rc == CUDA_SUCCESS) {
    x = calloc(1, sizeof *x);
    struct CUgraphNode_st *nodes = graph->nodes.n ? malloc(graph->nodes.n * sizeof *nodes) : NULL;
    if (!x || (graph->nodes.n && !nodes) || !fc_list_add(&fc_execs, x)) {
      free(x);
      free(nodes);
      x = NULL;
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      for (size_t i = 0; i < graph->nodes.n; i++) {
        nodes[i] = *(struct CUgraphNode_st *)graph->nodes.v[i];
        nodes[i].alloc->refs++;
      }
      *x = (struct CUgraphExec_st){.graph = graph, .nodes = nodes, .count = graph->nodes.n,
                                   .auto_free = flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH};
      graph->instantiations++;
      *exec = x;
    }
  }
  fc_unlock();
  fc_log("%s graph=%p flags=%llu -> %p status=%d", api, (void *)graph, flags, (void *)x, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  return fc_graph_instantiate("cuGraphInstantiateWithFlags", exec, graph, flags);
}

/* The CUDA 10 and 11 ABIs, which cuda.h now renames to cuGraphInstantiateWithFlags but the driver
 * still exports: an error node and a log buffer instead of flags. */
#undef cuGraphInstantiate
static CUresult fc_graph_instantiate_logged(const char *api, CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node,
                                            char *log, size_t log_size) {
  if (error_node) *error_node = NULL;
  if (log && log_size) log[0] = '\0';
  return fc_graph_instantiate(api, exec, graph, 0);
}

FC_EXPORT CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node, char *log,
                                      size_t log_size) {
  return fc_graph_instantiate_logged("cuGraphInstantiate", exec, graph, error_node, log, log_size);
}

FC_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph graph, CUgraphNode *error_node, char *log,
                                         size_t log_size) {
  return fc_graph_instantiate_logged("cuGraphInstantiate_v2", exec, graph, error_node, log, log_size);
}

static CUresult fc_graph_upload(const char *api, CUgraphExec exec, CUstream stream);

/* CUDA 12's: flags and the outcome in a structure. CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD uploads the
 * new exec in params->hUploadStream (as cuGraphUpload does); when that fails the instantiation
 * fails with it, and no exec is left. */
static CUresult fc_graph_instantiate_params(const char *api, CUgraphExec *exec, CUgraph graph,
                                            CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  bool upload = params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  CUresult rc = fc_graph_instantiate(api, exec, graph, params->flags & ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
  if (rc == CUDA_SUCCESS && upload) {
    rc = fc_graph_upload(api, *exec, params->hUploadStream);
    if (rc != CUDA_SUCCESS) {
      (void)cuGraphExecDestroy(*exec);
      *exec = NULL;
    }
  }
  params->hErrNode_out = NULL;
  params->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return rc;
}

FC_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
  return fc_graph_instantiate_params("cuGraphInstantiateWithParams", exec, graph, params);
}

FC_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *exec, CUgraph graph,
                                                     CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
  return fc_graph_instantiate_params("cuGraphInstantiateWithParams_ptsz", exec, graph, params);
}

/* The granules the pools must add for a launch of x: its allocations all at once (a conservative
 * bound), where those an auto-free launch frees first come back before. Reserved (and charged to
 * the devices) when they fit, CUDA_ERROR_OUT_OF_MEMORY with nothing changed when they do not. */
static CUresult fc_graph_reserve_locked(const struct CUgraphExec_st *x) {
  size_t growth[FC_MEM_MAX_DEVICES] = {0}, taking[FC_MEM_MAX_DEVICES] = {0};
  for (size_t i = 0; i < x->count; i++)
    if (x->nodes[i].kind == FC_NODE_ALLOC) taking[x->nodes[i].alloc->device] += x->nodes[i].alloc->size;
  for (int d = 0; d < FC_MEM_MAX_DEVICES; d++) {
    if (!taking[d]) continue;
    fc_graph_pool_t freed_view = fc_graph_pools[d];
    for (size_t i = 0; x->auto_free && i < x->count; i++) /* auto-freed allocations come back first */
      if (x->nodes[i].kind == FC_NODE_ALLOC && x->nodes[i].alloc->live && x->nodes[i].alloc->device == d)
        freed_view.used -= x->nodes[i].alloc->size;
    growth[d] = fc_graph_pool_growth(&freed_view, taking[d]);
    if (growth[d] && fc_charge_locked(d, growth[d]) != CUDA_SUCCESS) {
      for (int e = 0; e < d; e++)
        if (growth[e]) fc_uncharge_locked(e, growth[e]);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  for (int d = 0; d < FC_MEM_MAX_DEVICES; d++) {
    fc_graph_pools[d].reserved += growth[d];
    if (fc_graph_pools[d].reserved > fc_graph_pools[d].reserved_high)
      fc_graph_pools[d].reserved_high = fc_graph_pools[d].reserved;
  }
  return CUDA_SUCCESS;
}

/* The launch's effect on the pools, checked before anything changes: every allocation node finds
 * its allocation not live (or auto-freed), every free node finds its allocation live. */
static CUresult fc_graph_launch_locked(struct CUgraphExec_st *x) {
  for (size_t i = 0; i < x->count; i++) {
    const fc_graph_alloc_t *a = x->nodes[i].alloc;
    bool live_now = a->live && !(x->auto_free && x->nodes[i].kind == FC_NODE_ALLOC);
    for (size_t j = 0; j < i; j++) /* earlier nodes of this launch */
      if (x->nodes[j].alloc == a) live_now = x->nodes[j].kind == FC_NODE_ALLOC;
    if ((x->nodes[i].kind == FC_NODE_ALLOC) == live_now) return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult rc = fc_graph_reserve_locked(x);
  if (rc != CUDA_SUCCESS) return rc;
  for (size_t i = 0; x->auto_free && i < x->count; i++)
    if (x->nodes[i].kind == FC_NODE_ALLOC && x->nodes[i].alloc->live) fc_graph_pool_give_back_locked(x->nodes[i].alloc);
  for (size_t i = 0; i < x->count; i++) {
    fc_graph_alloc_t *a = x->nodes[i].alloc;
    if (x->nodes[i].kind == FC_NODE_ALLOC) fc_graph_pool_take_locked(&fc_graph_pools[a->device], a);
    else fc_graph_pool_give_back_locked(a);
  }
  return CUDA_SUCCESS;
}

static CUresult fc_graph_launch(const char *api, CUgraphExec exec, CUstream stream) {
  fc_lock();
  CUresult rc = fc_list_has(&fc_execs, exec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && !fc_stream_valid_locked(stream)) rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS) rc = fc_graph_launch_locked(exec);
  fc_unlock();
  fc_log("%s exec=%p stream=%p status=%d", api, (void *)exec, (void *)stream, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) { return fc_graph_launch("cuGraphLaunch", exec, stream); }
/* NULL is the per-thread stream here; the fake's launches do not depend on the stream */
FC_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  return fc_graph_launch("cuGraphLaunch_ptsz", exec, stream);
}

/* An upload backs the exec's allocations with memory ahead of its launch (cuda.h: the memory
 * the stream's pool caches backs them): the pools reserve what a launch would need, and fail for lack of it as a launch does, but no allocation becomes live, so uploading
 * an exec whose allocations are live is no error. */
static CUresult fc_graph_upload(const char *api, CUgraphExec exec, CUstream stream) {
  fc_lock();
  CUresult rc = fc_list_has(&fc_execs, exec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && !fc_stream_valid_locked(stream)) rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS) rc = fc_graph_reserve_locked(exec);
  fc_unlock();
  fc_log("%s exec=%p stream=%p status=%d", api, (void *)exec, (void *)stream, (int)rc);
  return rc;
}

FC_EXPORT CUresult cuGraphUpload(CUgraphExec exec, CUstream stream) { return fc_graph_upload("cuGraphUpload", exec, stream); }
FC_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec exec, CUstream stream) {
  return fc_graph_upload("cuGraphUpload_ptsz", exec, stream);
}

FC_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  fc_lock();
  CUresult rc = fc_list_has(&fc_execs, exec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    fc_list_del(&fc_execs, exec);
    if (exec->graph) exec->graph->instantiations--;
    for (size_t i = 0; i < exec->count; i++) fc_graph_alloc_unref_locked(exec->nodes[i].alloc);
    free(exec->nodes);
    free(exec);
  }
  fc_unlock();
  fc_log("cuGraphExecDestroy exec=%p status=%d", (void *)exec, (int)rc);
  return rc;
}

void fc_graph_destroy_locked(struct CUgraph_st *graph) {
  fc_list_del(&fc_graphs, graph);
  for (size_t i = 0; i < fc_execs.n; i++) {
    struct CUgraphExec_st *x = fc_execs.v[i];
    if (x->graph == graph) x->graph = NULL; /* an instantiation outlives its graph */
  }
  for (size_t i = 0; i < graph->nodes.n; i++) {
    struct CUgraphNode_st *n = graph->nodes.v[i];
    /* compared, never followed: forgotten, as a later graph may get the same address */
    if (n->alloc->owner == graph) n->alloc->owner = NULL;
    if (n->alloc->freed_in == graph) n->alloc->freed_in = NULL;
    fc_graph_alloc_unref_locked(n->alloc);
    free(n);
  }
  free(graph->nodes.v);
  free(graph);
}

FC_EXPORT CUresult cuGraphDestroy(CUgraph graph) {
  fc_lock();
  CUresult rc = fc_list_has(&fc_graphs, graph) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) fc_graph_destroy_locked(graph);
  fc_unlock();
  fc_log("cuGraphDestroy graph=%p status=%d", (void *)graph, (int)rc);
  return rc;
}

bool fc_graph_free_locked(uintptr_t p) {
  fc_graph_alloc_t *a = fc_graph_alloc_at_locked(p);
  if (!a || !a->live) return false;
  fc_graph_pool_give_back_locked(a);
  if (a->refs == 0) { /* its graph and instantiation are gone: the address range goes too */
    a->refs = 1;
    fc_graph_alloc_unref_locked(a);
  }
  return true;
}

bool fc_graph_range_ok_locked(uintptr_t p, size_t n) {
  for (size_t i = 0; i < fc_graph_allocs.n; i++) {
    const fc_graph_alloc_t *a = fc_graph_allocs.v[i];
    if (a->live && a->addr <= p && p - a->addr < a->size) return n <= a->size - (p - a->addr);
  }
  return false;
}

FC_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device) {
  fc_lock();
  CUresult rc = fc_graph_device_check(device);
  if (rc == CUDA_SUCCESS) {
    fc_graph_pool_t *p = &fc_graph_pools[device];
    size_t keep = fc_round_up(p->used);
    if (p->reserved > keep) {
      fc_uncharge_locked(device, p->reserved - keep);
      p->reserved = keep;
    }
  }
  fc_unlock();
  fc_log("cuDeviceGraphMemTrim device=%d status=%d", device, (int)rc);
  return rc;
}

static CUresult fc_graph_attr_check(CUdevice device, CUgraphMem_attribute attr, void *value) {
  CUresult rc = fc_graph_device_check(device);
  if (rc == CUDA_SUCCESS && (!value || attr < CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT || attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
    rc = CUDA_ERROR_INVALID_VALUE;
  return rc;
}

FC_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
  fc_lock();
  CUresult rc = fc_graph_attr_check(device, attr, value);
  if (rc == CUDA_SUCCESS) {
    const fc_graph_pool_t *p = &fc_graph_pools[device];
    size_t v = attr == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT     ? p->used
               : attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH      ? p->used_high
               : attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT ? p->reserved
                                                              : p->reserved_high;
    *(cuuint64_t *)value = v;
  }
  fc_unlock();
  fc_log("cuDeviceGetGraphMemAttribute device=%d attr=%d status=%d", device, (int)attr, (int)rc);
  return rc;
}

/* Only the high marks can be set, and only to 0 (a reset to the current value). */
FC_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
  fc_lock();
  CUresult rc = fc_graph_attr_check(device, attr, value);
  if (rc == CUDA_SUCCESS && ((attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) ||
                             *(cuuint64_t *)value != 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    fc_graph_pool_t *p = &fc_graph_pools[device];
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) p->used_high = p->used;
    else p->reserved_high = p->reserved;
  }
  fc_unlock();
  fc_log("cuDeviceSetGraphMemAttribute device=%d attr=%d status=%d", device, (int)attr, (int)rc);
  return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Graph memory through every way the driver instantiates a graph: cudasnap reads a graph's memory
 * nodes when it is instantiated, and the CUDA runtime, PyTorch and others do that through
 * whichever entry point cuGetProcAddress gives them. Each of the five (the CUDA 10 and 11 ABIs
 * with an error node and a log, WithFlags, WithParams and its per-thread-stream variant) gets a
 * graph with one allocation node of its own size; after the launch cudasnap must count exactly
 * that allocation as live graph memory, and none once cuMemFreeAsync freed it. Prints
 * "ok NAME VERSION FLAGS" per way; exits 1 at the first one that is not counted. */
#include <stdio.h>
#include <string.h>

#include "include/cudasnap.h"
#include "tests/integration/it_driver.h"

#define MIB ((size_t)1 << 20)
#define OK(call) IT_CHECK((call) == CUDA_SUCCESS, "%s failed", #call)

static int64_t live_graph_bytes(void) {
  cudasnap_stat_t kv[CUDASNAP_PASSTHROUGH_KEYS];
  int n = cudasnap_passthrough_stats(0, kv, CUDASNAP_PASSTHROUGH_KEYS);
  for (int i = 0; i < n; i++)
    if (strcmp(kv[i].key, "passthrough_bytes.graph.current") == 0) return kv[i].value;
  IT_CHECK(0, "no passthrough_bytes.graph.current among %d keys", n);
  return -1;
}

typedef enum { LOGGED, WITH_FLAGS, WITH_PARAMS } abi_t;
/* the three signatures (cudaTypedefs.h hides the first unless one builds the driver) */
typedef CUresult (*logged_fn)(CUgraphExec *, CUgraph, CUgraphNode *error_node, char *log, size_t log_size);
typedef CUresult (*with_flags_fn)(CUgraphExec *, CUgraph, unsigned long long flags);
typedef CUresult (*with_params_fn)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);

static const struct {
  const char *name;
  int version;
  cuuint64_t flags;
  abi_t abi;
} ways[] = {
    {"cuGraphInstantiate", 10000, CU_GET_PROC_ADDRESS_DEFAULT, LOGGED},
    {"cuGraphInstantiate", 11000, CU_GET_PROC_ADDRESS_DEFAULT, LOGGED},
    {"cuGraphInstantiateWithFlags", 11040, CU_GET_PROC_ADDRESS_DEFAULT, WITH_FLAGS},
    {"cuGraphInstantiateWithParams", 12000, CU_GET_PROC_ADDRESS_DEFAULT, WITH_PARAMS},
    {"cuGraphInstantiateWithParams", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, WITH_PARAMS},
};

static CUresult instantiate(int i, CUgraphExec *exec, CUgraph graph) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult status;
  OK(cuGetProcAddress(ways[i].name, &fn, ways[i].version, ways[i].flags, &status));
  IT_CHECK(fn && status == CU_GET_PROC_ADDRESS_SUCCESS, "cuGetProcAddress(%s, %d) found nothing", ways[i].name,
           ways[i].version);
  switch (ways[i].abi) {
  case LOGGED: {
    logged_fn f;
    memcpy(&f, &fn, sizeof f);
    char log[64];
    CUgraphNode error_node;
    return f(exec, graph, &error_node, log, sizeof log);
  }
  case WITH_FLAGS: {
    with_flags_fn f;
    memcpy(&f, &fn, sizeof f);
    return f(exec, graph, 0);
  }
  case WITH_PARAMS: {
    with_params_fn f;
    memcpy(&f, &fn, sizeof f);
    CUDA_GRAPH_INSTANTIATE_PARAMS params;
    memset(&params, 0, sizeof params);
    CUresult r = f(exec, graph, &params);
    IT_CHECK(r != CUDA_SUCCESS || params.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS, "result_out %d",
             (int)params.result_out);
    return r;
  }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

int main(void) {
  IT_CHECK(cudasnap_passthrough_stats != NULL, "run under cudasnap");
  it_driver_context();
  for (int i = 0; i < (int)(sizeof ways / sizeof *ways); i++) {
    const size_t bytes = (size_t)(i + 1) * MIB;
    CUgraph graph = NULL;
    OK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p = it_alloc_node_params(bytes);
    CUgraphNode node;
    OK(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &p));
    CUgraphExec exec = NULL;
    OK(instantiate(i, &exec, graph));
    IT_CHECK(live_graph_bytes() == 0, "graph memory counted before the launch");
    OK(cuGraphLaunch(exec, NULL));
    OK(cuStreamSynchronize(NULL));
    IT_CHECK(live_graph_bytes() == (int64_t)bytes, "%s %d flags %llu: %lld live graph bytes after the launch, not %zu",
             ways[i].name, ways[i].version, (unsigned long long)ways[i].flags, (long long)live_graph_bytes(), bytes);
    OK(cuMemFreeAsync(p.dptr, NULL));
    OK(cuStreamSynchronize(NULL));
    IT_CHECK(live_graph_bytes() == 0, "%s: %lld live graph bytes after the free", ways[i].name,
             (long long)live_graph_bytes());
    OK(cuGraphExecDestroy(exec));
    OK(cuGraphDestroy(graph));
    printf("ok %s %d %llu\n", ways[i].name, ways[i].version, (unsigned long long)ways[i].flags);
  }
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Memory past the cache, of every kind the fake driver has, on two devices and two streams, some
 * freed and some left live (issue 11):
 *   - cuMemAlloc (v1), pitch, managed, arrays (2D, 3D, mipmapped), pinned host memory;
 *   - stream-ordered allocations on two streams freed in another order than they were made, from
 *     the default pool and from a created pool that is trimmed mid-run;
 *   - a VMM range mapped in three pieces from one handle and a fourth from another, one piece
 *     unmapped first, the handle released while still mapped;
 *   - a graph whose memory nodes leave 1 MiB live after its launch (3 MiB more used inside it),
 *     and a captured one whose stream-ordered allocation of 2 MiB is a memory node, both freed and
 *     trimmed after the dumps;
 *   - the cache's own allocations next to them.
 * Every allocation is made in a function of its own, named on stdout as "site KIND FUNCTION". The
 * program dumps argv[1] (JSON) and argv[2] (pickle) with everything live, printing the fake
 * driver's bytes in use at that moment ("in_use_at_dump N"), frees part of it, and exits with one
 * allocation of every kind still live (the exit leak report names them), printing
 * "in_use_at_exit N" last. A fork child imports one of the parent's allocations over IPC (the fake
 * driver maps it only in another process) and dumps argv[3] with the import live.
 *
 * With a fourth argument, wait_kill (kill -9 with a recording file, issue 28): after the dumps the
 * child keeps its import live and waits, and the parent prints "ready CHILD_PID" with everything
 * still live and waits too, for SIGKILL. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fakes/fake_cuda_control.h"
#include "tests/integration/it_driver.h"

#define MIB ((size_t)1 << 20)

/* The 32-bit ABI entry points, which cuda.h renames away. */
extern CUresult it_cuMemAlloc_v1(unsigned int *dptr, unsigned int bytes) __asm__("cuMemAlloc");
extern CUresult it_cuMemFree_v1(unsigned int dptr) __asm__("cuMemFree");

#define SITE(kind) printf("site %s %s\n", kind, __func__)
#define BARRIER() __asm__ volatile("" ::: "memory") /* no tail call: the frame stays on the stack */
#define OK(call) IT_CHECK((call) == CUDA_SUCCESS, "%s failed", #call)

static __attribute__((noipa)) unsigned int alloc_legacy(unsigned int bytes) {
  unsigned int p = 0;
  OK(it_cuMemAlloc_v1(&p, bytes));
  BARRIER();
  SITE("device");
  return p;
}

static __attribute__((noipa)) CUdeviceptr alloc_pitched(size_t width, size_t height) {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  OK(cuMemAllocPitch(&p, &pitch, width, height, 4));
  BARRIER();
  SITE("pitch");
  return p;
}

static __attribute__((noipa)) CUdeviceptr alloc_managed(size_t bytes) {
  CUdeviceptr p = 0;
  OK(cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL));
  BARRIER();
  SITE("managed");
  return p;
}

static __attribute__((noipa)) CUdeviceptr alloc_stream_ordered(size_t bytes, CUstream s) {
  CUdeviceptr p = 0;
  OK(cuMemAllocAsync(&p, bytes, s));
  BARRIER();
  SITE("async");
  return p;
}

static __attribute__((noipa)) CUdeviceptr alloc_from_pool(size_t bytes, CUmemoryPool pool, CUstream s) {
  CUdeviceptr p = 0;
  OK(cuMemAllocFromPoolAsync(&p, bytes, pool, s));
  BARRIER();
  SITE("async");
  return p;
}

static __attribute__((noipa)) CUarray alloc_array_2d(size_t w, size_t h) {
  CUDA_ARRAY_DESCRIPTOR d = {.Width = w, .Height = h, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
  CUarray a = NULL;
  OK(cuArrayCreate(&a, &d));
  BARRIER();
  SITE("array");
  return a;
}

static __attribute__((noipa)) CUarray alloc_array_3d(size_t w, size_t h, size_t depth) {
  CUDA_ARRAY3D_DESCRIPTOR d = {.Width = w, .Height = h, .Depth = depth, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                               .NumChannels = 2};
  CUarray a = NULL;
  OK(cuArray3DCreate(&a, &d));
  BARRIER();
  SITE("array");
  return a;
}

static __attribute__((noipa)) CUmipmappedArray alloc_mipmapped(size_t w, size_t h, unsigned levels) {
  CUDA_ARRAY3D_DESCRIPTOR d = {.Width = w, .Height = h, .Format = CU_AD_FORMAT_HALF, .NumChannels = 1};
  CUmipmappedArray a = NULL;
  OK(cuMipmappedArrayCreate(&a, &d, levels));
  BARRIER();
  SITE("array");
  return a;
}

static __attribute__((noipa)) CUmemGenericAllocationHandle create_physical(int device, size_t bytes) {
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device}};
  size_t granularity = 0;
  OK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  IT_CHECK(bytes % granularity == 0, "%zu is not a multiple of the granularity %zu", bytes, granularity);
  CUmemGenericAllocationHandle h = 0;
  OK(cuMemCreate(&h, bytes, &prop, 0));
  BARRIER();
  SITE("vmm_physical");
  return h;
}

static __attribute__((noipa)) void map_piece(CUdeviceptr at, size_t bytes, size_t offset,
                                                CUmemGenericAllocationHandle h, int device) {
  OK(cuMemMap(at, bytes, offset, h, 0));
  CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device},
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  OK(cuMemSetAccess(at, bytes, &access, 1));
  BARRIER();
  SITE("vmm_mapped");
}

static __attribute__((noipa)) void *alloc_pinned(size_t bytes) {
  void *p = NULL;
  OK(cuMemHostAlloc(&p, bytes, 0));
  BARRIER();
  SITE("host_pinned");
  return p;
}

static __attribute__((noipa)) CUdeviceptr open_ipc(CUipcMemHandle handle) {
  CUdeviceptr p = 0;
  OK(cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  BARRIER();
  SITE("ipc_imported");
  return p;
}

/* The child's side of the IPC import: open, dump, close; its exit status says how it went. With
 * ready_fd (wait_kill): open, dump, say so on ready_fd and wait for SIGKILL with the import live. */
static int ipc_child(CUipcMemHandle handle, const char *path, int ready_fd) {
  CUdeviceptr p = open_ipc(handle);
  int rc = cudasnap_dump(path);
  if (ready_fd >= 0) {
    if (rc != 0 || write(ready_fd, "r", 1) != 1) return 1;
    for (;;) pause();
  }
  return rc == 0 && cuIpcCloseMemHandle(p) == CUDA_SUCCESS ? 0 : 1;
}

static __attribute__((noipa)) CUdeviceptr alloc_cached(size_t bytes) {
  CUdeviceptr p = 0;
  OK(cuMemAlloc(&p, bytes));
  BARRIER();
  SITE("cached");
  return p;
}

/* A graph whose launch leaves `kept` bytes of graph memory live and used `scratch` more inside
 * it: the device's graph memory pool reserves both (the reconciliation names it). *result gets
 * the live allocation, *exec the graph's instantiation. */
static __attribute__((noipa)) CUgraph launch_graph_memory(size_t kept, size_t scratch, CUstream stream,
                                                          CUdeviceptr *result, CUgraphExec *exec) {
  CUgraph graph = NULL;
  OK(cuGraphCreate(&graph, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS p = it_alloc_node_params(scratch);
  CUgraphNode nodes[3];
  OK(cuGraphAddMemAllocNode(&nodes[0], graph, NULL, 0, &p));
  CUdeviceptr scratch_ptr = p.dptr;
  p.bytesize = kept;
  OK(cuGraphAddMemAllocNode(&nodes[1], graph, &nodes[0], 1, &p));
  BARRIER();
  SITE("graph");
  *result = p.dptr;
  OK(cuGraphAddMemFreeNode(&nodes[2], graph, &nodes[1], 1, scratch_ptr));
  OK(cuGraphInstantiateWithFlags(exec, graph, 0));
  OK(cuGraphLaunch(*exec, stream));
  OK(cuStreamSynchronize(stream));
  return graph;
}

/* A capture on `stream` whose stream-ordered allocation of `bytes` becomes a graph memory node,
 * live after each launch of the graph until it is freed. */
static __attribute__((noipa)) CUgraph capture_graph_memory(size_t bytes, CUstream stream, CUdeviceptr *result,
                                                           CUgraphExec *exec) {
  CUgraph graph = NULL;
  OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuMemAllocAsync(result, bytes, stream));
  BARRIER();
  SITE("graph");
  OK(cuStreamEndCapture(stream, &graph));
  OK(cuGraphInstantiateWithFlags(exec, graph, 0));
  OK(cuGraphLaunch(*exec, stream));
  return graph;
}

/* One of cudasnap's pass-through statistics, through include/cudasnap.h. */
static int64_t passthrough_stat(int device, const char *key) {
  cudasnap_stat_t kv[CUDASNAP_PASSTHROUGH_KEYS];
  int n = cudasnap_passthrough_stats(device, kv, CUDASNAP_PASSTHROUGH_KEYS);
  IT_CHECK(n == (device == CUDASNAP_HOST ? CUDASNAP_PASSTHROUGH_HOST_KEYS : CUDASNAP_PASSTHROUGH_KEYS),
           "cudasnap_passthrough_stats(%d) reports %d keys", device, n);
  for (int i = 0; i < n; i++)
    if (strcmp(kv[i].key, key) == 0) return kv[i].value;
  IT_CHECK(0, "no key %s for device %d", key, device);
  return -1;
}

static size_t in_use(void) {
  fake_cuda_counters_t c;
  fake_cuda_get_counters(&c);
  return c.bytes_in_use;
}

int main(int argc, char **argv) {
  const bool wait_kill = argc == 5 && strcmp(argv[4], "wait_kill") == 0;
  IT_CHECK(argc == 4 || wait_kill, "usage: %s OUT.json OUT.pickle CHILD.json [wait_kill]", argv[0]);
  IT_CHECK(cudasnap_dump != NULL, "run under cudasnap");
  CUcontext ctx[2];
  OK(cuInit(0));
  for (int d = 0; d < 2; d++) OK(cuDevicePrimaryCtxRetain(&ctx[d], d));

  /* ---- device 1: one of each, kept ---- */
  OK(cuCtxSetCurrent(ctx[1]));
  CUdeviceptr cached1 = alloc_cached(2 * MIB);
  CUdeviceptr async1 = alloc_stream_ordered(MIB, NULL);
  /* a pool made current: cuMemAllocAsync takes from it, and only the driver knows it is there */
  CUmemoryPool current1 = NULL;
  CUmemPoolProps props1 = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                           .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1}};
  OK(cuMemPoolCreate(&current1, &props1));
  OK(cuDeviceSetMemPool(1, current1));
  (void)alloc_stream_ordered(3 * MIB, NULL); /* live to the end */
  CUdeviceptr managed1 = alloc_managed(MIB);
  CUmemGenericAllocationHandle h1 = create_physical(1, 2 * MIB);
  CUdeviceptr range1 = 0;
  OK(cuMemAddressReserve(&range1, 8 * MIB, 0, 0, 0));
  map_piece(range1, 2 * MIB, 0, h1, 1);
  /* as PyTorch's expandable segments do: one big reserved range, a handle per page mapped one
   * after the other, the last page given back (empty_cache) */
  CUdeviceptr expandable = 0;
  OK(cuMemAddressReserve(&expandable, 64 * MIB, 0, 0, 0));
  CUmemGenericAllocationHandle pages[3];
  for (int i = 0; i < 3; i++) {
    pages[i] = create_physical(1, 2 * MIB);
    map_piece(expandable + (size_t)i * 2 * MIB, 2 * MIB, 0, pages[i], 1);
  }
  OK(cuMemUnmap(expandable + 4 * MIB, 2 * MIB));
  OK(cuMemRelease(pages[2]));

  /* ---- device 0 ---- */
  OK(cuCtxSetCurrent(ctx[0]));
  CUstream s[2];
  for (int i = 0; i < 2; i++) OK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
  CUdeviceptr cached0 = alloc_cached(4 * MIB);
  unsigned int legacy = alloc_legacy((unsigned)MIB);
  OK(it_cuMemFree_v1(alloc_legacy(512 << 10)));
  CUdeviceptr pitched = alloc_pitched(1000, 300);
  OK(cuMemFree(alloc_pitched(2000, 10)));
  CUdeviceptr managed = alloc_managed(3 * MIB);
  OK(cuMemFree(alloc_managed(MIB)));

  /* stream-ordered: two streams, freed out of order */
  CUdeviceptr a1 = alloc_stream_ordered(MIB, s[0]);
  CUdeviceptr a2 = alloc_stream_ordered(3 * MIB, s[0]);
  CUdeviceptr a3 = alloc_stream_ordered(2 * MIB, s[1]);
  OK(cuMemFreeAsync(a2, s[1]));
  OK(cuMemFreeAsync(a1, s[0]));
  CUmemoryPool pool = NULL;
  CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                          .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  OK(cuMemPoolCreate(&pool, &props));
  CUdeviceptr p1 = alloc_from_pool(5 * MIB, pool, s[1]);
  CUdeviceptr p2 = alloc_from_pool(MIB, pool, s[0]);
  OK(cuMemFreeAsync(p1, s[1]));
  cuuint64_t reserved = 0;
  OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
  IT_CHECK(reserved == 6 * MIB, "the pool reserves %" PRIu64 " bytes before the trim", (uint64_t)reserved);
  OK(cuMemPoolTrimTo(pool, 0)); /* mid-run: the pool gives back what p1 held */
  OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
  IT_CHECK(reserved == 2 * MIB, "the pool reserves %" PRIu64 " bytes after the trim", (uint64_t)reserved);

  /* arrays */
  CUarray array2d = alloc_array_2d(256, 256);
  OK(cuArrayDestroy(alloc_array_3d(64, 64, 16)));
  CUmipmappedArray mip = alloc_mipmapped(512, 512, 4);

  /* VMM: one handle mapped in three pieces, another beside it; the middle piece unmapped first */
  CUmemGenericAllocationHandle h = create_physical(0, 8 * MIB), h2 = create_physical(0, 4 * MIB);
  CUdeviceptr range = 0;
  OK(cuMemAddressReserve(&range, 32 * MIB, 0, 0, 0));
  map_piece(range, 2 * MIB, 0, h, 0);
  map_piece(range + 2 * MIB, 4 * MIB, 2 * MIB, h, 0);
  map_piece(range + 6 * MIB, 2 * MIB, 6 * MIB, h, 0);
  map_piece(range + 10 * MIB, 4 * MIB, 0, h2, 0);
  OK(cuMemUnmap(range + 2 * MIB, 4 * MIB));
  OK(cuMemRelease(h)); /* still mapped: its memory stays until the last piece goes */

  /* graph memory nodes: 1 MiB left live by a launch that used 3 MiB more inside it */
  CUdeviceptr graph_result = 0;
  CUgraphExec graph_exec = NULL;
  CUgraph graph = launch_graph_memory(MIB, 3 * MIB, s[0], &graph_result, &graph_exec);
  CUdeviceptr captured_result = 0;
  CUgraphExec captured_exec = NULL;
  CUgraph captured = capture_graph_memory(2 * MIB, s[1], &captured_result, &captured_exec);

  void *pinned = alloc_pinned(MIB);
  void *small_pinned = NULL;
  OK(cuMemAllocHost(&small_pinned, 64 << 10));
  OK(cuMemFreeHost(small_pinned));

  /* the statistics through the API: the physical VMM memory of device 0 (h is released but
   * mapped), the stream-ordered bytes freed, pinned host memory */
  IT_CHECK(passthrough_stat(0, "passthrough_bytes.vmm_physical.current") == (int64_t)(12 * MIB), "vmm_physical");
  IT_CHECK(passthrough_stat(0, "passthrough_bytes.vmm_mapped.peak") == (int64_t)(12 * MIB), "vmm_mapped peak");
  IT_CHECK(passthrough_stat(0, "passthrough_bytes.async.freed") == (int64_t)(9 * MIB), "async freed");
  IT_CHECK(passthrough_stat(1, "passthrough_bytes.managed.current") == (int64_t)MIB, "managed on device 1");
  IT_CHECK(passthrough_stat(CUDASNAP_HOST, "passthrough_bytes.host_pinned.current") == (int64_t)MIB, "host");
  IT_CHECK(cudasnap_passthrough_stats(-3, NULL, 0) == -1, "device -3 is refused");

  /* everything live: the snapshot must account for every byte the driver counts */
  printf("in_use_at_dump %zu\n", in_use());
  IT_CHECK(cudasnap_dump(argv[1]) == 0, "dump to %s failed", argv[1]);
  IT_CHECK(cudasnap_dump(argv[2]) == 0, "dump to %s failed", argv[2]);

  /* IPC: a whole 4 MiB segment of the cache, imported by a child */
  CUipcMemHandle ipc;
  OK(cuIpcGetMemHandle(&ipc, cached0));
  fflush(stdout);
  int ready[2] = {-1, -1};
  IT_CHECK(!wait_kill || pipe(ready) == 0, "pipe failed");
  pid_t child = fork();
  IT_CHECK(child >= 0, "fork failed");
  if (child == 0) _exit(ipc_child(ipc, argv[3], ready[1]));
  if (wait_kill) {
    /* every kind live, here and in the child: kill -9 comes now */
    char c;
    IT_CHECK(read(ready[0], &c, 1) == 1, "the IPC child failed");
    printf("ready %d\n", (int)child);
    fflush(stdout);
    for (;;) pause();
  }
  int status = 0;
  IT_CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the IPC child failed (status %d)", status);

  /* free part of it, leave one of every kind */
  OK(cuMemFreeAsync(graph_result, s[0]));
  OK(cuMemFreeAsync(captured_result, s[1]));
  OK(cuGraphExecDestroy(graph_exec));
  OK(cuGraphDestroy(graph));
  OK(cuGraphExecDestroy(captured_exec));
  OK(cuGraphDestroy(captured));
  OK(cuDeviceGraphMemTrim(0));
  OK(cuMemFree(cached0));
  OK(cuMemFreeAsync(a3, s[1]));
  OK(cuMemUnmap(range, 2 * MIB));
  OK(cuMemUnmap(range + 6 * MIB, 2 * MIB)); /* h is gone now */
  OK(cuCtxSetCurrent(ctx[1]));
  OK(cuMemFree(cached1));
  OK(cuMemFreeAsync(async1, NULL));
  OK(cuMemUnmap(range1, 2 * MIB));
  OK(cuMemRelease(h1));
  OK(cuMemAddressFree(range1, 8 * MIB));
  OK(cuMemFree(managed1));
  OK(cuCtxSetCurrent(ctx[0]));
  (void)legacy, (void)pitched, (void)managed, (void)p2, (void)array2d, (void)mip, (void)h2, (void)pinned;
  printf("in_use_at_exit %zu\n", in_use());
  return 0;
}

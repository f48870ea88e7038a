/* SPDX-License-Identifier: Apache-2.0 */
/* The fake driver's VMM, stream-ordered pools, arrays (tests/fakes/fake_cuda_mem.c) and graph
 * memory nodes (fake_cuda_graph.c), with no preload: the used bytes cuMemGetInfo reports follow
 * each call, and bad use gets the driver's status codes. Prints one "ok" line per group; exits 1 at the first failure. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)

static int failures;

#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #cond);                                      \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

static size_t used(void) {
  size_t free_bytes = 0, total = 0;
  if (cuMemGetInfo(&free_bytes, &total) != CUDA_SUCCESS) return (size_t)-1;
  return total - free_bytes;
}

static void check_vmm(void) {
  size_t base = used();
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  CUmemAllocationProp bad_device = prop;
  bad_device.location.id = 7;
  size_t g = 0;
  EXPECT(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS && g == 2 * MIB);
  CUmemGenericAllocationHandle h = 0, other = 0;
  EXPECT(cuMemCreate(&h, MIB, &prop, 0) == CUDA_ERROR_INVALID_VALUE); /* not a multiple of g */
  EXPECT(cuMemCreate(&h, 2 * MIB, &bad_device, 0) == CUDA_ERROR_INVALID_DEVICE);
  EXPECT(cuMemCreate(&h, 4 * MIB, &prop, 0) == CUDA_SUCCESS && used() == base + 4 * MIB);
  EXPECT(cuMemCreate(&other, 2 * MIB, &prop, 0) == CUDA_SUCCESS && used() == base + 6 * MIB);
  CUdeviceptr r = 0;
  EXPECT(cuMemAddressReserve(&r, 8 * MIB, 0, 0, 0) == CUDA_SUCCESS && r % g == 0);
  EXPECT(used() == base + 6 * MIB); /* address space is not memory */
  EXPECT(cuMemMap(r + MIB, 2 * MIB, 0, h, 0) == CUDA_ERROR_INVALID_VALUE);      /* unaligned */
  EXPECT(cuMemMap(r, 2 * MIB, 4 * MIB, h, 0) == CUDA_ERROR_INVALID_VALUE);      /* past the handle */
  EXPECT(cuMemMap(r + 8 * MIB, 2 * MIB, 0, h, 0) == CUDA_ERROR_INVALID_VALUE);  /* outside */
  EXPECT(cuMemMap(r, 2 * MIB, 0, (CUmemGenericAllocationHandle)&base, 0) == CUDA_ERROR_INVALID_HANDLE);
  EXPECT(cuMemMap(r, 4 * MIB, 0, h, 0) == CUDA_SUCCESS);
  EXPECT(cuMemMap(r + 2 * MIB, 2 * MIB, 0, other, 0) == CUDA_ERROR_INVALID_VALUE); /* overlaps */
  EXPECT(cuMemMap(r + 4 * MIB, 2 * MIB, 0, other, 0) == CUDA_SUCCESS);
  CUmemAccessDesc rw = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                        .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  static unsigned char host[6 * MIB];
  EXPECT(cuMemcpyHtoD(r, host, MIB) == CUDA_ERROR_INVALID_VALUE); /* mapped, no access yet */
  EXPECT(cuMemSetAccess(r, 8 * MIB, &rw, 1) == CUDA_ERROR_INVALID_VALUE); /* not all mapped */
  EXPECT(cuMemSetAccess(r, 6 * MIB, &rw, 1) == CUDA_SUCCESS);
  memset((void *)(uintptr_t)r, 7, 6 * MIB); /* mapped and accessible: usable */
  /* copies run across the two mappings side by side, not past the mapped end */
  EXPECT(cuMemcpyHtoD(r + MIB, host, 5 * MIB) == CUDA_SUCCESS);
  EXPECT(cuMemcpyDtoH(host, r, 6 * MIB) == CUDA_SUCCESS && host[0] == 7 && host[MIB] == 0);
  EXPECT(cuMemcpyHtoD(r + 4 * MIB, host, 3 * MIB) == CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc ro = rw;
  ro.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  EXPECT(cuMemSetAccess(r + 4 * MIB, 2 * MIB, &ro, 1) == CUDA_SUCCESS);
  EXPECT(cuMemcpyDtoH(host, r + 4 * MIB, MIB) == CUDA_SUCCESS);
  EXPECT(cuMemsetD8(r + 4 * MIB, 1, MIB) == CUDA_ERROR_INVALID_VALUE); /* read-only now */
  EXPECT(cuMemUnmap(r, 2 * MIB) == CUDA_ERROR_INVALID_VALUE);       /* half of a mapping */
  EXPECT(cuMemAddressFree(r, 8 * MIB) == CUDA_ERROR_INVALID_VALUE); /* still mapped */
  EXPECT(cuMemRelease(h) == CUDA_SUCCESS && used() == base + 6 * MIB); /* mapped: kept */
  EXPECT(cuMemRelease(h) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemUnmap(r + 4 * MIB, 2 * MIB) == CUDA_SUCCESS && used() == base + 6 * MIB);
  EXPECT(cuMemUnmap(r, 4 * MIB) == CUDA_SUCCESS && used() == base + 2 * MIB); /* h freed now */
  EXPECT(cuMemMap(r, 2 * MIB, 0, h, 0) == CUDA_ERROR_INVALID_HANDLE);
  EXPECT(cuMemAddressFree(r, 4 * MIB) == CUDA_ERROR_INVALID_VALUE); /* not the whole range */
  EXPECT(cuMemAddressFree(r, 8 * MIB) == CUDA_SUCCESS);
  EXPECT(cuMemRelease(other) == CUDA_SUCCESS && used() == base);
  if (!failures) printf("ok   VMM: granularity, create, reserve, map at offsets, access, unmap, release\n");
}

static cuuint64_t pool_attr(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t v = 0;
  return cuMemPoolGetAttribute(pool, attr, &v) == CUDA_SUCCESS ? v : (cuuint64_t)-1;
}

static void check_pools(void) {
  int before = failures;
  size_t base = used();
  CUstream s = NULL;
  EXPECT(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CUmemoryPool def = NULL, pool = NULL;
  EXPECT(cuDeviceGetDefaultMemPool(&def, 0) == CUDA_SUCCESS && def != NULL);
  EXPECT(cuDeviceGetDefaultMemPool(&def, 9) == CUDA_ERROR_INVALID_DEVICE);
  CUdeviceptr a = 0, b = 0;
  EXPECT(cuMemAllocAsync(&a, MIB, s) == CUDA_SUCCESS && used() == base + 2 * MIB);
  EXPECT(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 2 * MIB &&
         pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == MIB);
  EXPECT(cuMemFreeAsync(a, s) == CUDA_SUCCESS && used() == base + 2 * MIB); /* cached by the pool */
  cuuint64_t threshold = 4 * MIB;
  EXPECT(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) == CUDA_SUCCESS);
  EXPECT(cuStreamSynchronize(s) == CUDA_SUCCESS && used() == base + 2 * MIB); /* under the threshold */
  threshold = 0;
  EXPECT(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) == CUDA_SUCCESS);
  EXPECT(cuStreamSynchronize(s) == CUDA_SUCCESS && used() == base);
  EXPECT(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 2 * MIB);
  cuuint64_t nonzero = 1;
  EXPECT(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &nonzero) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemPoolDestroy(def) == CUDA_ERROR_INVALID_VALUE); /* the default pool stays */

  CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                          .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  EXPECT(cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS);
  EXPECT(cuMemAllocFromPoolAsync(&a, 5 * MIB, pool, s) == CUDA_SUCCESS && used() == base + 6 * MIB);
  EXPECT(cuMemAllocFromPoolAsync(&b, MIB, pool, s) == CUDA_SUCCESS && used() == base + 6 * MIB);
  EXPECT(cuMemPoolTrimTo(pool, 0) == CUDA_SUCCESS && used() == base + 6 * MIB); /* all in use */
  EXPECT(cuMemFreeAsync(a, s) == CUDA_SUCCESS && used() == base + 6 * MIB);
  EXPECT(cuMemPoolTrimTo(pool, 3 * MIB) == CUDA_SUCCESS && used() == base + 4 * MIB);
  EXPECT(cuMemPoolTrimTo(pool, 0) == CUDA_SUCCESS && used() == base + 2 * MIB);
  EXPECT(cuMemPoolDestroy(pool) == CUDA_SUCCESS && used() == base + 2 * MIB); /* b outstanding */
  EXPECT(cuMemAllocFromPoolAsync(&a, MIB, pool, s) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemFreeAsync(b, s) == CUDA_SUCCESS && used() == base); /* the destroyed pool goes */
  EXPECT(cuStreamDestroy(s) == CUDA_SUCCESS);
  if (failures == before) printf("ok   pools: default and created, reserved vs used, threshold, trim, destroy\n");
}

static void check_arrays(void) {
  int before = failures;
  size_t base = used();
  CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 256, .Height = 256, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
  CUarray a = NULL, bad = NULL;
  EXPECT(cuArrayCreate(&a, &d2) == CUDA_SUCCESS && used() == base + MIB);
  d2.NumChannels = 3;
  EXPECT(cuArrayCreate(&bad, &d2) == CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 512, .Height = 512, .Format = CU_AD_FORMAT_HALF, .NumChannels = 1};
  CUmipmappedArray m = NULL;
  EXPECT(cuMipmappedArrayCreate(&m, &d3, 4) == CUDA_SUCCESS &&
         used() == base + MIB + (512 * 512 + 256 * 256 + 128 * 128 + 64 * 64) * 2);
  EXPECT(cuArrayDestroy((CUarray)m) == CUDA_ERROR_INVALID_HANDLE); /* not a plain array */
  EXPECT(cuMipmappedArrayDestroy(m) == CUDA_SUCCESS && cuArrayDestroy(a) == CUDA_SUCCESS && used() == base);
  EXPECT(cuArrayDestroy(a) == CUDA_ERROR_INVALID_HANDLE);
  if (failures == before) printf("ok   arrays: sizes from descriptors, mipmapped levels, bad descriptors and handles\n");
}

static cuuint64_t graph_attr(CUgraphMem_attribute attr) {
  cuuint64_t v = UINT64_MAX;
  return cuDeviceGetGraphMemAttribute(0, attr, &v) == CUDA_SUCCESS ? v : UINT64_MAX;
}

static void check_graphs(void) {
  int before = failures;
  size_t base = used();
  CUgraph graph = NULL, other = NULL;
  EXPECT(cuGraphCreate(&graph, 0) == CUDA_SUCCESS && cuGraphCreate(&other, 0) == CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.bytesize = 3 * MIB;
  CUgraphNode alloc = NULL, freed = NULL, kept = NULL;
  EXPECT(cuGraphAddMemAllocNode(&alloc, graph, NULL, 0, &p) == CUDA_SUCCESS && p.dptr != 0);
  CUdeviceptr scratch = p.dptr;
  p.bytesize = 0;
  EXPECT(cuGraphAddMemAllocNode(&kept, graph, &alloc, 1, &p) == CUDA_ERROR_INVALID_VALUE);
  p.bytesize = MIB;
  p.poolProps.location.id = 7;
  EXPECT(cuGraphAddMemAllocNode(&kept, graph, &alloc, 1, &p) == CUDA_ERROR_INVALID_DEVICE);
  p.poolProps.location.id = 0;
  EXPECT(cuGraphAddMemAllocNode(&kept, graph, &alloc, 1, &p) == CUDA_SUCCESS);
  CUdeviceptr result = p.dptr;
  EXPECT(cuGraphAddMemFreeNode(&freed, graph, &kept, 1, scratch) == CUDA_SUCCESS);
  EXPECT(cuGraphAddMemFreeNode(&freed, graph, &kept, 1, scratch) == CUDA_ERROR_INVALID_VALUE); /* freed once */
  EXPECT(cuGraphAddMemFreeNode(&freed, graph, NULL, 0, scratch + 1) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(used() == base && graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0); /* no memory until a launch */
  CUgraphExec exec = NULL, second = NULL;
  EXPECT(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
  EXPECT(cuGraphInstantiateWithFlags(&second, graph, 0) == CUDA_ERROR_INVALID_VALUE); /* one at a time */
  EXPECT(cuGraphLaunch(exec, (CUstream)&base) == CUDA_ERROR_INVALID_HANDLE);
  EXPECT(cuGraphLaunch(exec, NULL) == CUDA_SUCCESS);
  /* the scratch allocation came and went inside the launch; the result is live */
  EXPECT(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == MIB);
  EXPECT(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == 4 * MIB);
  EXPECT(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 4 * MIB && used() == base + 4 * MIB);
  memset((void *)(uintptr_t)result, 5, MIB); /* live: usable */
  EXPECT(cuMemsetD8(result, 6, MIB) == CUDA_SUCCESS && cuMemsetD8(result, 6, MIB + 1) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemsetD8(scratch, 6, 1) == CUDA_ERROR_INVALID_VALUE); /* freed inside the launch */
  EXPECT(cuGraphLaunch(exec, NULL) == CUDA_ERROR_INVALID_VALUE); /* the result is still live */
  EXPECT(cuMemFreeAsync(result, NULL) == CUDA_SUCCESS && graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  EXPECT(cuMemFreeAsync(result, NULL) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(used() == base + 4 * MIB); /* freed bytes stay in the pool */
  EXPECT(cuGraphLaunch(exec, NULL) == CUDA_SUCCESS && used() == base + 4 * MIB); /* reused */
  /* another graph frees the result; then the trim gives back what no allocation uses */
  CUgraphNode other_free = NULL;
  EXPECT(cuGraphAddMemFreeNode(&other_free, other, NULL, 0, scratch) == CUDA_ERROR_INVALID_VALUE); /* freed in its graph */
  EXPECT(cuGraphAddMemFreeNode(&other_free, other, NULL, 0, result) == CUDA_SUCCESS);
  EXPECT(cuGraphAddMemFreeNode(&freed, graph, NULL, 0, result) == CUDA_ERROR_INVALID_VALUE); /* freed elsewhere */
  CUgraphExec other_exec = NULL;
  EXPECT(cuGraphInstantiateWithFlags(&other_exec, other, 0) == CUDA_SUCCESS);
  EXPECT(cuGraphLaunch(other_exec, NULL) == CUDA_SUCCESS && graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  EXPECT(cuGraphLaunch(other_exec, NULL) == CUDA_ERROR_INVALID_VALUE); /* nothing live to free */
  EXPECT(cuDeviceGraphMemTrim(0) == CUDA_SUCCESS && used() == base);
  EXPECT(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0 && graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 4 * MIB);
  cuuint64_t zero = 0, one = 1;
  EXPECT(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &one) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &zero) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero) == CUDA_SUCCESS &&
         graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 0);
  /* auto-free on launch: a relaunch frees the live result first; a launch past the device fails */
  EXPECT(cuGraphExecDestroy(exec) == CUDA_SUCCESS && cuGraphExecDestroy(exec) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuGraphInstantiateWithFlags(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) == CUDA_SUCCESS);
  EXPECT(cuGraphLaunch(exec, NULL) == CUDA_SUCCESS && cuGraphLaunch(exec, NULL) == CUDA_SUCCESS);
  EXPECT(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == MIB && used() == base + 4 * MIB);
  /* the graphs go; the live result stays the program's until it frees it */
  EXPECT(cuGraphExecDestroy(exec) == CUDA_SUCCESS && cuGraphExecDestroy(other_exec) == CUDA_SUCCESS);
  EXPECT(cuGraphDestroy(graph) == CUDA_SUCCESS && cuGraphDestroy(other) == CUDA_SUCCESS);
  EXPECT(cuGraphDestroy(graph) == CUDA_ERROR_INVALID_VALUE);
  memset((void *)(uintptr_t)result, 6, MIB);
  EXPECT(cuMemFree(result) == CUDA_SUCCESS && graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  EXPECT(cuDeviceGraphMemTrim(0) == CUDA_SUCCESS && used() == base);
  /* a capture makes the nodes: stream-ordered calls on the capturing stream allocate nothing */
  CUstream stream = NULL;
  EXPECT(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  EXPECT(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS);
  CUdeviceptr kept_ptr = 0, temp = 0;
  EXPECT(cuMemAllocAsync(&kept_ptr, 2 * MIB, stream) == CUDA_SUCCESS && cuMemAllocAsync(&temp, MIB, stream) == CUDA_SUCCESS);
  EXPECT(cuMemFreeAsync(temp, stream) == CUDA_SUCCESS && used() == base);
  CUgraph captured = NULL;
  EXPECT(cuStreamEndCapture(stream, &captured) == CUDA_SUCCESS && captured != NULL);
  size_t count = 0;
  EXPECT(cuGraphGetNodes(captured, NULL, &count) == CUDA_SUCCESS && count == 3);
  CUgraphNode nodes[4] = {NULL, NULL, NULL, (CUgraphNode)&base};
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  count = 4;
  EXPECT(cuGraphGetNodes(captured, nodes, &count) == CUDA_SUCCESS && count == 3 && nodes[3] == NULL);
  EXPECT(cuGraphNodeGetType(nodes[2], &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_MEM_FREE);
  CUDA_MEM_ALLOC_NODE_PARAMS got;
  EXPECT(cuGraphMemAllocNodeGetParams(nodes[0], &got) == CUDA_SUCCESS && got.dptr == kept_ptr && got.bytesize == 2 * MIB);
  CUdeviceptr freed_ptr = 0;
  EXPECT(cuGraphMemFreeNodeGetParams(nodes[2], &freed_ptr) == CUDA_SUCCESS && freed_ptr == temp);
  EXPECT(cuGraphMemFreeNodeGetParams(nodes[0], &freed_ptr) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuGraphInstantiateWithFlags(&exec, captured, 0) == CUDA_SUCCESS && cuGraphLaunch(exec, stream) == CUDA_SUCCESS);
  EXPECT(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 2 * MIB && used() == base + 4 * MIB);
  EXPECT(cuMemFreeAsync(kept_ptr, stream) == CUDA_SUCCESS && cuGraphExecDestroy(exec) == CUDA_SUCCESS);
  EXPECT(cuGraphDestroy(captured) == CUDA_SUCCESS && cuDeviceGraphMemTrim(0) == CUDA_SUCCESS && used() == base);
  EXPECT(cuStreamDestroy(stream) == CUDA_SUCCESS);
  if (failures == before) printf("ok   graphs: memory nodes, launches, frees inside and outside, trim, attributes, capture\n");
}

int main(void) {
  CUcontext ctx = NULL;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    fprintf(stderr, "FAIL: no context\n");
    return 1;
  }
  check_vmm();
  check_pools();
  check_arrays();
  check_graphs();
  return failures ? 1 : 0;
}

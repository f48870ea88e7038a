/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 44, item 3: every out-of-memory answer the program gets is recorded, whatever the kind of
 * memory. With FAKE_CUDA_CAPACITY=67108864 and FAKE_CUDA_HOST_CAPACITY=1048576, each call below
 * asks for more than there is, even after cudasnap gives back its cache (16 MiB of it is cached
 * first), and gets CUDA_ERROR_OUT_OF_MEMORY: the cache's own path once, and past it cuMemAlloc
 * (v1), pitch, managed, stream-ordered (the default pool and a created one), cuMemCreate, arrays
 * (2D, 3D, mipmapped), a graph's launch and upload, and pinned host memory (cuMemHostAlloc,
 * cuMemCreate located on the host).
 *
 * Under cudasnap it checks what the program can read itself: num_ooms of device 0 is the count of
 * device answers, each passthrough_ooms.KIND key counts its kind's, and the host answers left the
 * cache as it was (nothing given back for them). It prints "device_ooms N"
 * and "host_ooms N" for oom_kinds.sh, which checks the snapshots. */
#include <cuda.h>

#include "tests/integration/it_driver.h"

/* The 32-bit ABI entry point, which cuda.h renames away. */
extern CUresult it_cuMemAlloc_v1(unsigned int *dptr, unsigned int bytes) __asm__("cuMemAlloc");

#define TOO_MUCH (128 * IT_MIB)

static int it_device_ooms, it_host_ooms;

/* One call that must get CUDA_ERROR_OUT_OF_MEMORY. */
static void it_oom(const char *what, CUresult r, int host) {
  IT_CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "%s: %d, not CUDA_ERROR_OUT_OF_MEMORY", what, (int)r);
  if (host) it_host_ooms++;
  else it_device_ooms++;
}

static int64_t it_passthrough_stat(int device, const char *key) {
  cudasnap_stat_t kv[CUDASNAP_PASSTHROUGH_KEYS];
  int n = cudasnap_passthrough_stats(device, kv, CUDASNAP_PASSTHROUGH_KEYS);
  for (int i = 0; i < n; i++)
    if (strcmp(kv[i].key, key) == 0) return kv[i].value;
  IT_FAIL("no key %s for device %d", key, device);
}

int main(void) {
  int preloaded = it_preloaded();
  (void)it_driver_context();
  CUstream stream = NULL;
  IT_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "cuStreamCreate");
  it_free_ok(it_alloc_ok(16 * IT_MIB)); /* cached under cudasnap: given back, which is not enough */

  CUdeviceptr p = 0;
  it_oom("cuMemAlloc_v2", cuMemAlloc(&p, TOO_MUCH), 0);
  unsigned int p32 = 0;
  it_oom("cuMemAlloc (v1)", it_cuMemAlloc_v1(&p32, (unsigned)TOO_MUCH), 0);
  size_t pitch = 0;
  it_oom("cuMemAllocPitch", cuMemAllocPitch(&p, &pitch, 64 * IT_KIB, 2048, 4), 0);
  it_oom("cuMemAllocManaged", cuMemAllocManaged(&p, TOO_MUCH, CU_MEM_ATTACH_GLOBAL), 0);
  it_oom("cuMemAllocAsync", cuMemAllocAsync(&p, TOO_MUCH, stream), 0);
  CUmemoryPool pool = NULL;
  CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                          .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  IT_CHECK(cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS, "cuMemPoolCreate");
  it_oom("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync(&p, TOO_MUCH, pool, stream), 0);
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  CUmemGenericAllocationHandle handle = 0;
  it_oom("cuMemCreate", cuMemCreate(&handle, TOO_MUCH, &prop, 0), 0);
  CUDA_ARRAY_DESCRIPTOR desc2 = {.Width = 8192, .Height = 8192, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
  CUarray array = NULL;
  it_oom("cuArrayCreate", cuArrayCreate(&array, &desc2), 0);
  CUDA_ARRAY3D_DESCRIPTOR desc3 = {.Width = 1024, .Height = 1024, .Depth = 64, .Format = CU_AD_FORMAT_FLOAT,
                                   .NumChannels = 1};
  it_oom("cuArray3DCreate", cuArray3DCreate(&array, &desc3), 0);
  CUmipmappedArray mip = NULL;
  it_oom("cuMipmappedArrayCreate", cuMipmappedArrayCreate(&mip, &desc3, 2), 0);

  CUgraph graph = NULL;
  IT_CHECK(cuGraphCreate(&graph, 0) == CUDA_SUCCESS, "cuGraphCreate");
  CUDA_MEM_ALLOC_NODE_PARAMS node = it_alloc_node_params(TOO_MUCH);
  CUgraphNode alloc = NULL, freed = NULL;
  IT_CHECK(cuGraphAddMemAllocNode(&alloc, graph, NULL, 0, &node) == CUDA_SUCCESS, "cuGraphAddMemAllocNode");
  IT_CHECK(cuGraphAddMemFreeNode(&freed, graph, &alloc, 1, node.dptr) == CUDA_SUCCESS, "cuGraphAddMemFreeNode");
  CUgraphExec exec = NULL;
  IT_CHECK(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS, "cuGraphInstantiateWithFlags");
  it_oom("cuGraphUpload", cuGraphUpload(exec, stream), 0);
  it_oom("cuGraphLaunch", cuGraphLaunch(exec, stream), 0);

  /* host answers leave the device caches alone: what is cached stays cached */
  it_free_ok(it_alloc_ok(IT_MIB));
  int64_t cached = preloaded ? it_stat(0, "reserved_bytes.all.current") : 0;
  void *host = NULL;
  it_oom("cuMemHostAlloc", cuMemHostAlloc(&host, 2 * IT_MIB, 0), 1);
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  it_oom("cuMemCreate on the host", cuMemCreate(&handle, 2 * IT_MIB, &prop, 0), 1);
  if (preloaded)
    IT_CHECK(cached > 0 && it_stat(0, "reserved_bytes.all.current") == cached,
             "the cache held %" PRId64 " bytes before the host answers, %" PRId64 " after", cached,
             it_stat(0, "reserved_bytes.all.current"));

  /* the cache goes on serving the thread: the guard is whole after the host answers */
  it_free_ok(it_alloc_ok(IT_MIB));

  if (preloaded) {
    int64_t num_ooms = it_stat(0, "num_ooms");
    IT_CHECK(num_ooms == it_device_ooms, "num_ooms %" PRId64 ", the program got %d", num_ooms, it_device_ooms);
    static const struct {
      const char *key;
      int64_t count;
    } kinds[] = {{"passthrough_ooms.device", 1},       {"passthrough_ooms.pitch", 1},
                 {"passthrough_ooms.managed", 1},      {"passthrough_ooms.async", 2},
                 {"passthrough_ooms.vmm_physical", 1}, {"passthrough_ooms.array", 3},
                 {"passthrough_ooms.graph", 2},        {"passthrough_ooms.ipc_imported", 0},
                 {"passthrough_ooms.vmm_mapped", 0}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
      int64_t got = it_passthrough_stat(0, kinds[i].key);
      IT_CHECK(got == kinds[i].count, "%s is %" PRId64 ", not %" PRId64, kinds[i].key, got, kinds[i].count);
    }
    int64_t host_ooms = it_passthrough_stat(CUDASNAP_HOST, "passthrough_ooms.host_pinned");
    IT_CHECK(host_ooms == 2, "passthrough_ooms.host_pinned %" PRId64, host_ooms);
  }
  IT_CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS && cuGraphDestroy(graph) == CUDA_SUCCESS, "graph teardown");
  printf("device_ooms %d\nhost_ooms %d\n", it_device_ooms, it_host_ooms);
  return 0;
}

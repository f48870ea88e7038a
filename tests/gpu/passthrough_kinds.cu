/* SPDX-License-Identifier: Apache-2.0 */
// Pass-through memory in snapshots (scripts/gpu-run.sh): the device memory cudasnap does not cache
// but passes through to the driver must still be drawn as segments, so a snapshot shows all the
// memory a program holds. One range of each kind, all live at once:
//   vmm      NCCL's way: driver entry points fetched through cudaGetDriverEntryPointByVersion,
//            cuMemCreate (with a POSIX file descriptor handle type, as NCCL asks for),
//            cuMemAddressReserve at the allocation granularity, cuMemMap, cuMemSetAccess
//   async    cudaMallocAsync from the device's default memory pool
//   managed  cudaMallocManaged
//   pitch    cudaMallocPitch (cuMemAllocPitch)
//   host     cudaMallocHost (pinned host memory; reported, not required to be drawn)
//   graph    a graph memory node: cudaMallocAsync captured on a stream, live after the graph's
//            launch until cudaFreeAsync
// A kernel fills each device range and the checksum must not change under cudasnap. With cudasnap
// preloaded the program calls cudasnap_dump(argv[1]) while every range is live, then frees them
// all (unmap, release, address free), so the exit snapshot must draw none of them.
// Prints RANGE KIND ADDRESS BYTES (decimal) per range, DUMP (cudasnap_dump's result, -1 without
// cudasnap) and CHECKSUM.
#include <cuda.h>

#include "tests/gpu/gc_common.h"

#define GC_CU(call) gc_cu((call), #call, __LINE__)

static void gc_cu(CUresult r, const char *what, int line) {
  if (r == CUDA_SUCCESS) return;
  std::fprintf(stderr, "passthrough_kinds.cu:%d: %s: CUresult %d\n", line, what, static_cast<int>(r));
  std::exit(1);
}

// The driver entry points NCCL fetches for its VMM buffers, through the runtime.
struct gc_vmm_api {
  decltype(&cuMemGetAllocationGranularity) granularity;
  decltype(&cuMemCreate) create;
  decltype(&cuMemAddressReserve) reserve;
  decltype(&cuMemMap) map;
  decltype(&cuMemSetAccess) set_access;
  decltype(&cuMemUnmap) unmap;
  decltype(&cuMemRelease) release;
  decltype(&cuMemAddressFree) address_free;
};

template <typename F> static void gc_entry(const char *name, F *out) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  GC_CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || !p) gc_fail("a VMM driver entry point was not found");
  std::memcpy(out, &p, sizeof p);
}

static void gc_print_range(const char *kind, const void *p, size_t bytes) {
  std::printf("RANGE %s %llu %zu\n", kind, static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)), bytes);
}

int main(int argc, char **argv) {
  if (argc != 2) gc_fail("usage: passthrough_kinds SNAPSHOT_PATH");
  int device = 0;
  GC_CHECK(cudaSetDevice(device));
  GC_CHECK(cudaFree(nullptr)); // the primary context, which the VMM calls below use

  gc_vmm_api vmm{};
  gc_entry("cuMemGetAllocationGranularity", &vmm.granularity);
  gc_entry("cuMemCreate", &vmm.create);
  gc_entry("cuMemAddressReserve", &vmm.reserve);
  gc_entry("cuMemMap", &vmm.map);
  gc_entry("cuMemSetAccess", &vmm.set_access);
  gc_entry("cuMemUnmap", &vmm.unmap);
  gc_entry("cuMemRelease", &vmm.release);
  gc_entry("cuMemAddressFree", &vmm.address_free);

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  GC_CU(vmm.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  const size_t vmm_bytes = 4 * gran; // 8 MiB with 2 MiB pages
  CUmemGenericAllocationHandle handle;
  GC_CU(vmm.create(&handle, vmm_bytes, &prop, 0));
  CUdeviceptr vmm_ptr = 0;
  GC_CU(vmm.reserve(&vmm_ptr, vmm_bytes, gran, 0, 0));
  GC_CU(vmm.map(vmm_ptr, vmm_bytes, 0, handle, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  GC_CU(vmm.set_access(vmm_ptr, vmm_bytes, &access, 1));
  void *vmm_p = reinterpret_cast<void *>(static_cast<uintptr_t>(vmm_ptr));

  cudaStream_t s;
  GC_CHECK(cudaStreamCreate(&s));
  const size_t async_bytes = 6u << 20, managed_bytes = 4u << 20, host_bytes = 1u << 20;
  void *async_p = nullptr, *managed_p = nullptr, *pitch_p = nullptr, *host_p = nullptr;
  GC_CHECK(cudaMallocAsync(&async_p, async_bytes, s));
  GC_CHECK(cudaMallocManaged(&managed_p, managed_bytes));
  size_t pitch = 0;
  const size_t width = 1000, height = 300;
  GC_CHECK(cudaMallocPitch(&pitch_p, &pitch, width, height));
  const size_t pitch_bytes = pitch * height;
  GC_CHECK(cudaMallocHost(&host_p, host_bytes));

  // a captured stream-ordered allocation is a graph memory node: memory from the launch on
  const size_t graph_bytes = 3u << 20;
  void *graph_p = nullptr;
  cudaStream_t cs;
  cudaGraph_t graph;
  cudaGraphExec_t graph_exec;
  GC_CHECK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  GC_CHECK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeRelaxed));
  GC_CHECK(cudaMallocAsync(&graph_p, graph_bytes, cs));
  GC_CHECK(cudaStreamEndCapture(cs, &graph));
  GC_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
  GC_CHECK(cudaGraphLaunch(graph_exec, cs));
  GC_CHECK(cudaStreamSynchronize(cs));

  gc_fill(vmm_p, vmm_bytes / 4, 1, s);
  gc_fill(graph_p, graph_bytes / 4, 6, s);
  gc_fill(async_p, async_bytes / 4, 2, s);
  gc_fill(managed_p, managed_bytes / 4, 3, s);
  gc_fill(pitch_p, pitch_bytes / 4, 4, s);
  GC_CHECK(cudaStreamSynchronize(s));
  std::memset(host_p, 5, host_bytes);

  gc_print_range("vmm", vmm_p, vmm_bytes);
  gc_print_range("async", async_p, async_bytes);
  gc_print_range("managed", managed_p, managed_bytes);
  gc_print_range("pitch", pitch_p, pitch_bytes);
  gc_print_range("host", host_p, host_bytes);
  gc_print_range("graph", graph_p, graph_bytes);
  uint64_t sum = gc_checksum(vmm_p, vmm_bytes);
  sum = gc_checksum(async_p, async_bytes, sum);
  sum = gc_checksum(managed_p, managed_bytes, sum);
  sum = gc_checksum(pitch_p, pitch_bytes, sum);
  sum = gc_checksum(graph_p, graph_bytes, sum);

  auto dump = gc_sym<int (*)(const char *)>("cudasnap_dump");
  std::printf("DUMP %d\n", dump ? dump(argv[1]) : -1);
  std::fflush(stdout);

  GC_CHECK(cudaFreeHost(host_p));
  GC_CHECK(cudaFree(pitch_p));
  GC_CHECK(cudaFree(managed_p));
  GC_CHECK(cudaFreeAsync(async_p, s));
  GC_CHECK(cudaFreeAsync(graph_p, s));
  GC_CHECK(cudaGraphExecDestroy(graph_exec));
  GC_CHECK(cudaGraphDestroy(graph));
  GC_CHECK(cudaStreamDestroy(cs));
  GC_CHECK(cudaStreamSynchronize(s));
  GC_CHECK(cudaStreamDestroy(s));
  GC_CU(vmm.unmap(vmm_ptr, vmm_bytes));
  GC_CU(vmm.release(handle));
  GC_CU(vmm.address_free(vmm_ptr, vmm_bytes));
  std::printf("CHECKSUM %016llx\n", static_cast<unsigned long long>(sum));
  return 0;
}

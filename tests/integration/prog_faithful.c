/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 39: what a program relies on from the driver stays true through the cache. One scenario
 * per run, named on the command line. The "compare" scenarios print checksum=<hex> of every
 * answer the program got, and run twice by compare_runs.sh, without and with cudasnap: equal
 * answers or the test fails. The others check cudasnap's own promise, with it preloaded.
 *
 * compare (FAKE_CUDA_CAPACITY=64 MiB where memory runs short):
 *   passthrough_oom  48 MiB cached after a cuMemAlloc/cuMemFree, then 48 MiB of pitch, managed,
 *                    stream-ordered, pool and VMM memory, and an array: each succeeds (item 1)
 *   host_oom         pinned host memory the driver cannot pin (cuMemCreate located on the host,
 *                    cuMemHostAlloc) fails, and the cache answers as before: a block freed after
 *                    that leaves its neighbour in the segment usable (issue 44, item 1)
 *   graph_oom        48 MiB cached, then a graph with a 48 MiB memory node is uploaded,
 *                    launched, and instantiated with an upload: each succeeds (issue 44, item 6)
 *   meminfo          16 MiB live in alternate 1 MiB blocks: cuMemGetInfo's free bytes, less
 *                    4 MiB, can really be allocated (item 2)
 *   free_async       cuMemFreeAsync of a cached block frees that block only (item 5)
 *   capture          cuMemAlloc (hit and miss) and cuMemFree under a global capture get the
 *                    driver's refusal; relaxed mode allows them (item 5)
 *   sync_free_async  in sync mode, cuMemFree of stream-ordered memory does not synchronize (item 5)
 *   ranges           pointer queries answer for a range that holds the block, and the offset a
 *                    registration cache computes from them reaches the block (item 6)
 * preloaded:
 *   ipc              cuIpcGetMemHandle of a block inside a shared segment is refused; at a
 *                    segment's start it is the driver's; with ipc_small:True every small block
 *                    exports (item 3)
 *   fence_destroyed  (fence or sync mode) a block used on a stream destroyed before the free is
 *                    not reused while that stream's work is pending (item 4)
 *   fence_green      (fence mode) the same for a green context's stream (item 4)
 *   sync_capture     (sync mode) a block freed during a capture, used on a stream destroyed
 *                    before, is not reused while that work is pending (item 4) */
#include <cuda.h>

#include "tests/integration/it_driver.h"

static uint64_t it_sum = 0x39;

/* Fold one answer into the checksum, and say it on stderr for a failing run's diagnosis. */
static void it_answer(const char *what, long long value) {
  it_sum = it_mix(it_sum ^ (uint64_t)value);
  fprintf(stderr, "%s: %lld\n", what, value);
}

/* Write a pattern and read it back: the memory is usable. Returns the status (0 when it is). */
static int it_usable(CUdeviceptr p, size_t n, unsigned char seed) {
  static unsigned char in[4096], out[4096];
  size_t k = n < sizeof in ? n : sizeof in;
  for (size_t i = 0; i < k; i++) in[i] = (unsigned char)(seed + i * 7);
  CUresult r = cuMemcpyHtoD(p, in, k);
  if (r == CUDA_SUCCESS) r = cuMemcpyDtoH(out, p, k);
  if (r == CUDA_SUCCESS && memcmp(in, out, k) != 0) return -1;
  return (int)r;
}

/* Fill the cache (or, without cudasnap, just come and go). */
static void it_cache_48(void) { it_free_ok(it_alloc_ok(48 * IT_MIB)); }

static void passthrough_oom(void) {
  const size_t n = 48 * IT_MIB;
  CUdeviceptr p = 0;
  size_t pitch = 0;
  it_cache_48();
  it_answer("pitch", cuMemAllocPitch(&p, &pitch, IT_MIB, 48, 4));
  if (p) it_free_ok(p);
  p = 0;
  it_cache_48();
  it_answer("managed", cuMemAllocManaged(&p, n, CU_MEM_ATTACH_GLOBAL));
  if (p) it_free_ok(p);
  p = 0;
  it_cache_48();
  CUresult r = cuMemAllocAsync(&p, n, 0);
  it_answer("stream-ordered", r);
  if (r == CUDA_SUCCESS) {
    IT_CHECK(cuMemFreeAsync(p, 0) == CUDA_SUCCESS && cuStreamSynchronize(0) == CUDA_SUCCESS, "cuMemFreeAsync");
    p = 0;
  }
  it_cache_48();
  CUmemoryPool pool = NULL;
  IT_CHECK(cuDeviceGetDefaultMemPool(&pool, 0) == CUDA_SUCCESS, "no default pool");
  r = cuMemAllocFromPoolAsync(&p, n, pool, 0);
  it_answer("pool", r);
  if (r == CUDA_SUCCESS) {
    IT_CHECK(cuMemFreeAsync(p, 0) == CUDA_SUCCESS && cuStreamSynchronize(0) == CUDA_SUCCESS, "cuMemFreeAsync");
    p = 0;
  }
  it_cache_48();
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  r = cuMemCreate(&handle, n, &prop, 0);
  it_answer("vmm", r);
  if (r == CUDA_SUCCESS) IT_CHECK(cuMemRelease(handle) == CUDA_SUCCESS, "cuMemRelease");
  it_cache_48();
  CUDA_ARRAY_DESCRIPTOR desc = {.Width = 4096, .Height = 3072, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
  CUarray array = NULL;
  r = cuArrayCreate(&array, &desc);
  it_answer("array", r);
  if (r == CUDA_SUCCESS) IT_CHECK(cuArrayDestroy(array) == CUDA_SUCCESS, "cuArrayDestroy");
  (void)pitch;
}

/* Run with FAKE_CUDA_HOST_CAPACITY=1048576: pinned host memory past 1 MiB cannot be had. */
static void host_oom(void) {
  CUdeviceptr a = it_alloc_ok(IT_MIB), b = it_alloc_ok(IT_MIB); /* under cudasnap, one segment */
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  CUmemGenericAllocationHandle handle = 0;
  const CUmemLocationType where[] = {CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA};
  for (size_t i = 0; i < sizeof where / sizeof *where; i++) {
    prop.location.type = where[i];
    it_answer("cuMemCreate on the host", cuMemCreate(&handle, 2 * IT_MIB, &prop, 0));
  }
  void *host = NULL;
  it_answer("cuMemHostAlloc", cuMemHostAlloc(&host, 2 * IT_MIB, 0));
  /* the thread's next calls go through the cache as before */
  it_answer("cuMemFree(a)", cuMemFree(a));
  it_answer("b usable", it_usable(b, 4096, 4));
  it_answer("cuMemFree(a) again", cuMemFree(a));
  it_answer("cuMemFree(b)", cuMemFree(b));
}

/* A graph of one 48 MiB allocation, freed by the graph itself. */
static CUgraph it_graph_48(void) {
  CUgraph graph = NULL;
  IT_CHECK(cuGraphCreate(&graph, 0) == CUDA_SUCCESS, "cuGraphCreate");
  CUDA_MEM_ALLOC_NODE_PARAMS params = it_alloc_node_params(48 * IT_MIB);
  CUgraphNode alloc = NULL, freed = NULL;
  IT_CHECK(cuGraphAddMemAllocNode(&alloc, graph, NULL, 0, &params) == CUDA_SUCCESS, "cuGraphAddMemAllocNode");
  IT_CHECK(cuGraphAddMemFreeNode(&freed, graph, &alloc, 1, params.dptr) == CUDA_SUCCESS, "cuGraphAddMemFreeNode");
  return graph;
}

/* Run with FAKE_CUDA_CAPACITY=67108864: each call needs the 48 MiB the cache holds. */
static void graph_oom(void) {
  CUgraph graph = it_graph_48();
  CUgraphExec exec = NULL;
  IT_CHECK(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS, "cuGraphInstantiateWithFlags");
  it_cache_48();
  it_answer("cuGraphUpload", cuGraphUpload(exec, 0));
  IT_CHECK(cuDeviceGraphMemTrim(0) == CUDA_SUCCESS, "cuDeviceGraphMemTrim");
  it_cache_48();
  it_answer("cuGraphLaunch", cuGraphLaunch(exec, 0));
  it_answer("cuStreamSynchronize", cuStreamSynchronize(0));
  IT_CHECK(cuDeviceGraphMemTrim(0) == CUDA_SUCCESS, "cuDeviceGraphMemTrim");
  IT_CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS, "cuGraphExecDestroy");
  it_cache_48();
  CUDA_GRAPH_INSTANTIATE_PARAMS params = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, .hUploadStream = 0};
  CUresult r = cuGraphInstantiateWithParams(&exec, graph, &params);
  it_answer("cuGraphInstantiateWithParams, uploading", r);
  it_answer("its result", params.result_out);
  if (r == CUDA_SUCCESS) IT_CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS, "cuGraphExecDestroy");
  IT_CHECK(cuDeviceGraphMemTrim(0) == CUDA_SUCCESS && cuGraphDestroy(graph) == CUDA_SUCCESS, "graph teardown");
}

static void meminfo(void) {
  enum { N = 32 };
  CUdeviceptr blocks[N];
  for (int i = 0; i < N; i++) blocks[i] = it_alloc_ok(IT_MIB);
  for (int i = 0; i < N; i += 2) it_free_ok(blocks[i]);
  size_t free_bytes = 0, total = 0;
  IT_CHECK(cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS, "cuMemGetInfo");
  fprintf(stderr, "cuMemGetInfo: %zu of %zu bytes free\n", free_bytes, total);
  IT_CHECK(free_bytes > 8 * IT_MIB, "only %zu bytes free", free_bytes);
  /* sizing work from the free figure, as vLLM and RMM pools do */
  CUdeviceptr big = 0;
  CUresult r = cuMemAlloc(&big, free_bytes - 4 * IT_MIB);
  it_answer("allocation of free - 4 MiB", r);
  if (r == CUDA_SUCCESS) {
    it_answer("usable", it_usable(big, 4096, 1));
    it_free_ok(big);
  }
  for (int i = 1; i < N; i += 2) it_free_ok(blocks[i]);
}

static void free_async(void) {
  CUdeviceptr a = it_alloc_ok(4096), b = it_alloc_ok(4096);
  it_answer("b usable", it_usable(b, 4096, 2));
  it_answer("cuMemFreeAsync(a)", cuMemFreeAsync(a, 0));
  it_answer("stream synchronized", cuStreamSynchronize(0));
  it_answer("b still usable", it_usable(b, 4096, 3));
  it_answer("cuMemFreeAsync(a) again", cuMemFreeAsync(a, 0));
  it_answer("cuMemFree(b)", cuMemFree(b));
}

static void capture(void) {
  CUstream s = NULL;
  IT_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "cuStreamCreate");
  it_free_ok(it_alloc_ok(4096)); /* cached: the next 4 KiB request is a hit */
  CUdeviceptr live = it_alloc_ok(8192);
  CUdeviceptr p = 0;
  CUgraph graph = NULL;
  IT_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, "begin capture");
  it_answer("hit under a global capture", cuMemAlloc(&p, 4096));
  it_answer("miss under a global capture", cuMemAlloc(&p, 8 * IT_MIB));
  it_answer("free under a global capture", cuMemFree(live));
  it_answer("end of the capture", cuStreamEndCapture(s, &graph));
  if (graph) IT_CHECK(cuGraphDestroy(graph) == CUDA_SUCCESS, "cuGraphDestroy");
  graph = NULL;
  /* a capture that only frees is invalidated by the refusal too */
  IT_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, "begin capture");
  it_answer("free alone under a global capture", cuMemFree(live));
  it_answer("end of that capture", cuStreamEndCapture(s, &graph));
  if (graph) IT_CHECK(cuGraphDestroy(graph) == CUDA_SUCCESS, "cuGraphDestroy");
  graph = NULL;
  /* relaxed: allowed, and the capture stays valid */
  IT_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, "begin capture");
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  IT_CHECK(cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS, "exchange");
  p = 0;
  it_answer("hit in relaxed mode", cuMemAlloc(&p, 4096));
  it_answer("free in relaxed mode", p ? (long long)cuMemFree(p) : -1);
  it_answer("free of the live block in relaxed mode", cuMemFree(live));
  IT_CHECK(cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS, "exchange back");
  it_answer("end of the relaxed capture", cuStreamEndCapture(s, &graph));
  if (graph) IT_CHECK(cuGraphDestroy(graph) == CUDA_SUCCESS, "cuGraphDestroy");
  IT_CHECK(cuStreamDestroy(s) == CUDA_SUCCESS, "cuStreamDestroy");
}

static void sync_free_async(void) {
  fake_cuda_control_t fake = it_fake();
  it_free_ok(it_alloc_ok(4096)); /* cudasnap serves this context */
  CUstream s = NULL;
  IT_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "cuStreamCreate");
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAllocAsync(&p, IT_MIB, s) == CUDA_SUCCESS, "cuMemAllocAsync");
  IT_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS, "cuStreamSynchronize");
  uint64_t before = it_counters(&fake).ctx_synchronize;
  it_answer("cuMemFree of stream-ordered memory", cuMemFree(p));
  it_answer("device synchronizations it made", (long long)(it_counters(&fake).ctx_synchronize - before));
  IT_CHECK(cuStreamDestroy(s) == CUDA_SUCCESS, "cuStreamDestroy");
}

/* What NCCL, UCX and MPI registration caches do with a pointer: ask for its range, register the
 * range once, and reach the pointer as range start + offset. */
static void ranges(void) {
  CUdeviceptr a = it_alloc_ok(4096), b = it_alloc_ok(4096);
  CUdeviceptr blocks[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    CUdeviceptr p = blocks[i], base = 0, start = 0;
    size_t size = 0, range_size = 0;
    unsigned long long id = 0;
    IT_CHECK(cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS, "cuMemGetAddressRange");
    IT_CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == CUDA_SUCCESS &&
                 cuPointerGetAttribute(&range_size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) == CUDA_SUCCESS &&
                 cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_SUCCESS,
             "cuPointerGetAttribute");
    IT_CHECK(start == base && range_size == size, "the range attributes disagree with cuMemGetAddressRange");
    IT_CHECK(base <= p && p + 4096 <= base + size, "the range [0x%llx, +%zu) does not hold the block 0x%llx",
             (unsigned long long)base, size, (unsigned long long)p);
    size_t offset = (size_t)(p - base);
    it_answer("write through the registered range", it_usable(base + offset, 4096, (unsigned char)(10 + i)));
    /* the data is the block's */
    unsigned char back[16];
    IT_CHECK(cuMemcpyDtoH(back, p, sizeof back) == CUDA_SUCCESS, "cuMemcpyDtoH");
    it_answer("read through the block", back[1] == (unsigned char)(10 + i + 7));
    /* an IPC export of the range start with the offset sent aside, as UCX does */
    CUipcMemHandle h;
    it_answer("cuIpcGetMemHandle(range start)", cuIpcGetMemHandle(&h, base));
  }
  it_free_ok(a);
  it_free_ok(b);
}

/* ---- preloaded ---- */

static void ipc(void) {
  const char *conf = getenv("CUDASNAP_ALLOC_CONF");
  int own_segments = conf && strstr(conf, "ipc_small:True") != NULL;
  CUdeviceptr a = it_alloc_ok(4096), b = it_alloc_ok(IT_MIB), big = it_alloc_ok(3 * IT_MIB);
  struct {
    CUdeviceptr p, expect_base;
    int shared; /* inside a shared segment at an offset */
  } cases[] = {{a, a, 0}, {b, b, !own_segments}, {big, big, 0}, {big + 4096, big, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    CUresult r = cuIpcGetMemHandle(&h, cases[i].p);
    if (cases[i].shared) {
      IT_CHECK(r == CUDA_ERROR_INVALID_VALUE, "case %zu: cuIpcGetMemHandle of a block inside a shared segment "
               "returned %d, expected the refusal %d", i, (int)r, (int)CUDA_ERROR_INVALID_VALUE);
      continue;
    }
    IT_CHECK(r == CUDA_SUCCESS, "case %zu: cuIpcGetMemHandle returned %d", i, (int)r);
    fake_cuda_ipc_payload_t payload;
    memcpy(&payload, h.reserved, sizeof payload);
    IT_CHECK(strcmp(payload.magic, FAKE_CUDA_IPC_MAGIC) == 0, "not the fake's handle");
    IT_CHECK(payload.base == cases[i].expect_base, "case %zu: the importer would map 0x%llx, the block is 0x%llx",
             i, (unsigned long long)payload.base, (unsigned long long)cases[i].expect_base);
  }
  if (own_segments) IT_CHECK(a != b && (b - a >= 4096 || a - b >= IT_MIB), "blocks overlap");
  it_free_ok(a);
  it_free_ok(b);
  it_free_ok(big);
  printf("ipc ok (%s)\n", own_segments ? "ipc_small" : "default");
}

/* Reused block -> the work recorded on the stream that used it has completed. */
static void it_check_reuse(CUdeviceptr freed, CUdeviceptr got, CUevent work, const char *what) {
  CUresult q = cuEventQuery(work);
  IT_CHECK(got != freed || q == CUDA_SUCCESS,
           "%s: block 0x%llx was handed out again while the work on its stream was pending", what,
           (unsigned long long)freed);
}

/* A stream's work stands for a kernel using the block: an event of the program's own, pending
 * until a synchronization that covers the stream. */
static void fence_on_stream(int green, int capture) {
  fake_cuda_control_t fake = it_fake();
  fake.set_manual_events(1);
  CUstream s = NULL, other = NULL;
  CUgreenCtx g = NULL;
  if (green) {
    IT_CHECK(cuGreenCtxCreate(&g, (CUdevResourceDesc)NULL, 0, CU_GREEN_CTX_DEFAULT_STREAM) == CUDA_SUCCESS,
             "cuGreenCtxCreate");
    IT_CHECK(cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0) == CUDA_SUCCESS, "cuGreenCtxStreamCreate");
  } else {
    IT_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "cuStreamCreate");
  }
  /* blocking: a fence on the legacy stream covers it, so only the destroyed stream can hold a back;
   * made before that one is destroyed, so that it cannot take its handle */
  if (capture) IT_CHECK(cuStreamCreate(&other, CU_STREAM_DEFAULT) == CUDA_SUCCESS, "cuStreamCreate");
  CUevent work = NULL;
  IT_CHECK(cuEventCreate(&work, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS, "cuEventCreate");
  CUdeviceptr a = it_alloc_ok(IT_MIB);
  IT_CHECK(cuEventRecord(work, s) == CUDA_SUCCESS, "cuEventRecord"); /* "a kernel reading a on s" */
  if (!green) IT_CHECK(cuStreamDestroy(s) == CUDA_SUCCESS, "cuStreamDestroy"); /* returns at once */
  if (capture) {
    IT_CHECK(cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS, "begin capture");
  }
  it_free_ok(a);
  if (capture) {
    CUgraph graph = NULL;
    IT_CHECK(cuStreamEndCapture(other, &graph) == CUDA_SUCCESS, "end capture");
    if (graph) IT_CHECK(cuGraphDestroy(graph) == CUDA_SUCCESS, "cuGraphDestroy");
  }
  /* an allocation fences what the capture parked */
  CUdeviceptr x = it_alloc_ok(IT_MIB);
  it_check_reuse(a, x, work, "right after the free");
  /* the legacy stream's work is done: a fence of it alone would now let a go */
  IT_CHECK(cuStreamSynchronize(CU_STREAM_LEGACY) == CUDA_SUCCESS, "cuStreamSynchronize");
  CUdeviceptr b = it_alloc_ok(IT_MIB);
  it_check_reuse(a, b, work, "after the legacy stream's work");
  fake.complete_events();
  CUdeviceptr c = it_alloc_ok(IT_MIB);
  it_check_reuse(a, c, work, "after every event completed");
  it_free_ok(x);
  it_free_ok(b);
  it_free_ok(c);
  fake.complete_events();
  IT_CHECK(cuEventDestroy(work) == CUDA_SUCCESS, "cuEventDestroy");
  if (green) IT_CHECK(cuStreamDestroy(s) == CUDA_SUCCESS && cuGreenCtxDestroy(g) == CUDA_SUCCESS, "green teardown");
  if (other) IT_CHECK(cuStreamDestroy(other) == CUDA_SUCCESS, "cuStreamDestroy");
  printf("%s ok\n", green ? "green-context stream" : capture ? "free during a capture" : "destroyed stream");
}

int main(int argc, char **argv) {
  IT_CHECK(argc == 2, "usage: it_faithful SCENARIO");
  const char *s = argv[1];
  (void)it_preloaded(); /* fails a run that lacks the preload compare_runs.sh asked for */
  (void)it_driver_context();
  int compare = 1;
  if (strcmp(s, "passthrough_oom") == 0) passthrough_oom();
  else if (strcmp(s, "host_oom") == 0) host_oom();
  else if (strcmp(s, "graph_oom") == 0) graph_oom();
  else if (strcmp(s, "meminfo") == 0) meminfo();
  else if (strcmp(s, "free_async") == 0) free_async();
  else if (strcmp(s, "capture") == 0) capture();
  else if (strcmp(s, "sync_free_async") == 0) sync_free_async();
  else if (strcmp(s, "ranges") == 0) ranges();
  else {
    compare = 0;
    IT_CHECK(it_preloaded(), "scenario %s needs cudasnap preloaded", s);
    if (strcmp(s, "ipc") == 0) ipc();
    else if (strcmp(s, "fence_destroyed") == 0) fence_on_stream(0, 0);
    else if (strcmp(s, "fence_green") == 0) fence_on_stream(1, 0);
    else if (strcmp(s, "sync_capture") == 0) fence_on_stream(0, 1);
    else IT_FAIL("unknown scenario %s", s);
  }
  if (compare) printf("checksum=%016" PRIx64 "\n", it_sum);
  return 0;
}

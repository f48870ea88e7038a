/* SPDX-License-Identifier: Apache-2.0 */
/* The cost of an NVTX call as the program sees it (issue 19): nvtxRangePushA + nvtxRangePop,
 * nvtxMarkA, and a domain push/pop with a registered string, run with NVTX not injected (no tool:
 * NVTX's own no-op path) and with libcudasnap.so preloaded (cudasnap is the injection and records
 * a phase per call).
 *
 *   bench_nvtx push|mark|domain|region OPS SAMPLES THREADS
 *
 * region: nvtxMemRegionsRegister + nvtxMemRegionsUnregister of one 1 MiB region inside a heap
 * registered over a 64 MiB cuMemAlloc (the fake driver of tests/fakes: LD_LIBRARY_PATH), each
 * thread its own region; with cudasnap, the pool registry and the registering call's stack
 * (CUDASNAP_STACKS decides its depth) are what it costs. BENCH_LIVE_REGIONS=N keeps N other 1 KiB
 * regions registered above them (a pool with N sub-allocations live).
 *
 * Prints the median over SAMPLES of ns per operation (a push+pop pair counts as one operation, so
 * it holds two recorded annotations), each thread running OPS operations per sample at once; with
 * threads, ns = wall time of a sample / OPS (what each thread saw). No CUDA call is made: what is
 * measured is the NVTX path alone. BENCH_EXPECT_INJECTED=0/1 makes a run that lacks (or has) the
 * injection fail, so no figure is taken from the wrong configuration. */
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_common.h"

typedef enum op_e { OP_PUSH, OP_MARK, OP_DOMAIN, OP_REGION } op_t;

static op_t op;
static long ops;
static nvtxDomainHandle_t domain;
static nvtxStringHandle_t registered;
static nvtxMemHeapHandle_t registered_heap;
static pthread_barrier_t start, done;
static CUdeviceptr pool_base;
static CUcontext pool_ctx;

enum { REGION_BYTES = 1 << 20, POOL_BYTES = 64 << 20, LIVE_REGION_BYTES = 1 << 10 };

/* A heap over a 64 MiB allocation, as a pool registers its memory. */
static int pool_setup(void) {
  CUdevice dev;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&pool_ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(pool_ctx) != CUDA_SUCCESS ||
      cuMemAlloc(&pool_base, POOL_BYTES) != CUDA_SUCCESS)
    return -1;
  nvtxMemVirtualRangeDesc_t range = {.size = POOL_BYTES, .ptr = (const void *)(uintptr_t)pool_base};
  nvtxMemHeapDesc_t desc;
  memset(&desc, 0, sizeof desc);
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof desc;
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof range;
  desc.typeSpecificDesc = &range;
  registered_heap = nvtxMemHeapRegister(domain, &desc);
  return 0;
}

/* One region of the heap at pool_base + offset, as a pool declares a sub-allocation. */
static const void *region_register(CUdeviceptr offset, size_t size) {
  nvtxMemVirtualRangeDesc_t r = {.size = size, .ptr = (const void *)(uintptr_t)(pool_base + offset)};
  nvtxMemRegionsRegisterBatch_t reg;
  memset(&reg, 0, sizeof reg);
  reg.extCompatID = NVTX_EXT_COMPATID_MEM;
  reg.structSize = sizeof reg;
  reg.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  reg.heap = registered_heap;
  reg.regionCount = 1;
  reg.regionDescElementSize = sizeof r;
  reg.regionDescElements = &r;
  nvtxMemRegionsRegister(domain, &reg);
  return r.ptr;
}

/* BENCH_LIVE_REGIONS=N: N regions of LIVE_REGION_BYTES stay registered in the heap's upper half
 * while the timed pairs run below them, as in a pool with many sub-allocations live. */
static int live_regions_setup(long count) {
  if (count < 0 || count > (POOL_BYTES / 2) / LIVE_REGION_BYTES) return -1;
  for (long i = 0; i < count; i++) region_register(POOL_BYTES / 2 + (CUdeviceptr)i * LIVE_REGION_BYTES, LIVE_REGION_BYTES);
  return 0;
}

static void region_pair(int slot) {
  const void *region = region_register((CUdeviceptr)slot * REGION_BYTES, REGION_BYTES);
  nvtxMemRegionRef_t ref;
  memset(&ref, 0, sizeof ref);
  ref.pointer = region;
  nvtxMemRegionsUnregisterBatch_t unreg;
  memset(&unreg, 0, sizeof unreg);
  unreg.extCompatID = NVTX_EXT_COMPATID_MEM;
  unreg.structSize = sizeof unreg;
  unreg.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
  unreg.refCount = 1;
  unreg.refElementSize = sizeof ref;
  unreg.refElements = &ref;
  nvtxMemRegionsUnregister(domain, &unreg);
}

static _Thread_local int thread_slot;

static void run_ops(void) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = registered;
  for (long i = 0; i < ops; i++) {
    switch (op) {
    case OP_PUSH:
      nvtxRangePushA("bench_step");
      nvtxRangePop();
      break;
    case OP_MARK: nvtxMarkA("bench_mark"); break;
    case OP_DOMAIN:
      nvtxDomainRangePushEx(domain, &a);
      nvtxDomainRangePop(domain);
      break;
    case OP_REGION: region_pair(thread_slot); break;
    }
  }
}

typedef struct worker_arg_s {
  int samples;
  int slot;
} worker_arg_t;

static void *worker(void *arg) {
  const worker_arg_t *w = arg;
  int samples = w->samples;
  thread_slot = w->slot;
  if (op == OP_REGION && cuCtxSetCurrent(pool_ctx) != CUDA_SUCCESS) return NULL;
  for (int s = 0; s < samples; s++) {
    pthread_barrier_wait(&start);
    run_ops();
    pthread_barrier_wait(&done);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s push|mark|domain|region OPS SAMPLES THREADS\n", argv[0]);
    return 2;
  }
  op = strcmp(argv[1], "mark") == 0     ? OP_MARK
       : strcmp(argv[1], "domain") == 0 ? OP_DOMAIN
       : strcmp(argv[1], "region") == 0 ? OP_REGION
                                        : OP_PUSH;
  ops = atol(argv[2]);
  int samples = atoi(argv[3]), threads = atoi(argv[4]);
  if (ops <= 0 || samples <= 0 || samples > BENCH_MAX_SAMPLES || threads <= 0 || threads > BENCH_MAX_THREADS) {
    fprintf(stderr, "bench_nvtx: bad arguments\n");
    return 2;
  }
  domain = nvtxDomainCreateA("bench");
  registered = nvtxDomainRegisterStringA(domain, "bench_backward");
  if (op == OP_REGION && pool_setup() != 0) {
    fprintf(stderr, "bench_nvtx: no device memory for the pool (run with the fake driver on LD_LIBRARY_PATH)\n");
    return 1;
  }
  const char *live = getenv("BENCH_LIVE_REGIONS");
  /* the timed regions (one per thread, REGION_BYTES apart) stay below the live ones */
  if (op == OP_REGION && live && *live && threads > (POOL_BYTES / 2) / REGION_BYTES) {
    fprintf(stderr, "bench_nvtx: BENCH_LIVE_REGIONS takes at most %d threads\n", (POOL_BYTES / 2) / REGION_BYTES);
    return 2;
  }
  if (op == OP_REGION && live && *live && live_regions_setup(atol(live)) != 0) {
    fprintf(stderr, "bench_nvtx: BENCH_LIVE_REGIONS takes 0 to %d\n", (POOL_BYTES / 2) / LIVE_REGION_BYTES);
    return 2;
  }
  /* Injected, a push returns the level (0); without a tool NVTX returns a negative code. */
  int level = nvtxRangePushA("bench_probe");
  nvtxRangePop();
  const char *expect = getenv("BENCH_EXPECT_INJECTED");
  if (expect && *expect && (expect[0] == '1') != (level >= 0)) {
    fprintf(stderr, "bench_nvtx: NVTX is %s injected, expected %s\n", level >= 0 ? "" : "not",
            expect[0] == '1' ? "injected" : "not injected");
    return 1;
  }
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
  pthread_t t[BENCH_MAX_THREADS];
  worker_arg_t args[BENCH_MAX_THREADS];
  for (int i = 0; i < threads; i++) {
    args[i] = (worker_arg_t){.samples = samples, .slot = i};
    pthread_create(&t[i], NULL, worker, &args[i]);
  }
  double ns[BENCH_MAX_SAMPLES];
  for (int s = 0; s < samples; s++) {
    double t0 = bench_now_ns();
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&done);
    ns[s] = (bench_now_ns() - t0) / (double)ops;
  }
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  printf("%.2f\n", bench_median(ns, (size_t)samples));
  return 0;
}

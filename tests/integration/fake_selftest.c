/* SPDX-License-Identifier: Apache-2.0 */
/* Self-test of the fake CUDA runtime and driver (tests/fakes), run with no preload: a CUDA
 * program linked against the fake libcudart.so.13, which loads the fake libcuda.so.1 the way the
 * real runtime loads the driver. Every cudasnap integration test stands on these semantics, so
 * they are pinned here.
 *   fake_selftest <cudart13-getprocaddress-requests.txt> [<file FAKE_CUDA_LOG names>]
 * One line per check; the exit status is the number of failed checks. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fakes/fake_cuda_control.h"

#define MIB ((size_t)1 << 20)

/* ---- one line per check: the first failed expectation of a check is reported ---- */

static int failures;
static const char *t_failed; /* the first failed expectation of the current check */
static int t_line;

#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond) && !t_failed) {                                                                    \
      t_failed = #cond;                                                                            \
      t_line = __LINE__;                                                                           \
    }                                                                                              \
  } while (0)

static void report(const char *name) {
  if (t_failed) {
    printf("FAIL %s: %s (line %d)\n", name, t_failed, t_line);
    failures++;
  } else {
    printf("ok   %s\n", name);
  }
  t_failed = NULL;
}

/* ---- the driver, reached the way a test or a library would: by its SONAME ---- */

static void *drv_handle;
static fake_cuda_control_t fc;

static void *drv_sym(const char *name) { return drv_handle ? dlsym(drv_handle, name) : NULL; }

/* ISO C has no cast from object to function pointer. */
#define DRV_FN(var, name)                                                                          \
  do {                                                                                             \
    void *sym_ = drv_sym(name);                                                                    \
    memcpy(&(var), &sym_, sizeof(var));                                                            \
  } while (0)

static PFN_cuGetProcAddress_v12000 cu_get_proc_address;
static PFN_cuCtxSynchronize_v2000 cu_ctx_synchronize;
static PFN_cuCtxSynchronize_v13000 cu_ctx_synchronize_v2;
static PFN_cuCtxGetCurrent_v4000 cu_ctx_get_current;
static PFN_cuEventQuery_v2000 cu_event_query;
static PFN_cuPointerGetAttribute_v4000 cu_pointer_get_attribute;
static PFN_cuMemGetAddressRange_v3020 cu_mem_get_address_range;
static PFN_cuMemAlloc_v3020 cu_mem_alloc;
/* the 32-bit ABI, declared by cuda.h only for the driver's own build */
static CUresult (*cu_mem_alloc_v1)(unsigned int *dptr, unsigned int bytesize);
static CUresult (*cu_mem_free_v1)(unsigned int dptr);
static PFN_cuIpcGetMemHandle_v4010 cu_ipc_get_mem_handle;
static PFN_cuIpcOpenMemHandle_v11000 cu_ipc_open_mem_handle;
static PFN_cuIpcCloseMemHandle_v4010 cu_ipc_close_mem_handle;
static PFN_cuGraphDestroy_v10000 cu_graph_destroy;

static fake_cuda_counters_t counters(void) {
  fake_cuda_counters_t c;
  fc.get_counters(&c);
  return c;
}

static CUdeviceptr dp(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/* ---- checks ---- */

static bool check_init(void) {
  int n = -1, rt = 0, dv = 0;
  EXPECT(cudaGetDeviceCount(&n) == cudaSuccess && n == 2);
  drv_handle = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_NOW);
  EXPECT(drv_handle != NULL);
  EXPECT(fake_cuda_control_load(&fc) == 0);
  EXPECT(cudaRuntimeGetVersion(&rt) == cudaSuccess && rt == 13000);
  EXPECT(cudaDriverGetVersion(&dv) == cudaSuccess && dv == 13000);
  void *gpa = NULL;
  enum cudaDriverEntryPointQueryResult st;
  EXPECT(cudaGetDriverEntryPointByVersion("cuGetProcAddress", &gpa, 12000, cudaEnableDefault,
                                          &st) == cudaSuccess);
  EXPECT(gpa != NULL && gpa == drv_sym("cuGetProcAddress_v2") && st == cudaDriverEntryPointSuccess);
  memcpy(&cu_get_proc_address, &gpa, sizeof gpa);
  DRV_FN(cu_ctx_synchronize, "cuCtxSynchronize");
  DRV_FN(cu_ctx_synchronize_v2, "cuCtxSynchronize_v2");
  DRV_FN(cu_ctx_get_current, "cuCtxGetCurrent");
  DRV_FN(cu_event_query, "cuEventQuery");
  DRV_FN(cu_pointer_get_attribute, "cuPointerGetAttribute");
  DRV_FN(cu_mem_get_address_range, "cuMemGetAddressRange_v2");
  DRV_FN(cu_mem_alloc, "cuMemAlloc_v2");
  DRV_FN(cu_mem_alloc_v1, "cuMemAlloc");
  DRV_FN(cu_mem_free_v1, "cuMemFree");
  DRV_FN(cu_graph_destroy, "cuGraphDestroy");
  DRV_FN(cu_ipc_get_mem_handle, "cuIpcGetMemHandle");
  DRV_FN(cu_ipc_open_mem_handle, "cuIpcOpenMemHandle_v2");
  DRV_FN(cu_ipc_close_mem_handle, "cuIpcCloseMemHandle");
  EXPECT(cu_ctx_synchronize && cu_ctx_synchronize_v2 && cu_ctx_get_current && cu_event_query &&
         cu_pointer_get_attribute && cu_mem_get_address_range && cu_mem_alloc &&
         cu_mem_alloc_v1 && cu_mem_free_v1 && cu_ipc_get_mem_handle && cu_ipc_open_mem_handle &&
         cu_ipc_close_mem_handle);
  bool ok = !t_failed;
  report("init: 2 devices, runtime and driver 13000, control API and driver entry points found");
  return ok;
}

static void check_round_trip(void) {
  fake_cuda_counters_t c0 = counters();
  unsigned char in[4096], out[4096];
  for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i * 7 + 1);
  void *a = NULL, *b = NULL;
  EXPECT(cudaMalloc(&a, MIB) == cudaSuccess && a);
  EXPECT(cudaMalloc(&b, MIB) == cudaSuccess && b);
  EXPECT(counters().bytes_in_use == c0.bytes_in_use + 2 * MIB);
  EXPECT(cudaMemset(b, 0xab, MIB) == cudaSuccess);
  EXPECT(cudaMemcpy(a, in, sizeof in, cudaMemcpyHostToDevice) == cudaSuccess);
  EXPECT(cudaMemcpy(b, a, sizeof in, cudaMemcpyDeviceToDevice) == cudaSuccess);
  EXPECT(cudaMemcpy(out, b, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess);
  EXPECT(memcmp(in, out, sizeof in) == 0);
  EXPECT(cudaMemcpy(out, (char *)b + sizeof in, 16, cudaMemcpyDefault) == cudaSuccess &&
         out[0] == 0xab && out[15] == 0xab);
  /* a copy that runs past the allocation is refused, as the driver's VA check refuses it */
  EXPECT(cudaMemcpy(out, (char *)b + MIB - 16, 32, cudaMemcpyDeviceToHost) ==
         cudaErrorInvalidValue);
  (void)cudaGetLastError();
  EXPECT(cudaFree(a) == cudaSuccess && cudaFree(b) == cudaSuccess);
  fake_cuda_counters_t c1 = counters();
  EXPECT(c1.mem_alloc == c0.mem_alloc + 2 && c1.mem_free == c0.mem_free + 2);
  EXPECT(c1.bytes_in_use == c0.bytes_in_use);
  report("cudaMalloc/cudaMemset/cudaMemcpy/cudaFree round trip; mem_alloc, mem_free, bytes_in_use");
}

static void check_mem_info(void) {
  size_t free0 = 0, total = 0, free1 = 0, total1 = 0;
  EXPECT(cudaMemGetInfo(&free0, &total) == cudaSuccess && total == (size_t)8 << 30);
  EXPECT(free0 == total - counters().bytes_in_use);
  void *a = NULL;
  EXPECT(cudaMalloc(&a, 3 * MIB) == cudaSuccess);
  EXPECT(cudaMemGetInfo(&free1, &total1) == cudaSuccess && free1 == free0 - 3 * MIB);
  EXPECT(cudaFree(a) == cudaSuccess);
  report("cudaMemGetInfo: free = capacity - in use");
}

static void check_oom(void) {
  fake_cuda_counters_t c0 = counters();
  fc.set_capacity(64 * MIB);
  void *a = (void *)(uintptr_t)1, *b = NULL, *c = NULL;
  EXPECT(cudaMalloc(&a, 128 * MIB) == cudaErrorMemoryAllocation && a == NULL);
  EXPECT(cudaGetLastError() == cudaErrorMemoryAllocation && cudaGetLastError() == cudaSuccess);
  EXPECT(cudaMalloc(&b, 32 * MIB) == cudaSuccess);
  EXPECT(cudaMalloc(&c, 48 * MIB) == cudaErrorMemoryAllocation);
  (void)cudaGetLastError();
  EXPECT(cudaFree(b) == cudaSuccess);
  EXPECT(cudaMalloc(&c, 48 * MIB) == cudaSuccess && cudaFree(c) == cudaSuccess);
  fc.set_capacity((size_t)8 << 30);
  EXPECT(counters().mem_alloc_failed == c0.mem_alloc_failed + 2);
  report("past the capacity: cudaErrorMemoryAllocation, mem_alloc_failed; freeing makes room");
}

static void check_bad_free(void) {
  fake_cuda_counters_t c0 = counters();
  void *a = NULL, *b = NULL;
  EXPECT(cudaMalloc(&a, 4096) == cudaSuccess && cudaMalloc(&b, 4096) == cudaSuccess);
  EXPECT(cudaFree(a) == cudaSuccess);
  EXPECT(cudaFree(a) == cudaErrorInvalidValue);
  EXPECT(cudaFree((char *)b + 16) == cudaErrorInvalidValue); /* not a base */
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
  EXPECT(cudaFree(NULL) == cudaSuccess);
  EXPECT(cudaFree(b) == cudaSuccess);
  EXPECT(counters().mem_free == c0.mem_free + 2);
  /* the memory is really unmapped: a use after free faults (in a child, to survive it) */
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = open("/dev/null", O_WRONLY); /* keeps a sanitizer's report out of the output */
    if (null_fd >= 0) dup2(null_fd, 2);
    volatile unsigned char v = *(volatile unsigned char *)a;
    (void)v;
    _exit(42);
  }
  int status = 0;
  EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid);
  EXPECT(!(WIFEXITED(status) && WEXITSTATUS(status) == 42));
  report("double and non-base free: cudaErrorInvalidValue; cudaFree(0) ok; use after free faults");
}

static void check_other_allocators(void) {
  fake_cuda_counters_t c0 = counters();
  void *pitched = NULL, *managed = NULL, *async = NULL, *host = NULL;
  size_t pitch = 0;
  cudaStream_t s = NULL;
  EXPECT(cudaStreamCreate(&s) == cudaSuccess);
  EXPECT(cudaMallocPitch(&pitched, &pitch, 1000, 10) == cudaSuccess && pitch == 1024);
  EXPECT(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal) == cudaSuccess);
  EXPECT(cudaMallocAsync(&async, 4096, s) == cudaSuccess);
  EXPECT(cudaMallocHost(&host, 4096) == cudaSuccess);
  memset(host, 1, 4096); /* pinned host memory is host memory */
  fake_cuda_counters_t c1 = counters();
  /* not the host block; the stream-ordered one is charged as its pool's first 2 MiB granule */
  EXPECT(c1.bytes_in_use == c0.bytes_in_use + 10 * 1024 + 4096 + 2 * MIB);
  EXPECT(c1.mem_alloc == c0.mem_alloc);
  int managed_flag = 0;
  unsigned int type = 0;
  EXPECT(cu_pointer_get_attribute(&managed_flag, CU_POINTER_ATTRIBUTE_IS_MANAGED, dp(managed)) ==
             CUDA_SUCCESS && managed_flag == 1);
  EXPECT(cu_pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp(host)) ==
             CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST);
  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT(cu_mem_get_address_range(&base, &size, dp(pitched) + 5000) == CUDA_SUCCESS &&
         base == dp(pitched) && size == 10 * 1024);
  EXPECT(cudaFreeHost(pitched) == cudaErrorInvalidValue); /* not host memory */
  (void)cudaGetLastError();
  EXPECT(cudaFree(pitched) == cudaSuccess && cudaFree(managed) == cudaSuccess);
  EXPECT(cudaFreeAsync(async, s) == cudaSuccess && cudaFreeHost(host) == cudaSuccess);
  /* the pool keeps the freed granule until a synchronization releases it (threshold 0) */
  EXPECT(counters().bytes_in_use == c0.bytes_in_use + 2 * MIB);
  EXPECT(cudaStreamSynchronize(s) == cudaSuccess);
  EXPECT(cudaStreamDestroy(s) == cudaSuccess);
  /* the 32-bit legacy ABI: below 4 GiB, or out of memory where the kernel cannot place it */
  unsigned int low = 0;
  CUresult rc = cu_mem_alloc_v1(&low, 4096);
  EXPECT(rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY);
  if (rc == CUDA_SUCCESS) EXPECT(low != 0 && cu_mem_free_v1(low) == CUDA_SUCCESS);
  fake_cuda_counters_t c2 = counters();
  /* mem_free counts cuMemFree_v2 calls, whatever they free: cudaFree of the pitched and the
   * managed block */
  EXPECT(c2.bytes_in_use == c0.bytes_in_use && c2.mem_alloc == c0.mem_alloc &&
         c2.mem_free == c0.mem_free + 2);
  report("pitch, managed, async, pinned host and 32-bit allocations; not in mem_alloc");
}

static void check_manual_events(void) {
  fake_cuda_counters_t c0 = counters();
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  EXPECT(cudaStreamCreate(&s) == cudaSuccess && cudaEventCreate(&e) == cudaSuccess);
  fc.set_manual_events(1);
  EXPECT(cudaEventRecord(e, s) == cudaSuccess);
  EXPECT(cudaEventQuery(e) == cudaErrorNotReady && cu_event_query(e) == CUDA_ERROR_NOT_READY);
  EXPECT(cudaStreamQuery(s) == cudaErrorNotReady);
  fc.complete_events();
  EXPECT(cudaEventQuery(e) == cudaSuccess && cudaStreamQuery(s) == cudaSuccess);
  EXPECT(cudaEventRecord(e, s) == cudaSuccess && cudaEventQuery(e) == cudaErrorNotReady);
  EXPECT(cudaEventSynchronize(e) == cudaSuccess && cudaEventQuery(e) == cudaSuccess);
  EXPECT(cudaEventRecord(e, s) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess);
  EXPECT(cudaEventQuery(e) == cudaSuccess);
  EXPECT(cudaEventRecord(e, s) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess);
  EXPECT(cudaEventQuery(e) == cudaSuccess);
  fc.set_manual_events(0);
  EXPECT(cudaEventRecord(e, s) == cudaSuccess && cudaEventQuery(e) == cudaSuccess);
  EXPECT(cudaEventDestroy(e) == cudaSuccess && cudaStreamDestroy(s) == cudaSuccess);
  fake_cuda_counters_t c1 = counters();
  EXPECT(c1.event_record == c0.event_record + 5 && c1.event_query == c0.event_query + 8);
  report("manual events stay incomplete until completed or synchronized");
}

static void check_capture(void) {
  fake_cuda_counters_t c0 = counters();
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  cudaGraph_t graph = (cudaGraph_t)(uintptr_t)1;
  EXPECT(cudaStreamCreate(&s) == cudaSuccess && cudaEventCreate(&e) == cudaSuccess);
  EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  EXPECT(cu_ctx_synchronize() == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT(cudaEventRecord(e, s) == cudaErrorStreamCaptureUnsupported);
  EXPECT(counters().capture_violations == c0.capture_violations + 2);
  /* an illegal call invalidates the capture, as on a real driver */
  EXPECT(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated && graph == NULL);
  (void)cudaGetLastError();
  EXPECT(cu_ctx_synchronize() == CUDA_SUCCESS);
  /* a clean capture: allocation is allowed, nothing is counted; the graph holds no memory node */
  void *a = NULL;
  EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  EXPECT(cudaMalloc(&a, 4096) == cudaSuccess);
  EXPECT(cudaStreamEndCapture(s, &graph) == cudaSuccess && graph != NULL);
  EXPECT(cu_graph_destroy && cu_graph_destroy((CUgraph)graph) == CUDA_SUCCESS);
  EXPECT(cudaFree(a) == cudaSuccess);
  /* a captured cudaMallocAsync through the runtime's graph calls: memory from the launch on */
  EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  EXPECT(cudaMallocAsync(&a, 1 << 20, s) == cudaSuccess && a != NULL);
  EXPECT(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  cudaGraphExec_t exec = NULL;
  EXPECT(cudaMemset(a, 1, 1 << 20) == cudaErrorInvalidValue); /* not launched yet */
  (void)cudaGetLastError();
  EXPECT(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess && cudaGraphLaunch(exec, s) == cudaSuccess);
  EXPECT(cudaMemset(a, 1, 1 << 20) == cudaSuccess);
  EXPECT(cudaFreeAsync(a, s) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess);
  EXPECT(cudaGraphExecDestroy(exec) == cudaSuccess && cudaGraphDestroy(graph) == cudaSuccess);
  EXPECT(counters().capture_violations == c0.capture_violations + 2);
  EXPECT(cudaEventDestroy(e) == cudaSuccess && cudaStreamDestroy(s) == cudaSuccess);
  report("capture: cuCtxSynchronize and cudaEventRecord refused and counted, capture invalidated; "
         "a captured cudaMallocAsync lives from cudaGraphLaunch to cudaFreeAsync");
}

static void check_sticky_error(void) {
  fake_cuda_counters_t c0 = counters();
  fc.set_sticky_error(CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
  EXPECT(cudaGetLastError() == cudaErrorIllegalAddress);
  EXPECT(cu_ctx_synchronize_v2(NULL) == CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT(strcmp(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress") == 0);
  fc.set_sticky_error(0);
  EXPECT(cudaDeviceSynchronize() == cudaSuccess && cu_ctx_synchronize() == CUDA_SUCCESS);
  EXPECT(counters().ctx_synchronize == c0.ctx_synchronize + 4);
  report("sticky error returned by cudaDeviceSynchronize and both cuCtxSynchronize ABIs");
}

static void check_proc_address(void) {
  static const struct {
    const char *name;
    int version;
    unsigned long long flags;
    const char *export_name;
  } cases[] = {
      {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
      {"cuMemAlloc", 2000, 0, "cuMemAlloc"},
      {"cuMemFree", 3020, 0, "cuMemFree_v2"},
      {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
      {"cuCtxSynchronize", 2000, 0, "cuCtxSynchronize"},
      {"cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"},
      {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
      {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
      {"cuDevicePrimaryCtxReset", 7000, 0, "cuDevicePrimaryCtxReset"},
      {"cuDevicePrimaryCtxReset", 11000, 0, "cuDevicePrimaryCtxReset_v2"},
      {"cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2"},
      {"cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2"},
      {"cuMemAllocAsync", 11020, 0, "cuMemAllocAsync"},
      {"cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz"},
      {"cuMemcpyHtoD", 7000, 2, "cuMemcpyHtoD_v2_ptds"},
      {"cuEventRecord", 7000, 2, "cuEventRecord_ptsz"},
      {"cuStreamBeginCapture", 10010, 2, "cuStreamBeginCapture_v2_ptsz"},
      {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture"},
  };
  fake_cuda_counters_t c0 = counters();
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    void *p = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = cu_get_proc_address(cases[i].name, &p, cases[i].version, cases[i].flags, &st);
    if (rc != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || !p ||
        p != drv_sym(cases[i].export_name)) {
      printf("     %s@%d flags=%llu: rc=%d status=%d, expected %s\n", cases[i].name,
             cases[i].version, cases[i].flags, (int)rc, (int)st, cases[i].export_name);
      EXPECT(!"variant mapping");
    }
  }
  void *p = (void *)(uintptr_t)1;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT(cu_get_proc_address("", &p, 0, 0, &st) == CUDA_SUCCESS && p == NULL &&
         st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  p = (void *)(uintptr_t)1;
  EXPECT(cu_get_proc_address("cuNoSuchFunction", &p, 13000, 0, &st) == CUDA_SUCCESS &&
         p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  p = (void *)(uintptr_t)1;
  EXPECT(cu_get_proc_address("cuMemAllocAsync", &p, 11010, 0, &st) == CUDA_SUCCESS && p == NULL &&
         st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT(cu_get_proc_address("cuMemAlloc", &p, 13010, 0, &st) == CUDA_ERROR_INVALID_VALUE &&
         p == NULL);
  /* the deprecated runtime form resolves at the runtime's version */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  enum cudaDriverEntryPointQueryResult rst;
  EXPECT(cudaGetDriverEntryPoint("cuCtxSynchronize", &p, cudaEnableDefault, &rst) == cudaSuccess &&
         rst == cudaDriverEntryPointSuccess && p == drv_sym("cuCtxSynchronize_v2"));
#pragma GCC diagnostic pop
  EXPECT(counters().proc_address_lookups ==
         c0.proc_address_lookups + sizeof cases / sizeof *cases + 5);
  report("cuGetProcAddress_v2: variants by version and PTDS flag, NULL + status for misses");
}

/* Every request of the CUDA 13.0 runtime is answered, so a runtime-style caller never stops. */
static void check_request_list(const char *path) {
  FILE *f = fopen(path, "r");
  EXPECT(f != NULL);
  char line[256], name[128];
  int lines = 0, answered = 0;
  while (f && fgets(line, sizeof line, f)) {
    int version = -1;
    unsigned long long flags = 0;
    name[0] = '\0';
    int n = line[0] == ',' ? sscanf(line, ", ver=%d, flags=%llu", &version, &flags)
                           : sscanf(line, "%127[^,], ver=%d, flags=%llu", name, &version, &flags);
    if (n != (line[0] == ',' ? 2 : 3)) {
      EXPECT(!"parse error in the request list");
      continue;
    }
    lines++;
    void *p = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = cu_get_proc_address(name, &p, version, flags, &st);
    if (!name[0]) {
      EXPECT(rc == CUDA_SUCCESS && p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    } else if (rc == CUDA_SUCCESS && p && st == CU_GET_PROC_ADDRESS_SUCCESS) {
      answered++;
    } else if (!t_failed) {
      printf("     %s@%d flags=%llu: rc=%d status=%d\n", name, version, flags, (int)rc, (int)st);
      EXPECT(!"request answered");
    }
  }
  if (f) fclose(f);
  EXPECT(lines == 440 && answered == 439);
  char title[128];
  snprintf(title, sizeof title, "runtime request list: %d of %d answered (all but the probe)",
           answered, lines);
  report(title);
}

static void check_second_device(void) {
  CUcontext ctx0 = NULL, ctx1 = NULL, owner = NULL;
  size_t free0 = 0, total = 0, free1 = 0, free1_after = 0;
  EXPECT(cu_ctx_get_current(&ctx0) == CUDA_SUCCESS && ctx0 != NULL);
  EXPECT(cudaMemGetInfo(&free0, &total) == cudaSuccess);
  EXPECT(cudaSetDevice(1) == cudaSuccess);
  int dev = -1;
  EXPECT(cudaGetDevice(&dev) == cudaSuccess && dev == 1);
  EXPECT(cu_ctx_get_current(&ctx1) == CUDA_SUCCESS && ctx1 != NULL && ctx1 != ctx0);
  EXPECT(cudaMemGetInfo(&free1, &total) == cudaSuccess);
  void *a = NULL;
  EXPECT(cudaMalloc(&a, 2 * MIB) == cudaSuccess);
  int ordinal = -1;
  EXPECT(cu_pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dp(a)) ==
             CUDA_SUCCESS && ordinal == 1);
  EXPECT(cu_pointer_get_attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, dp(a)) == CUDA_SUCCESS &&
         owner == ctx1);
  EXPECT(cudaMemGetInfo(&free1_after, &total) == cudaSuccess && free1_after == free1 - 2 * MIB);
  EXPECT(cudaSetDevice(0) == cudaSuccess);
  size_t free0_after = 0;
  EXPECT(cudaMemGetInfo(&free0_after, &total) == cudaSuccess && free0_after == free0);
  EXPECT(cudaFree(a) == cudaSuccess); /* freeing another device's memory is fine */
  report("cudaSetDevice(1): own primary context and capacity, per-device cudaMemGetInfo");
}

static void check_device_reset(void) {
  fake_cuda_counters_t c0 = counters();
  void *keep = NULL, *a = NULL, *b = NULL;
  cudaStream_t s = NULL;
  EXPECT(cudaMalloc(&keep, MIB) == cudaSuccess); /* on device 0 */
  EXPECT(cudaSetDevice(1) == cudaSuccess);
  EXPECT(cudaMalloc(&a, MIB) == cudaSuccess && cudaMallocAsync(&b, MIB, NULL) == cudaSuccess);
  EXPECT(cudaStreamCreate(&s) == cudaSuccess);
  EXPECT(counters().bytes_in_use == c0.bytes_in_use + 4 * MIB); /* b: its pool's 2 MiB granule */
  EXPECT(cudaDeviceReset() == cudaSuccess);
  fake_cuda_counters_t c1 = counters();
  EXPECT(c1.primary_ctx_resets == c0.primary_ctx_resets + 1);
  EXPECT(c1.bytes_in_use == c0.bytes_in_use + MIB);
  int ordinal = 0;
  EXPECT(cu_pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dp(a)) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(cudaFree(a) == cudaErrorInvalidValue);
  EXPECT(cudaStreamDestroy(s) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  /* the reset context is at once usable again */
  EXPECT(cudaMalloc(&a, MIB) == cudaSuccess && cudaFree(a) == cudaSuccess);
  EXPECT(cudaSetDevice(0) == cudaSuccess && cudaFree(keep) == cudaSuccess);
  EXPECT(counters().bytes_in_use == c0.bytes_in_use);
  report("cudaDeviceReset frees every allocation and stream of that context only");
}

static void check_ipc(void) {
  void *a = NULL;
  CUipcMemHandle h, h2;
  EXPECT(cudaMalloc(&a, MIB) == cudaSuccess);
  EXPECT(cu_ipc_get_mem_handle(&h, dp(a)) == CUDA_SUCCESS);
  fake_cuda_ipc_payload_t pl;
  memcpy(&pl, h.reserved, sizeof pl);
  EXPECT(strcmp(pl.magic, FAKE_CUDA_IPC_MAGIC) == 0 && pl.base == dp(a) && pl.size == MIB);
  /* an interior pointer gets the whole allocation's handle, as on a real driver */
  EXPECT(cu_ipc_get_mem_handle(&h2, dp(a) + 512) == CUDA_SUCCESS);
  memcpy(&pl, h2.reserved, sizeof pl);
  EXPECT(pl.base == dp(a) && pl.size == MIB);
  CUdeviceptr q = 0;
  EXPECT(cu_ipc_open_mem_handle(&q, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
         CUDA_ERROR_INVALID_CONTEXT);
  size_t in_use = counters().bytes_in_use;
  pid_t pid = fork();
  if (pid == 0) {
    CUdeviceptr base = 0;
    size_t size = 0;
    bool ok = cu_ipc_open_mem_handle(&q, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == CUDA_SUCCESS &&
              cu_mem_get_address_range(&base, &size, q) == CUDA_SUCCESS && base == q &&
              size == MIB && counters().bytes_in_use == in_use &&
              cu_ipc_close_mem_handle(q) == CUDA_SUCCESS;
    _exit(ok ? 0 : 1);
  }
  int status = -1;
  EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0);
  EXPECT(cudaFree(a) == cudaSuccess);
  report("IPC: handle of a base only, encoding it; opens in another process, not the exporter");
}

static void *thread_main(void *arg) {
  (void)arg;
  /* a new thread has no current context at the driver level ... */
  CUdeviceptr p = 0;
  bool ok = cu_mem_alloc(&p, 4096) == CUDA_ERROR_INVALID_CONTEXT;
  /* ... and the runtime binds device 0's primary context on first use */
  void *a = NULL;
  CUcontext ctx = NULL;
  int dev = -1;
  ok = ok && cudaGetDevice(&dev) == cudaSuccess && dev == 0;
  ok = ok && cudaMalloc(&a, 4096) == cudaSuccess && cu_ctx_get_current(&ctx) == CUDA_SUCCESS &&
       ctx == arg && cudaFree(a) == cudaSuccess;
  return ok ? arg : NULL;
}

static void check_threads(void) {
  EXPECT(cudaSetDevice(1) == cudaSuccess && cudaSetDevice(0) == cudaSuccess);
  CUcontext ctx0 = NULL;
  EXPECT(cu_ctx_get_current(&ctx0) == CUDA_SUCCESS);
  pthread_t t;
  void *ret = NULL;
  EXPECT(pthread_create(&t, NULL, thread_main, ctx0) == 0 && pthread_join(t, &ret) == 0);
  EXPECT(ret == ctx0);
  report("per-thread context: none at first, runtime binds device 0 in a new thread");
}

/* Several threads allocating, copying, freeing and recording events at once: the counters must
 * add up (and a TSan build of the fakes must stay quiet). */
enum { STRESS_THREADS = 4, STRESS_ROUNDS = 300 };

static void *stress_main(void *arg) {
  (void)arg;
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  bool ok = cudaStreamCreate(&s) == cudaSuccess && cudaEventCreate(&e) == cudaSuccess;
  for (int i = 0; ok && i < STRESS_ROUNDS; i++) {
    void *a = NULL;
    unsigned int v = (unsigned int)i, w = 0;
    ok = cudaMalloc(&a, 4096 + (size_t)i) == cudaSuccess &&
         cudaMemcpy(a, &v, sizeof v, cudaMemcpyHostToDevice) == cudaSuccess &&
         cudaMemcpy(&w, a, sizeof w, cudaMemcpyDeviceToHost) == cudaSuccess && w == v &&
         cudaEventRecord(e, s) == cudaSuccess && cudaEventQuery(e) == cudaSuccess &&
         cudaFree(a) == cudaSuccess;
  }
  ok = ok && cudaEventDestroy(e) == cudaSuccess && cudaStreamDestroy(s) == cudaSuccess;
  return ok ? arg : NULL;
}

static void check_concurrency(void) {
  fake_cuda_counters_t c0 = counters();
  pthread_t t[STRESS_THREADS];
  int ids[STRESS_THREADS];
  int started = 0;
  for (int i = 0; i < STRESS_THREADS; i++)
    started += pthread_create(&t[i], NULL, stress_main, &ids[i]) == 0;
  EXPECT(started == STRESS_THREADS);
  for (int i = 0; i < started; i++) {
    void *ret = NULL;
    EXPECT(pthread_join(t[i], &ret) == 0 && ret == &ids[i]);
  }
  fake_cuda_counters_t c1 = counters();
  EXPECT(c1.mem_alloc == c0.mem_alloc + STRESS_THREADS * STRESS_ROUNDS);
  EXPECT(c1.mem_free == c0.mem_free + STRESS_THREADS * STRESS_ROUNDS);
  EXPECT(c1.bytes_in_use == c0.bytes_in_use);
  report("concurrency: 4 threads allocating, copying, freeing and recording events");
}

static void check_log(const char *path) {
  FILE *f = fopen(path, "r");
  EXPECT(f != NULL);
  bool probe = false, lookup = false, alloc = false;
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    probe |= strncmp(line, "cuGetProcAddress_v2 name= ver=0 flags=0 status=0 found=0", 56) == 0;
    lookup |= strncmp(line, "cuGetProcAddress_v2 name=cuMemAlloc ver=3020 flags=0 status=0 found=1",
                      69) == 0;
    alloc |= strncmp(line, "cuMemAlloc_v2 size=1048576 -> 0x", 32) == 0;
  }
  if (f) fclose(f);
  EXPECT(probe && lookup && alloc);
  report("FAKE_CUDA_LOG: the probe, the runtime's lookups and the allocations are logged");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <cudart13-getprocaddress-requests.txt> [<log file>]\n", argv[0]);
    return 2;
  }
  /* The driver opens FAKE_CUDA_LOG when the runtime first loads it, which is after this. */
  const char *log = argc > 2 ? argv[2] : NULL;
  const char *env_log = getenv("FAKE_CUDA_LOG");
  bool check_logging = log && env_log && strcmp(log, env_log) == 0;
  if (check_logging) {
    FILE *f = fopen(log, "w");
    if (f) fclose(f);
  }
  setvbuf(stdout, NULL, _IOLBF, 0);

  if (!check_init()) return 1; /* nothing else can run */
  check_round_trip();
  check_mem_info();
  check_oom();
  check_bad_free();
  check_other_allocators();
  check_manual_events();
  check_capture();
  check_sticky_error();
  check_proc_address();
  check_request_list(argv[1]);
  check_second_device();
  check_device_reset();
  check_ipc();
  check_threads();
  check_concurrency();
  if (check_logging) check_log(log);
  printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}

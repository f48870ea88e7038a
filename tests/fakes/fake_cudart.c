/* SPDX-License-Identifier: Apache-2.0 */
/* A fake CUDA runtime, built as libcudart.so.13 (exports under the version node libcudart.so.13),
 * for integration tests without a GPU (interposition.md, section 10.1 item 1).
 *
 * The real runtime cannot be driven by a fake driver (it needs private export tables), so tests
 * link this one instead. It reaches the driver exactly the way the real one does
 * (interposition.md 2.2): it never links libcuda; on first use it dlopen()s libcuda.so.1
 * (RTLD_NOW, not global), dlsym()s cuGetProcAddress_v2, cuInit and cuGetProcAddress, probes with
 * the empty name, asks for "cuGetProcAddress" at 11030 and at 12000, and resolves every entry point
 * it uses through the pointer the 12000 self-query returned, by base name and the version the
 * CUDA 13.0 runtime asks for (cudart13-getprocaddress-requests.txt). A preloaded cudasnap
 * therefore sees the same lookups here as with the real runtime.
 *
 * Runtime semantics kept: a current device per thread (default 0) whose primary context is
 * retained and made current on first use; a per-thread last error; CUresult codes mapped to
 * cudaError_t as the real runtime maps them. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The project builds with -fvisibility=hidden; libcudart.map then puts these under the version
 * node. */
#define CR_EXPORT __attribute__((visibility("default")))

enum { CR_MAX_DEVICES = 64 };

/* ---- the driver, as resolved at initialization ---- */

typedef struct cr_driver_s {
  PFN_cuInit_v2000 init;
  PFN_cuDriverGetVersion_v2020 driver_get_version;
  PFN_cuDeviceGet_v2000 device_get;
  PFN_cuDeviceGetCount_v2000 device_get_count;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain;
  PFN_cuDevicePrimaryCtxReset_v11000 primary_ctx_reset; /* the v1 export: same signature */
  PFN_cuCtxSetCurrent_v4000 ctx_set_current;
  PFN_cuCtxSynchronize_v2000 ctx_synchronize;
  PFN_cuMemAlloc_v3020 mem_alloc;
  PFN_cuMemFree_v3020 mem_free;
  PFN_cuMemGetInfo_v3020 mem_get_info;
  PFN_cuMemAllocPitch_v3020 mem_alloc_pitch;
  PFN_cuMemAllocManaged_v6000 mem_alloc_managed;
  PFN_cuMemAllocAsync_v11020 mem_alloc_async;
  PFN_cuMemFreeAsync_v11020 mem_free_async;
  PFN_cuMemHostAlloc_v2020 mem_host_alloc;
  PFN_cuMemFreeHost_v2000 mem_free_host;
  PFN_cuMemcpy_v4000 memcpy_any;
  PFN_cuMemcpyHtoD_v3020 memcpy_htod;
  PFN_cuMemcpyDtoH_v3020 memcpy_dtoh;
  PFN_cuMemcpyDtoD_v3020 memcpy_dtod;
  PFN_cuMemsetD8_v3020 memset_d8;
  PFN_cuStreamCreate_v2000 stream_create;
  PFN_cuStreamDestroy_v4000 stream_destroy;
  PFN_cuStreamSynchronize_v2000 stream_synchronize;
  PFN_cuStreamQuery_v2000 stream_query;
  PFN_cuEventCreate_v2000 event_create;
  PFN_cuEventRecord_v2000 event_record;
  PFN_cuEventQuery_v2000 event_query;
  PFN_cuEventSynchronize_v2000 event_synchronize;
  PFN_cuEventDestroy_v4000 event_destroy;
  PFN_cuStreamBeginCapture_v10010 stream_begin_capture;
  PFN_cuStreamEndCapture_v10000 stream_end_capture;
  PFN_cuGraphInstantiateWithFlags_v11040 graph_instantiate;
  PFN_cuGraphLaunch_v10000 graph_launch;
  PFN_cuGraphExecDestroy_v10000 graph_exec_destroy;
  PFN_cuGraphDestroy_v10000 graph_destroy;
  PFN_cuGetExportTable_v3000 get_export_table; /* looked up as the real runtime does; not called */
  PFN_cuGetProcAddress_v12000 get_proc_address; /* the self-queried resolver */
} cr_driver_t;

/* (base name, version) as the CUDA 13.0 runtime requests them, flags 0 (legacy stream). */
static const struct {
  const char *name;
  int version;
  size_t offset;
} cr_entries[] = {
    {"cuInit", 2000, offsetof(cr_driver_t, init)},
    {"cuDeviceGet", 2000, offsetof(cr_driver_t, device_get)},
    {"cuDeviceGetCount", 2000, offsetof(cr_driver_t, device_get_count)},
    {"cuDriverGetVersion", 2020, offsetof(cr_driver_t, driver_get_version)},
    {"cuDevicePrimaryCtxRetain", 7000, offsetof(cr_driver_t, primary_ctx_retain)},
    {"cuDevicePrimaryCtxReset", 7000, offsetof(cr_driver_t, primary_ctx_reset)},
    {"cuCtxSetCurrent", 4000, offsetof(cr_driver_t, ctx_set_current)},
    {"cuCtxSynchronize", 2000, offsetof(cr_driver_t, ctx_synchronize)},
    {"cuMemGetInfo", 3020, offsetof(cr_driver_t, mem_get_info)},
    {"cuMemAllocManaged", 6000, offsetof(cr_driver_t, mem_alloc_managed)},
    {"cuMemAlloc", 3020, offsetof(cr_driver_t, mem_alloc)},
    {"cuMemAllocPitch", 3020, offsetof(cr_driver_t, mem_alloc_pitch)},
    {"cuMemFree", 3020, offsetof(cr_driver_t, mem_free)},
    {"cuMemFreeHost", 2000, offsetof(cr_driver_t, mem_free_host)},
    {"cuMemHostAlloc", 2020, offsetof(cr_driver_t, mem_host_alloc)},
    {"cuMemAllocAsync", 11020, offsetof(cr_driver_t, mem_alloc_async)},
    {"cuMemFreeAsync", 11020, offsetof(cr_driver_t, mem_free_async)},
    {"cuMemcpy", 4000, offsetof(cr_driver_t, memcpy_any)},
    {"cuMemcpyHtoD", 3020, offsetof(cr_driver_t, memcpy_htod)},
    {"cuMemcpyDtoH", 3020, offsetof(cr_driver_t, memcpy_dtoh)},
    {"cuMemcpyDtoD", 3020, offsetof(cr_driver_t, memcpy_dtod)},
    {"cuMemsetD8", 3020, offsetof(cr_driver_t, memset_d8)},
    {"cuEventCreate", 2000, offsetof(cr_driver_t, event_create)},
    {"cuEventRecord", 2000, offsetof(cr_driver_t, event_record)},
    {"cuEventQuery", 2000, offsetof(cr_driver_t, event_query)},
    {"cuEventSynchronize", 2000, offsetof(cr_driver_t, event_synchronize)},
    {"cuEventDestroy", 4000, offsetof(cr_driver_t, event_destroy)},
    {"cuStreamCreate", 2000, offsetof(cr_driver_t, stream_create)},
    {"cuStreamDestroy", 4000, offsetof(cr_driver_t, stream_destroy)},
    {"cuStreamSynchronize", 2000, offsetof(cr_driver_t, stream_synchronize)},
    {"cuStreamQuery", 2000, offsetof(cr_driver_t, stream_query)},
    {"cuGetExportTable", 3000, offsetof(cr_driver_t, get_export_table)},
    {"cuStreamBeginCapture", 10010, offsetof(cr_driver_t, stream_begin_capture)},
    {"cuStreamEndCapture", 10000, offsetof(cr_driver_t, stream_end_capture)},
    {"cuGraphInstantiateWithFlags", 11040, offsetof(cr_driver_t, graph_instantiate)},
    {"cuGraphLaunch", 10000, offsetof(cr_driver_t, graph_launch)},
    {"cuGraphExecDestroy", 10000, offsetof(cr_driver_t, graph_exec_destroy)},
    {"cuGraphDestroy", 10000, offsetof(cr_driver_t, graph_destroy)},
};

static cr_driver_t drv;
static cudaError_t cr_init_error = cudaSuccess; /* set once by cr_init_once */
static pthread_once_t cr_once = PTHREAD_ONCE_INIT;

/* Primary contexts this runtime has retained; it keeps them for the life of the process, as the
 * real runtime does (a reset does not release them). */
static pthread_mutex_t cr_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext cr_primary[CR_MAX_DEVICES];

static _Thread_local int tls_device;          /* cudaSetDevice; 0 by default */
static _Thread_local CUcontext tls_bound;     /* the primary context made current on this thread */
static _Thread_local cudaError_t tls_last_error;

/* ISO C has no cast between object and function pointers; every slot is one function pointer. */
static void cr_store(size_t offset, void *p) {
  _Static_assert(sizeof(void *) == sizeof(PFN_cuInit_v2000), "function pointers are pointer-sized");
  memcpy((char *)&drv + offset, &p, sizeof p);
}

static void cr_init_once(void) {
  /* FAKE_CUDART_LIBCUDA: another name to load, so that a test plays a machine without a driver
   * (a name that is nowhere) whatever the machine has installed. */
  const char *driver = getenv("FAKE_CUDART_LIBCUDA");
  void *h = dlopen(driver && *driver ? driver : "libcuda.so.1", RTLD_NOW);
  if (!h) {
    /* what the real runtime returns without a driver */
    cr_init_error = cudaErrorInsufficientDriver;
    return;
  }
  void *gpa_sym = dlsym(h, "cuGetProcAddress_v2");
  /* the real runtime looks these two up as well; a dlsym override sees the same sequence */
  (void)dlsym(h, "cuInit");
  (void)dlsym(h, "cuGetProcAddress");
  if (!gpa_sym) {
    cr_init_error = cudaErrorInsufficientDriver;
    return;
  }
  PFN_cuGetProcAddress_v12000 gpa;
  memcpy(&gpa, &gpa_sym, sizeof gpa);

  void *p = NULL;
  CUdriverProcAddressQueryResult st;
  (void)gpa("", &p, 0, 0, &st); /* the probe: answers NULL and SYMBOL_NOT_FOUND */
  (void)gpa("cuGetProcAddress", &p, 11030, 0, &st);
  p = NULL;
  if (gpa("cuGetProcAddress", &p, 12000, 0, &st) != CUDA_SUCCESS || !p) {
    cr_init_error = cudaErrorInsufficientDriver;
    return;
  }
  /* From here on, every lookup goes through the pointer the driver handed back for itself. */
  cr_store(offsetof(cr_driver_t, get_proc_address), p);
  for (size_t i = 0; i < sizeof cr_entries / sizeof *cr_entries; i++) {
    p = NULL;
    CUresult rc = drv.get_proc_address(cr_entries[i].name, &p, cr_entries[i].version,
                                       CU_GET_PROC_ADDRESS_DEFAULT, &st);
    if (rc != CUDA_SUCCESS || !p || st != CU_GET_PROC_ADDRESS_SUCCESS) {
      cr_init_error = cudaErrorInsufficientDriver;
      return;
    }
    cr_store(cr_entries[i].offset, p);
  }
  CUresult rc = drv.init(0);
  if (rc == CUDA_ERROR_NO_DEVICE) cr_init_error = cudaErrorNoDevice;
  else if (rc != CUDA_SUCCESS) cr_init_error = cudaErrorInitializationError;
}

/* ---- errors ---- */

/* The real runtime's mapping, for the codes the fake driver returns; the numbers mostly agree,
 * the names do not. */
static cudaError_t cr_map(CUresult rc) {
  switch (rc) {
  case CUDA_SUCCESS: return cudaSuccess;
  case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
  case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
  case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
  case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
  case CUDA_ERROR_STUB_LIBRARY: return cudaErrorStubLibrary;
  case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
  case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
  case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
  case CUDA_ERROR_ECC_UNCORRECTABLE: return cudaErrorECCUncorrectable;
  case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
  case CUDA_ERROR_ILLEGAL_STATE: return cudaErrorIllegalState;
  case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
  case CUDA_ERROR_NOT_READY: return cudaErrorNotReady;
  case CUDA_ERROR_ILLEGAL_ADDRESS: return cudaErrorIllegalAddress;
  case CUDA_ERROR_CONTEXT_IS_DESTROYED: return cudaErrorContextIsDestroyed;
  case CUDA_ERROR_LAUNCH_FAILED: return cudaErrorLaunchFailure;
  case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return cudaErrorStreamCaptureInvalidated;
  default: return cudaErrorUnknown;
  }
}

/* Records a failure as the thread's last error (cudaGetLastError) and returns it. */
static cudaError_t cr_ret(cudaError_t e) {
  if (e != cudaSuccess) tls_last_error = e;
  return e;
}

static cudaError_t cr_ret_cu(CUresult rc) { return cr_ret(cr_map(rc)); }

static cudaError_t cr_init(void) {
  pthread_once(&cr_once, cr_init_once);
  return cr_init_error;
}

/* Makes the primary context of `dev` current on this thread, retaining it the first time. */
static cudaError_t cr_bind(int dev) {
  int count = 0;
  CUresult rc = drv.device_get_count(&count);
  if (rc != CUDA_SUCCESS) return cr_map(rc);
  if (dev < 0 || dev >= count || dev >= CR_MAX_DEVICES) return cudaErrorInvalidDevice;
  pthread_mutex_lock(&cr_lock);
  CUcontext ctx = cr_primary[dev];
  if (!ctx) {
    rc = drv.primary_ctx_retain(&ctx, dev);
    if (rc == CUDA_SUCCESS) cr_primary[dev] = ctx;
  }
  pthread_mutex_unlock(&cr_lock);
  if (rc != CUDA_SUCCESS) return cr_map(rc);
  rc = drv.ctx_set_current(ctx);
  if (rc != CUDA_SUCCESS) return cr_map(rc);
  tls_device = dev;
  tls_bound = ctx;
  return cudaSuccess;
}

/* Initialization and a current context: what every runtime call that touches a device needs. */
static cudaError_t cr_ctx(void) {
  cudaError_t e = cr_init();
  if (e != cudaSuccess) return e;
  return tls_bound ? cudaSuccess : cr_bind(tls_device);
}

#define CR_ERRORS(X)                                                                               \
  X(cudaSuccess, "no error")                                                                       \
  X(cudaErrorInvalidValue, "invalid argument")                                                     \
  X(cudaErrorMemoryAllocation, "out of memory")                                                    \
  X(cudaErrorInitializationError, "initialization error")                                          \
  X(cudaErrorCudartUnloading, "driver shutting down")                                              \
  X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                          \
  X(cudaErrorStubLibrary, "CUDA driver is a stub library")                                         \
  X(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version")   \
  X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                       \
  X(cudaErrorInvalidDevice, "invalid device ordinal")                                              \
  X(cudaErrorDeviceUninitialized, "invalid device context")                                        \
  X(cudaErrorECCUncorrectable, "uncorrectable ECC error encountered")                              \
  X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                     \
  X(cudaErrorIllegalState, "the operation cannot be performed in the present state")               \
  X(cudaErrorSymbolNotFound, "named symbol not found")                                             \
  X(cudaErrorNotReady, "device not ready")                                                         \
  X(cudaErrorIllegalAddress, "an illegal memory access was encountered")                           \
  X(cudaErrorContextIsDestroyed, "context is destroyed")                                           \
  X(cudaErrorLaunchFailure, "unspecified launch failure")                                          \
  X(cudaErrorNotSupported, "operation not supported")                                              \
  X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")         \
  X(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture")  \
  X(cudaErrorUnknown, "unknown error")

CR_EXPORT const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
#define CR_ERROR_STRING(code, text)                                                                \
  case code: return text;
    CR_ERRORS(CR_ERROR_STRING)
#undef CR_ERROR_STRING
  default: return "unrecognized error code";
  }
}

CR_EXPORT const char *cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define CR_ERROR_NAME(code, text)                                                                  \
  case code: return #code;
    CR_ERRORS(CR_ERROR_NAME)
#undef CR_ERROR_NAME
  default: return "unrecognized error code";
  }
}

CR_EXPORT cudaError_t cudaGetLastError(void) {
  cudaError_t e = tls_last_error;
  tls_last_error = cudaSuccess;
  return e;
}

CR_EXPORT cudaError_t cudaPeekAtLastError(void) { return tls_last_error; }

/* ---- versions, devices ---- */

CR_EXPORT cudaError_t cudaRuntimeGetVersion(int *runtimeVersion) {
  if (!runtimeVersion) return cr_ret(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

CR_EXPORT cudaError_t cudaDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_init();
  if (e == cudaErrorInsufficientDriver) {
    *driverVersion = 0; /* "0 if no driver is installed" */
    return cudaSuccess;
  }
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.driver_get_version(driverVersion));
}

CR_EXPORT cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_init();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.device_get_count(count));
}

CR_EXPORT cudaError_t cudaSetDevice(int device) {
  cudaError_t e = cr_init();
  if (e == cudaSuccess) e = cr_bind(device);
  return cr_ret(e);
}

CR_EXPORT cudaError_t cudaGetDevice(int *device) {
  if (!device) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_init();
  if (e != cudaSuccess) return cr_ret(e);
  *device = tls_device;
  return cudaSuccess;
}

CR_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.ctx_synchronize());
}

/* Reaches cuDevicePrimaryCtxReset (the v1 export, asked for at 7000), which frees everything the
 * context holds; the retained context stays current and usable. */
CR_EXPORT cudaError_t cudaDeviceReset(void) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  CUdevice dev;
  CUresult rc = drv.device_get(&dev, tls_device);
  if (rc == CUDA_SUCCESS) rc = drv.primary_ctx_reset(dev);
  return cr_ret_cu(rc);
}

/* ---- memory ---- */

/* cudaMalloc(0) succeeds with NULL and never reaches the driver. */
CR_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size) {
  if (!devPtr) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  *devPtr = NULL;
  if (size == 0) return cudaSuccess;
  CUdeviceptr p = 0;
  CUresult rc = drv.mem_alloc(&p, size);
  if (rc == CUDA_SUCCESS) *devPtr = (void *)(uintptr_t)p;
  return cr_ret_cu(rc);
}

/* cudaFree(NULL) initializes the context and succeeds, the classic way to warm up the runtime. */
CR_EXPORT cudaError_t cudaFree(void *devPtr) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  if (!devPtr) return cudaSuccess;
  return cr_ret_cu(drv.mem_free((CUdeviceptr)(uintptr_t)devPtr));
}

CR_EXPORT cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.mem_get_info(free, total));
}

CR_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) {
  if (!devPtr || !pitch) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  CUdeviceptr p = 0;
  CUresult rc = drv.mem_alloc_pitch(&p, pitch, width, height, 4);
  *devPtr = rc == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
  return cr_ret_cu(rc);
}

CR_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
  if (!devPtr) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  CUdeviceptr p = 0;
  CUresult rc = drv.mem_alloc_managed(&p, size, flags);
  *devPtr = rc == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
  return cr_ret_cu(rc);
}

CR_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
  if (!devPtr) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  CUdeviceptr p = 0;
  CUresult rc = drv.mem_alloc_async(&p, size, hStream);
  *devPtr = rc == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
  return cr_ret_cu(rc);
}

CR_EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.mem_free_async((CUdeviceptr)(uintptr_t)devPtr, hStream));
}

/* Through cuMemHostAlloc: the runtime's lookup list has it and not cuMemAllocHost. */
CR_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size) {
  if (!ptr) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.mem_host_alloc(ptr, size, 0));
}

CR_EXPORT cudaError_t cudaFreeHost(void *ptr) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.mem_free_host(ptr));
}

CR_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, s = (CUdeviceptr)(uintptr_t)src;
  switch (kind) {
  case cudaMemcpyHostToHost:
    if (count) memmove(dst, src, count);
    return cudaSuccess;
  case cudaMemcpyHostToDevice: return cr_ret_cu(drv.memcpy_htod(d, src, count));
  case cudaMemcpyDeviceToHost: return cr_ret_cu(drv.memcpy_dtoh(dst, s, count));
  case cudaMemcpyDeviceToDevice: return cr_ret_cu(drv.memcpy_dtod(d, s, count));
  case cudaMemcpyDefault: return cr_ret_cu(drv.memcpy_any(d, s, count));
  default: return cr_ret(cudaErrorInvalidMemcpyDirection);
  }
}

CR_EXPORT cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.memset_d8((CUdeviceptr)(uintptr_t)devPtr, (unsigned char)value, count));
}

/* ---- streams, events, capture ---- */

CR_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
  if (!pStream) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.stream_create(pStream, flags));
}

CR_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
  return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

CR_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.stream_destroy(stream));
}

CR_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.stream_synchronize(stream));
}

/* cudaErrorNotReady is a status, not an error: it does not become the last error. */
CR_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  CUresult rc = drv.stream_query(stream);
  return rc == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : cr_ret_cu(rc);
}

CR_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  if (!event) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.event_create(event, flags));
}

CR_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

CR_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.event_record(event, stream));
}

CR_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  CUresult rc = drv.event_query(event);
  return rc == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : cr_ret_cu(rc);
}

CR_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.event_synchronize(event));
}

CR_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.event_destroy(event));
}

CR_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.stream_begin_capture(stream, (CUstreamCaptureMode)mode));
}

CR_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.stream_end_capture(stream, pGraph));
}

/* ---- graphs ---- */

/* Since CUDA 12 cudaGraphInstantiate takes flags too; both reach cuGraphInstantiateWithFlags. */
CR_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                    unsigned long long flags) {
  if (!pGraphExec) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.graph_instantiate(pGraphExec, graph, flags));
}

CR_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           unsigned long long flags) {
  return cudaGraphInstantiateWithFlags(pGraphExec, graph, flags);
}

CR_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.graph_launch(graphExec, stream));
}

CR_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.graph_exec_destroy(graphExec));
}

CR_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  cudaError_t e = cr_ctx();
  if (e != cudaSuccess) return cr_ret(e);
  return cr_ret_cu(drv.graph_destroy(graph));
}

/* ---- driver entry points ---- */

/* Forwards to the self-queried cuGetProcAddress, keeping its NULL and status semantics; the
 * status enums have the same values. */
CR_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus) {
  if (!symbol || !funcPtr || cudaVersion > INT32_MAX) return cr_ret(cudaErrorInvalidValue);
  cudaError_t e = cr_init();
  if (e != cudaSuccess) return cr_ret(e);
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult rc = drv.get_proc_address(symbol, funcPtr, (int)cudaVersion, flags, &st);
  if (driverStatus) *driverStatus = (enum cudaDriverEntryPointQueryResult)st;
  return cr_ret_cu(rc);
}

/* The version-less form resolves at the runtime's own version. */
CR_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                              unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *driverStatus) {
  return cudaGetDriverEntryPointByVersion(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

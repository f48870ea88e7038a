/* SPDX-License-Identifier: Apache-2.0 */
/* The loader matrix (issue #3, test 1a-1c): one workload through the driver API, the driver's
 * entry points found one of three ways, chosen at build time:
 *
 *   IT_LOADER_LINKED    linked with libcuda.so.1 (-lcuda), calls by name
 *   IT_LOADER_DLSYM     dlopen("libcuda.so.1") + dlsym(handle, "cuMemAlloc_v2"), numba/XLA style
 *   IT_LOADER_PROCADDR  dlopen + dlsym(handle, "cuGetProcAddress_v2"), the self-query for
 *                       "cuGetProcAddress" at 12000, then every lookup through the pointer it
 *                       returned, cudart/NCCL style
 *
 * Usage: it_loader_{linked,dlsym,procaddr} [ROUNDS [SLOTS]]. Prints checksum=<hex>; with cudasnap
 * preloaded it also checks that the cache served the allocations (fake driver counters, cudasnap
 * statistics). */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include "tests/integration/it_common.h"

typedef struct it_driver_s {
  PFN_cuInit_v2000 init;
  PFN_cuDeviceGet_v2000 device_get;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_retain;
  PFN_cuCtxSetCurrent_v4000 set_current;
  PFN_cuMemAlloc_v3020 mem_alloc;
  PFN_cuMemFree_v3020 mem_free;
  PFN_cuMemcpyHtoD_v3020 htod;
  PFN_cuMemcpyDtoH_v3020 dtoh;
  PFN_cuMemGetInfo_v3020 mem_get_info;
} it_driver_t;

static it_driver_t drv;

#if defined(IT_LOADER_LINKED)
static const char *const it_loader = "linked";
static void it_load(void) {
  drv = (it_driver_t){.init = cuInit,
                      .device_get = cuDeviceGet,
                      .primary_retain = cuDevicePrimaryCtxRetain,
                      .set_current = cuCtxSetCurrent,
                      .mem_alloc = cuMemAlloc,
                      .mem_free = cuMemFree,
                      .htod = cuMemcpyHtoD,
                      .dtoh = cuMemcpyDtoH,
                      .mem_get_info = cuMemGetInfo};
}
#elif defined(IT_LOADER_DLSYM)
static const char *const it_loader = "dlsym";
static void *it_sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  IT_CHECK(p, "dlsym(libcuda, %s) failed: %s", name, dlerror());
  return p;
}
static void it_load(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  IT_CHECK(h, "dlopen(libcuda.so.1): %s", dlerror());
  IT_FN_FROM_PTR(drv.init, it_sym(h, "cuInit"));
  IT_FN_FROM_PTR(drv.device_get, it_sym(h, "cuDeviceGet"));
  IT_FN_FROM_PTR(drv.primary_retain, it_sym(h, "cuDevicePrimaryCtxRetain"));
  IT_FN_FROM_PTR(drv.set_current, it_sym(h, "cuCtxSetCurrent"));
  IT_FN_FROM_PTR(drv.mem_alloc, it_sym(h, "cuMemAlloc_v2"));
  IT_FN_FROM_PTR(drv.mem_free, it_sym(h, "cuMemFree_v2"));
  IT_FN_FROM_PTR(drv.htod, it_sym(h, "cuMemcpyHtoD_v2"));
  IT_FN_FROM_PTR(drv.dtoh, it_sym(h, "cuMemcpyDtoH_v2"));
  IT_FN_FROM_PTR(drv.mem_get_info, it_sym(h, "cuMemGetInfo_v2"));
  /* a feature probe for a name the driver lacks stays NULL */
  IT_CHECK(dlsym(h, "cuMemAlloc_v9") == NULL, "dlsym of a missing name returned non-NULL");
}
#elif defined(IT_LOADER_PROCADDR)
static const char *const it_loader = "procaddr";
static PFN_cuGetProcAddress_v12000 it_gpa;

static void *it_lookup(const char *name, int version, cuuint64_t flags) {
  void *p = NULL;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = it_gpa(name, &p, version, flags, &status);
  IT_CHECK(r == CUDA_SUCCESS && p && status == CU_GET_PROC_ADDRESS_SUCCESS,
           "cuGetProcAddress(%s, %d, %llu): result %d, status %d, pointer %p", name, version,
           (unsigned long long)flags, (int)r, (int)status, p);
  return p;
}

static void it_load(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  IT_CHECK(h, "dlopen(libcuda.so.1): %s", dlerror());
  void *gpa = dlsym(h, "cuGetProcAddress_v2");
  IT_CHECK(gpa, "dlsym(libcuda, cuGetProcAddress_v2): %s", dlerror());
  IT_FN_FROM_PTR(it_gpa, gpa);

  /* The runtime's empty-name probe: NULL and SYMBOL_NOT_FOUND, with or without cudasnap. */
  void *p = (void *)&it_gpa;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult r = it_gpa("", &p, 0, 0, &status);
  IT_CHECK(p == NULL && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
           "empty-name probe: result %d, status %d, pointer %p", (int)r, (int)status, p);

  /* The self-query: every later lookup goes through what it returns. */
  IT_FN_FROM_PTR(it_gpa, it_lookup("cuGetProcAddress", 12000, CU_GET_PROC_ADDRESS_DEFAULT));

  /* Too old a version stays NULL, with the driver's status. */
  p = (void *)&it_gpa;
  r = it_gpa("cuMemAllocAsync", &p, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  IT_CHECK(r == CUDA_SUCCESS && p == NULL && status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
           "cuMemAllocAsync@11000: result %d, status %d, pointer %p", (int)r, (int)status, p);

  IT_FN_FROM_PTR(drv.init, it_lookup("cuInit", 2000, 0));
  IT_FN_FROM_PTR(drv.device_get, it_lookup("cuDeviceGet", 2000, 0));
  IT_FN_FROM_PTR(drv.primary_retain, it_lookup("cuDevicePrimaryCtxRetain", 7000, 0));
  IT_FN_FROM_PTR(drv.set_current, it_lookup("cuCtxSetCurrent", 4000, 0));
  IT_FN_FROM_PTR(drv.mem_alloc, it_lookup("cuMemAlloc", 3020, 0));
  IT_FN_FROM_PTR(drv.mem_free, it_lookup("cuMemFree", 3020, 0));
  IT_FN_FROM_PTR(drv.htod, it_lookup("cuMemcpyHtoD", 3020, 0));
  IT_FN_FROM_PTR(drv.dtoh, it_lookup("cuMemcpyDtoH", 3020, 0));
  IT_FN_FROM_PTR(drv.mem_get_info, it_lookup("cuMemGetInfo", 3020, 0));
}
#else
#error "define IT_LOADER_LINKED, IT_LOADER_DLSYM or IT_LOADER_PROCADDR"
#endif

static int it_alloc(uint64_t *dptr, size_t n) {
  CUdeviceptr p = 0;
  CUresult r = drv.mem_alloc(&p, n);
  *dptr = p;
  return (int)r;
}
static int it_free(uint64_t dptr) { return (int)drv.mem_free((CUdeviceptr)dptr); }
static int it_htod(uint64_t dst, const void *src, size_t n) { return (int)drv.htod((CUdeviceptr)dst, src, n); }
static int it_dtoh(void *dst, uint64_t src, size_t n) { return (int)drv.dtoh(dst, (CUdeviceptr)src, n); }

static const it_ops_t it_driver_ops = {it_alloc, it_free, it_htod, it_dtoh};

int main(int argc, char **argv) {
  uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000;
  unsigned slots = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 4;
  int preloaded = it_preloaded();

  it_load();
  CUdevice dev = -1;
  CUcontext ctx = NULL;
  IT_CHECK(drv.init(0) == CUDA_SUCCESS, "cuInit failed");
  IT_CHECK(drv.device_get(&dev, 0) == CUDA_SUCCESS, "cuDeviceGet failed");
  IT_CHECK(drv.primary_retain(&ctx, dev) == CUDA_SUCCESS, "cuDevicePrimaryCtxRetain failed");
  IT_CHECK(drv.set_current(ctx) == CUDA_SUCCESS, "cuCtxSetCurrent failed");

  fake_cuda_control_t fake = it_fake();
  fake_cuda_counters_t before = it_counters(&fake);

  it_workload_t w;
  it_workload_init(&w, &it_driver_ops, UINT64_C(0x5eed), slots);
  it_workload_run(&w, rounds);
  it_workload_finish(&w);

  fake_cuda_counters_t after = it_counters(&fake);
  it_check_cache(&before, &after, w.allocations, preloaded, 20);

  /* cuMemGetInfo works through whichever entry point the loader found. */
  size_t free_bytes = 0, total_bytes = 0;
  IT_CHECK(drv.mem_get_info(&free_bytes, &total_bytes) == CUDA_SUCCESS && free_bytes <= total_bytes &&
               total_bytes > 0,
           "cuMemGetInfo: free %zu, total %zu", free_bytes, total_bytes);

  fprintf(stderr, "loader %s: %" PRIu64 " allocations\n", it_loader, w.allocations);
  printf("checksum=%016" PRIx64 "\n", w.checksum);
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The hot path as a program sees it: cuMemAlloc_v2/cuMemFree_v2 pairs through the driver API,
 * linked with the fake libcuda.so.1 (tests/fakes). Run it with LD_PRELOAD=libcudasnap.so to time
 * cudasnap's cache (CUDASNAP_DUMP_ON=none, CUDASNAP_STACKS=none or native with
 * CUDASNAP_STACK_DEPTH), or without to time the fake driver alone (every pair reaches it: mmap and
 * munmap). bench/run.sh runs the configurations interleaved and takes medians.
 *
 *   bench_hotpath same|random64|ctxcalls PAIRS THREADS SAMPLES DEPTH
 *   bench_hotpath clock CALLS      ns per clock_gettime(CLOCK_MONOTONIC) on this machine
 *   bench_hotpath devices N PAIRS SAMPLES DEPTH
 *                                  one thread, the `same` pattern with each pair on the next of N
 *                                  devices' primary contexts, round-robin (a cuCtxSetCurrent before
 *                                  each pair, for every N; the fake driver needs FAKE_CUDA_DEVICES
 *                                  >= N): a pair's cost must not grow with N (issue 33)
 *
 * Prints the median ns per pair (bench_common.h). `ctxcalls` times what cudasnap asks of the
 * driver for one pair in the default free mode, cuCtxGetCurrent + cuCtxSynchronize, without the
 * preload: the share of the cudasnap figure that is the fake driver's.
 * BENCH_EXPECT_PRELOAD=0|1 makes a run with the wrong preload state fail instead of measuring the
 * wrong thing; with the preload, a run where the cache did not serve the pairs fails too. */
#include <cuda.h>
#include <dlfcn.h>

#include "bench/bench_common.h"
#include "tests/fakes/fake_cuda_control.h"

BENCH_DEFINE_DESCEND

static CUcontext bench_ctx;

static int bench_cu_alloc(uintptr_t *p, size_t n) {
  CUdeviceptr d = 0;
  CUresult r = cuMemAlloc_v2(&d, n);
  *p = (uintptr_t)d;
  return (int)r;
}

static int bench_cu_free(uintptr_t p) { return (int)cuMemFree_v2((CUdeviceptr)p); }

static const bench_ops_t bench_cu_ops = {bench_cu_alloc, bench_cu_free};

/* ctxcalls: the driver calls of one cached pair in sync mode */
static int bench_ctx_current(uintptr_t *p, size_t n) {
  (void)n;
  CUcontext c = NULL;
  CUresult r = cuCtxGetCurrent(&c);
  *p = (uintptr_t)c;
  return (int)r;
}

static int bench_ctx_sync(uintptr_t p) {
  (void)p;
  return (int)cuCtxSynchronize();
}

static const bench_ops_t bench_ctx_ops = {bench_ctx_current, bench_ctx_sync};

/* devices: the contexts the pairs go round, and the next one */
enum { BENCH_MAX_DEVICES = 16 };
static CUcontext bench_dev_ctx[BENCH_MAX_DEVICES];
static int bench_dev_count, bench_dev_next;

static int bench_dev_alloc(uintptr_t *p, size_t n) {
  CUresult r = cuCtxSetCurrent(bench_dev_ctx[bench_dev_next]);
  if (++bench_dev_next == bench_dev_count) bench_dev_next = 0;
  return r != CUDA_SUCCESS ? (int)r : bench_cu_alloc(p, n);
}

static const bench_ops_t bench_dev_ops = {bench_dev_alloc, bench_cu_free};

static void bench_set_context(void) {
  CUresult r = cuCtxSetCurrent(bench_ctx);
  if (r != CUDA_SUCCESS) bench_fail("cuCtxSetCurrent", (int)r);
}

/* ns per clock_gettime(CLOCK_MONOTONIC): cudasnap stamps every history entry with one, three per
 * pair, so this machine's clock cost is part of the figure. */
static int bench_clock(long calls) {
  struct timespec ts;
  double v[9];
  for (int r = 0; r < 9; r++) {
    double t0 = bench_now_ns();
    for (long i = 0; i < calls; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
    v[r] = (bench_now_ns() - t0) / (double)calls;
  }
  printf("%.2f\n", bench_median(v, 9));
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "clock") == 0) return bench_clock(atol(argv[2]) > 0 ? atol(argv[2]) : 1);
  bool ctxcalls = argc > 1 && strcmp(argv[1], "ctxcalls") == 0;
  bool devices = argc == 6 && strcmp(argv[1], "devices") == 0;
  char same[] = "same", one[] = "1";
  if (ctxcalls) argv[1] = same;
  if (devices) { /* devices N PAIRS SAMPLES DEPTH -> same PAIRS 1 SAMPLES DEPTH */
    bench_dev_count = atoi(argv[2]);
    if (bench_dev_count < 1 || bench_dev_count > BENCH_MAX_DEVICES) {
      fprintf(stderr, "bench: devices: N must be 1-%d\n", BENCH_MAX_DEVICES);
      return 2;
    }
    argv[1] = same, argv[2] = argv[3], argv[3] = one;
  }
  bench_config_t cfg = {.ops = ctxcalls ? &bench_ctx_ops : devices ? &bench_dev_ops : &bench_cu_ops,
                        .thread_setup = bench_set_context};
  if (bench_parse_args(argc, argv, &cfg) != 0) return 2;

  bool preloaded = dlsym(RTLD_DEFAULT, "cudasnap_memory_allocated") != NULL;
  const char *expect = getenv("BENCH_EXPECT_PRELOAD");
  if (expect && *expect && (expect[0] == '1') != preloaded) {
    fprintf(stderr, "bench: cudasnap is %spreloaded, expected otherwise\n", preloaded ? "" : "not ");
    return 1;
  }
  CUdevice dev;
  CUresult r = cuInit(0);
  if (r == CUDA_SUCCESS) r = cuDeviceGet(&dev, 0);
  if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&bench_ctx, dev);
  if (r != CUDA_SUCCESS) bench_fail("driver initialization", (int)r);
  for (int d = 0; d < bench_dev_count && r == CUDA_SUCCESS; d++) {
    r = cuDeviceGet(&dev, d);
    if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&bench_dev_ctx[d], dev);
  }
  if (r != CUDA_SUCCESS) bench_fail("devices (FAKE_CUDA_DEVICES?)", (int)r);
  bench_set_context();

  fake_cuda_counters_t before, after;
  fake_cuda_get_counters(&before);
  double ns = bench_run(&cfg);
  fake_cuda_get_counters(&after);

  uint64_t driver_allocs = after.mem_alloc - before.mem_alloc;
  uint64_t pairs = (uint64_t)cfg.pairs * (uint64_t)cfg.samples * (uint64_t)cfg.threads;
  if (!ctxcalls && preloaded && driver_allocs > pairs / 100) {
    fprintf(stderr, "bench: the driver saw %llu allocations for %llu pairs: the cache did not serve them\n",
            (unsigned long long)driver_allocs, (unsigned long long)pairs);
    return 1;
  }
  if (after.bytes_in_use != 0 && !preloaded) {
    fprintf(stderr, "bench: %zu bytes still allocated at the end\n", after.bytes_in_use);
    return 1;
  }
  printf("%.2f\n", ns);
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* A program whose device memory a test watches from outside through its live record (cudasnap
 * top and metrics). It reads commands from stdin, one a line, and prints "ready" after each:
 *   hold DEV MIB    allocate MIB MiB on device DEV in live_hold()
 *   other DEV MIB   the same in live_other(), a second site
 *   oom             ask for more than the device has (an OOM: ooms counts it)
 *   async_oom DEV   the same through cuMemAllocAsync on device DEV: stream-ordered memory, which
 *                   passes the cache by (a program that only allocates so still has its row)
 *   free            free everything held
 *   phase HEX       open an NVTX range named by the bytes HEX spells (any bytes: the tests name
 *                   one with escape sequences); "no nvtx" first when built without NVTX
 *   pop             close the innermost range
 * At the end of stdin it frees everything and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#ifdef LIVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include "tests/integration/it_driver.h"

enum { LIVE_MAX = 256 };
static CUdeviceptr live_ptr[LIVE_MAX];
static CUcontext live_ctx_of[LIVE_MAX];
static int live_count;

static CUcontext live_context(int device) {
  static CUcontext ctx[8];
  CUdevice dev;
  IT_CHECK(device >= 0 && device < 8, "device %d", device);
  if (!ctx[device]) {
    IT_CHECK(cuDeviceGet(&dev, device) == CUDA_SUCCESS, "no device %d", device);
    IT_CHECK(cuDevicePrimaryCtxRetain(&ctx[device], dev) == CUDA_SUCCESS, "no context on %d", device);
  }
  IT_CHECK(cuCtxSetCurrent(ctx[device]) == CUDA_SUCCESS, "cuCtxSetCurrent %d", device);
  return ctx[device];
}

static __attribute__((noinline)) void live_hold(int device, size_t bytes) {
  CUcontext ctx = live_context(device);
  IT_CHECK(live_count < LIVE_MAX, "too many blocks");
  IT_CHECK(cuMemAlloc(&live_ptr[live_count], bytes) == CUDA_SUCCESS, "cuMemAlloc %zu on %d", bytes, device);
  live_ctx_of[live_count++] = ctx;
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}

static __attribute__((noinline)) void live_other(int device, size_t bytes) {
  CUcontext ctx = live_context(device);
  IT_CHECK(live_count < LIVE_MAX, "too many blocks");
  IT_CHECK(cuMemAlloc(&live_ptr[live_count], bytes) == CUDA_SUCCESS, "cuMemAlloc %zu on %d", bytes, device);
  live_ctx_of[live_count++] = ctx;
  __asm__ volatile("" ::: "memory");
}

static void live_free_all(void) {
  for (int i = 0; i < live_count; i++) {
    IT_CHECK(cuCtxSetCurrent(live_ctx_of[i]) == CUDA_SUCCESS, "cuCtxSetCurrent");
    IT_CHECK(cuMemFree(live_ptr[i]) == CUDA_SUCCESS, "cuMemFree");
  }
  live_count = 0;
}

/* "phase HEX": the range's name from its hex digits. */
static void live_phase(const char *hex) {
  char name[256];
  size_t n = 0;
  unsigned byte;
  while (n < sizeof name - 1 && sscanf(hex + 2 * n, "%2x", &byte) == 1) name[n++] = (char)byte;
  name[n] = '\0';
#ifdef LIVE_NVTX
  nvtxRangePushA(name);
#else
  printf("no nvtx\n");
#endif
}

static void live_pop(void) {
#ifdef LIVE_NVTX
  nvtxRangePop();
#endif
}

int main(void) {
  IT_CHECK(cuInit(0) == CUDA_SUCCESS, "cuInit failed");
  (void)live_context(0);
  printf("ready\n");
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    char cmd[16];
    int device = 0;
    unsigned long mib = 0;
    int n = sscanf(line, "%15s %d %lu", cmd, &device, &mib);
    if (n >= 1 && strcmp(cmd, "phase") == 0) live_phase(line + strlen("phase "));
    else if (n >= 1 && strcmp(cmd, "pop") == 0) live_pop();
    else if (n == 3 && strcmp(cmd, "hold") == 0) live_hold(device, (size_t)mib << 20);
    else if (n == 3 && strcmp(cmd, "other") == 0) live_other(device, (size_t)mib << 20);
    else if (n >= 1 && strcmp(cmd, "oom") == 0) {
      CUdeviceptr p = 0;
      (void)live_context(0);
      IT_CHECK(cuMemAlloc(&p, (size_t)1 << 50) == CUDA_ERROR_OUT_OF_MEMORY, "no OOM for 1 PiB");
    } else if (n >= 2 && strcmp(cmd, "async_oom") == 0) {
      CUdeviceptr p = 0;
      (void)live_context(device);
      IT_CHECK(cuMemAllocAsync(&p, (size_t)1 << 50, NULL) == CUDA_ERROR_OUT_OF_MEMORY, "no OOM for 1 PiB");
    } else if (n >= 1 && strcmp(cmd, "free") == 0) live_free_all();
    else IT_FAIL("unknown command: %s", line);
    printf("ready\n");
    fflush(stdout);
  }
  live_free_all();
  return 0;
}

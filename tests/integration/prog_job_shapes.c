/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 33: two shapes of real jobs for the history kept in per-thread chunks (record/thread_log.h).
 *
 *   it_job_shapes devices N ROUNDS LOG   one thread allocates and frees round-robin over N
 *                                    devices, one primary context each (JAX, DataParallel, an
 *                                    inference server or a C++ engine driving N GPUs from one thread)
 *   it_job_shapes churn THREADS PAIRS LOG   THREADS short-lived threads, 10 alive at a time, each
 *                                    allocating once, freeing and exiting (a thread per request,
 *                                    pools made anew each epoch); then the main thread's PAIRS pairs
 *
 * Pair i of a thread allocates (i % 7 + 1) x 4 KiB (thread j of the churn: (j % 64 + 1) x 4 KiB),
 * so that a history with an entry missing or out of place differs. LOG gets one line per pair,
 * "<device> <m|t> <address> <bytes>", in the order of each thread's calls (m: the main thread, t:
 * a thread of the churn, whose pairs come in the order they were joined): what
 * threads_history_shapes.sh checks the exit snapshot's history against. */
#include <cuda.h>
#include <pthread.h>

#include "tests/integration/it_driver.h"

enum { IT_MAX_DEVICES = 16, IT_WAVE = 10 };

static CUcontext it_ctx;
static FILE *it_log;

static CUdeviceptr it_pair(size_t bytes) {
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAlloc(&p, bytes) == CUDA_SUCCESS, "cuMemAlloc of %zu bytes failed", bytes);
  IT_CHECK(cuMemFree(p) == CUDA_SUCCESS, "cuMemFree failed");
  return p;
}

static void it_log_pair(int device, char who, CUdeviceptr p, size_t bytes) {
  fprintf(it_log, "%d %c %llu %zu\n", device, who, (unsigned long long)p, bytes);
}

static size_t it_bytes(long i) { return (size_t)(i % 7 + 1) * 4 * IT_KIB; }

static int it_devices(int n, long rounds) {
  IT_CHECK(n >= 1 && n <= IT_MAX_DEVICES, "devices: 1-%d", IT_MAX_DEVICES);
  CUcontext ctx[IT_MAX_DEVICES];
  IT_CHECK(cuInit(0) == CUDA_SUCCESS, "cuInit failed");
  for (int d = 0; d < n; d++) {
    CUdevice dev;
    IT_CHECK(cuDeviceGet(&dev, d) == CUDA_SUCCESS, "no device %d (FAKE_CUDA_DEVICES?)", d);
    IT_CHECK(cuDevicePrimaryCtxRetain(&ctx[d], dev) == CUDA_SUCCESS, "no context on device %d", d);
  }
  for (long r = 0; r < rounds; r++) {
    for (int d = 0; d < n; d++) {
      IT_CHECK(cuCtxSetCurrent(ctx[d]) == CUDA_SUCCESS, "cuCtxSetCurrent %d", d);
      it_log_pair(d, 'm', it_pair(it_bytes(r)), it_bytes(r));
    }
  }
  return 0;
}

typedef struct it_churner_s {
  pthread_t tid;
  size_t bytes;
  CUdeviceptr got;
} it_churner_t;

static void *it_churn_thread(void *arg) {
  it_churner_t *c = arg;
  IT_CHECK(cuCtxSetCurrent(it_ctx) == CUDA_SUCCESS, "cuCtxSetCurrent failed");
  c->got = it_pair(c->bytes);
  return NULL;
}

static int it_churn(long threads, long pairs) {
  it_ctx = it_driver_context();
  it_churner_t c[IT_WAVE];
  for (long i = 0; i < threads; i += IT_WAVE) {
    int wave = threads - i < IT_WAVE ? (int)(threads - i) : IT_WAVE;
    for (int j = 0; j < wave; j++) {
      c[j].bytes = (size_t)((i + j) % 64 + 1) * 4 * IT_KIB;
      IT_CHECK(pthread_create(&c[j].tid, NULL, it_churn_thread, &c[j]) == 0, "pthread_create failed");
    }
    for (int j = 0; j < wave; j++) {
      pthread_join(c[j].tid, NULL);
      it_log_pair(0, 't', c[j].got, c[j].bytes);
    }
  }
  for (long i = 0; i < pairs; i++) it_log_pair(0, 'm', it_pair(it_bytes(i)), it_bytes(i));
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5) {
    it_log = fopen(argv[4], "w");
    IT_CHECK(it_log != NULL, "cannot write %s", argv[4]);
    int rc = 2;
    if (strcmp(argv[1], "devices") == 0) rc = it_devices(atoi(argv[2]), atol(argv[3]));
    else if (strcmp(argv[1], "churn") == 0) rc = it_churn(atol(argv[2]), atol(argv[3]));
    IT_CHECK(fclose(it_log) == 0, "cannot write %s", argv[4]);
    if (rc != 2) return rc;
  }
  fprintf(stderr, "usage: %s devices N ROUNDS LOG | churn THREADS PAIRS LOG\n", argv[0]);
  return 2;
}

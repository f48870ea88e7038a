/* The cost of an NVTX call as the program sees it (issue 19): nvtxRangePushA + nvtxRangePop,
 * nvtxMarkA, and a domain push/pop with a registered string, run with NVTX not injected (no tool:
 * NVTX's own no-op path) and with libcudasnap.so preloaded (cudasnap is the injection and records
 * a phase per call).
 *
 *   bench_nvtx push|mark|domain OPS SAMPLES THREADS
 *
 * Prints the median over SAMPLES of ns per operation (a push+pop pair counts as one operation, so
 * it holds two recorded annotations), each thread running OPS operations per sample at once; with
 * threads, ns = wall time of a sample / OPS (what each thread saw). No CUDA call is made: what is
 * measured is the NVTX path alone. BENCH_EXPECT_INJECTED=0/1 makes a run that lacks (or has) the
 * injection fail, so no figure is taken from the wrong configuration. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_common.h"

typedef enum op_e { OP_PUSH, OP_MARK, OP_DOMAIN } op_t;

static op_t op;
static long ops;
static nvtxDomainHandle_t domain;
static nvtxStringHandle_t registered;
static pthread_barrier_t start, done;

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
    }
  }
}

static void *worker(void *arg) {
  int samples = *(int *)arg;
  for (int s = 0; s < samples; s++) {
    pthread_barrier_wait(&start);
    run_ops();
    pthread_barrier_wait(&done);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s push|mark|domain OPS SAMPLES THREADS\n", argv[0]);
    return 2;
  }
  op = strcmp(argv[1], "mark") == 0 ? OP_MARK : strcmp(argv[1], "domain") == 0 ? OP_DOMAIN : OP_PUSH;
  ops = atol(argv[2]);
  int samples = atoi(argv[3]), threads = atoi(argv[4]);
  if (ops <= 0 || samples <= 0 || samples > BENCH_MAX_SAMPLES || threads <= 0 || threads > BENCH_MAX_THREADS) {
    fprintf(stderr, "bench_nvtx: bad arguments\n");
    return 2;
  }
  domain = nvtxDomainCreateA("bench");
  registered = nvtxDomainRegisterStringA(domain, "bench_backward");
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
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, &samples);
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

/* SPDX-License-Identifier: Apache-2.0 */
/* A program that says what it is doing through NVTX v3 (header-only), as trainers do:
 *
 *   phases  a mark and a range before the first CUDA call; three steps, each a default-domain
 *           range "snapbar_step" holding "snapbar_forward" (a wide-character name) and the
 *           "trainer" domain's registered-string range "backward", whose allocation grows with the
 *           step, so the peak is in the last step's backward; a start/end range opened here and
 *           ended on another thread, which has no CUDA context and pushes and marks on its own.
 *   none    the same allocations, with no NVTX call at all.
 *   threads a server's shape (issue 44): the main thread's range "serve" around four workers,
 *           each named (worker-0 and worker-1 with nvtxNameOsThreadA, worker-2 with
 *           pthread_setname_np, worker-3 with nvtxNameOsThreadW) and with its own nested ranges per
 *           request, "request" > "prefill" (even workers) or "decode" (odd ones), allocating
 *           (1 + worker) MiB + worker * 4 KiB inside them; in each of three rounds, while every
 *           worker holds its block, worker 3 opens "grow" and allocates (round + 1) * 8 MiB, so the
 *           peak is worker 3's last "grow". Workers start one after another (each has opened its
 *           first range before the next starts), so the threads' phases come in a known order.
 *           With IT_NVTX_THREADS=FILE, writes "main TID" and "worker I TID" lines there.
 *   live    for the live record's phase: thread a allocates inside "live_a", then thread b opens
 *           "live_b" and prints "ready 1"; after a line on stdin b allocates inside it ("ready 2");
 *           after another line both free and end.
 * In "phases", a pool also declares its sub-allocations through NVTX's memory API (a heap over one
 * cuMemAlloc, regions registered, named, resized and unregistered out of order, the heap reset and
 * unregistered), as Umpire does, and a second pool over a stream-ordered allocation (drawn as
 * memory passed through) lives until the first snapshot; plus three mistakes (a region over another, one outside the heap,
 * an unknown one unregistered) that cudasnap must report and ignore. With IT_NVTX_POOL_SNAPSHOT=P
 * under cudasnap it writes P-1.json after the resize and P-2.json after two regions are gone.
 * A second argument "bigger" doubles the backward allocations (for `cudasnap diff --phase`).
 *
 * Prints checksum=<hex> over the data read back (never over NVTX's return values, which differ
 * with and without a tool attached) and, for the checking script, the ring of what it did. */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/integration/it_driver.h"

static uint64_t checksum = UINT64_C(0xCBF29CE484222325);

static CUdeviceptr alloc_filled(size_t bytes, unsigned char value) {
  CUdeviceptr p = 0;
  IT_CHECK(cuMemAlloc(&p, bytes) == CUDA_SUCCESS, "cuMemAlloc(%zu) failed", bytes);
  unsigned char buf[256];
  memset(buf, value, sizeof buf);
  IT_CHECK(cuMemcpyHtoD(p, buf, sizeof buf) == CUDA_SUCCESS, "HtoD");
  return p;
}

static void fold(CUdeviceptr p) {
  unsigned char buf[256];
  IT_CHECK(cuMemcpyDtoH(buf, p, sizeof buf) == CUDA_SUCCESS, "DtoH");
  for (size_t i = 0; i < sizeof buf; i++) checksum = (checksum ^ buf[i]) * UINT64_C(0x100000001B3);
}

static void pause_ms(int ms) { usleep((useconds_t)ms * 1000u); }

typedef struct ender_s {
  nvtxRangeId_t io;
} ender_t;

/* Another thread, without a CUDA context: ends the range main started, and has its own. */
static void *ender(void *arg) {
  ender_t *e = arg;
  nvtxRangePushA("snapbar_loader");
  nvtxMarkA("snapbar_batch_ready");
  pause_ms(2);
  nvtxRangePop();
  nvtxRangeEnd(e->io);
  return NULL;
}

static void pool_snapshot(int n) {
  const char *prefix = getenv("IT_NVTX_POOL_SNAPSHOT");
  if (!prefix || !cudasnap_dump) return;
  char path[4096];
  snprintf(path, sizeof path, "%s-%d.json", prefix, n);
  IT_CHECK(cudasnap_dump(path) == 0, "cudasnap_dump(%s)", path);
}

static nvtxMemRegionRef_t region_ref(const void *p) {
  nvtxMemRegionRef_t r;
  memset(&r, 0, sizeof r);
  r.pointer = p;
  return r;
}

static nvtxMemHeapHandle_t heap_over(nvtxDomainHandle_t domain, CUdeviceptr base, size_t size) {
  nvtxMemVirtualRangeDesc_t heap_range = {.size = size, .ptr = (const void *)(uintptr_t)base};
  nvtxMemHeapDesc_t heap_desc;
  memset(&heap_desc, 0, sizeof heap_desc);
  heap_desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  heap_desc.structSize = sizeof heap_desc;
  heap_desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  heap_desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  heap_desc.typeSpecificDescSize = sizeof heap_range;
  heap_desc.typeSpecificDesc = &heap_range;
  return nvtxMemHeapRegister(domain, &heap_desc);
}

/* A pool over memory that bypasses the cache (a stream-ordered allocation), with one region:
 * drawn as the cache's are. Returns its base; stream_ordered_pool_end takes it down. */
static __attribute__((noinline)) CUdeviceptr stream_ordered_pool(nvtxDomainHandle_t domain,
                                                                 nvtxMemHeapHandle_t *heap) {
  CUdeviceptr base = 0;
  IT_CHECK(cuMemAllocAsync(&base, 4 * IT_MIB, NULL) == CUDA_SUCCESS, "cuMemAllocAsync");
  IT_CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS, "sync");
  *heap = heap_over(domain, base, 4 * IT_MIB);
  nvtxMemVirtualRangeDesc_t region = {.size = IT_MIB, .ptr = (const void *)(uintptr_t)(base + IT_MIB)};
  nvtxMemRegionHandle_t handle = 0;
  nvtxMemRegionsRegisterBatch_t reg;
  memset(&reg, 0, sizeof reg);
  reg.extCompatID = NVTX_EXT_COMPATID_MEM;
  reg.structSize = sizeof reg;
  reg.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  reg.heap = *heap;
  reg.regionCount = 1;
  reg.regionDescElementSize = sizeof region;
  reg.regionDescElements = &region;
  reg.regionHandleElementsOut = &handle;
  nvtxMemRegionsRegister(domain, &reg);
  return base;
}

static void stream_ordered_pool_end(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap, CUdeviceptr base) {
  nvtxMemHeapUnregister(domain, heap);
  IT_CHECK(cuMemFreeAsync(base, NULL) == CUDA_SUCCESS && cuStreamSynchronize(NULL) == CUDA_SUCCESS,
           "cuMemFreeAsync");
}

/* A pool whose regions are declared through NVTX (the calls Umpire makes). */
static __attribute__((noinline)) void pool_with_regions(nvtxDomainHandle_t domain) {
  CUdeviceptr base = alloc_filled(8 * IT_MIB, 42);
  nvtxMemHeapHandle_t heap = heap_over(domain, base, 8 * IT_MIB);
  nvtxMemVirtualRangeDesc_t regions[3] = {
      {.size = IT_MIB, .ptr = (const void *)(uintptr_t)base},
      {.size = 2 * IT_MIB, .ptr = (const void *)(uintptr_t)(base + IT_MIB)},
      {.size = 4 * IT_MIB, .ptr = (const void *)(uintptr_t)(base + 4 * IT_MIB)},
  };
  nvtxMemRegionHandle_t handles[3] = {0};
  nvtxMemRegionsRegisterBatch_t reg;
  memset(&reg, 0, sizeof reg);
  reg.extCompatID = NVTX_EXT_COMPATID_MEM;
  reg.structSize = sizeof reg;
  reg.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  reg.heap = heap;
  reg.regionCount = 3;
  reg.regionDescElementSize = sizeof regions[0];
  reg.regionDescElements = regions;
  reg.regionHandleElementsOut = handles;
  nvtxMemRegionsRegister(domain, &reg);
  nvtxMemRegionNameDesc_t name;
  memset(&name, 0, sizeof name);
  name.regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER;
  name.nameType = NVTX_MESSAGE_TYPE_ASCII;
  name.region = region_ref(regions[2].ptr);
  name.name.ascii = "kv_cache";
  nvtxMemRegionsNameBatch_t names;
  memset(&names, 0, sizeof names);
  names.extCompatID = NVTX_EXT_COMPATID_MEM;
  names.structSize = sizeof names;
  names.regionCount = 1;
  names.regionElementSize = sizeof name;
  names.regionElements = &name;
  nvtxMemRegionsName(domain, &names);
  nvtxMemVirtualRangeDesc_t grown = {.size = 3 * IT_MIB, .ptr = regions[1].ptr};
  nvtxMemRegionsResizeBatch_t resize;
  memset(&resize, 0, sizeof resize);
  resize.extCompatID = NVTX_EXT_COMPATID_MEM;
  resize.structSize = sizeof resize;
  resize.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  resize.regionDescCount = 1;
  resize.regionDescElementSize = sizeof grown;
  resize.regionDescElements = &grown;
  nvtxMemRegionsResize(domain, &resize);
  /* mistakes: over region 0, outside the heap */
  nvtxMemVirtualRangeDesc_t bad[2] = {
      {.size = IT_MIB, .ptr = (const void *)(uintptr_t)(base + IT_MIB / 2)},
      {.size = IT_MIB, .ptr = (const void *)(uintptr_t)(base + 8 * IT_MIB)},
  };
  reg.regionCount = 2;
  reg.regionDescElements = bad;
  nvtxMemRegionsRegister(domain, &reg);
  nvtxMemHeapHandle_t async_heap = NULL;
  CUdeviceptr async_base = stream_ordered_pool(domain, &async_heap);
  pool_snapshot(1);
  stream_ordered_pool_end(domain, async_heap, async_base);
  nvtxMemRegionRef_t refs[2] = {region_ref(regions[1].ptr), region_ref(regions[0].ptr)}; /* out of order */
  nvtxMemRegionsUnregisterBatch_t unreg;
  memset(&unreg, 0, sizeof unreg);
  unreg.extCompatID = NVTX_EXT_COMPATID_MEM;
  unreg.structSize = sizeof unreg;
  unreg.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
  unreg.refCount = 2;
  unreg.refElementSize = sizeof refs[0];
  unreg.refElements = refs;
  nvtxMemRegionsUnregister(domain, &unreg);
  nvtxMemRegionRef_t unknown = region_ref((const void *)(uintptr_t)(base + 3)); /* mistake: no such region */
  unreg.refCount = 1;
  unreg.refElements = &unknown;
  nvtxMemRegionsUnregister(domain, &unreg);
  pool_snapshot(2);
  nvtxMemHeapReset(domain, heap);
  nvtxMemHeapUnregister(domain, heap);
  fold(base);
  IT_CHECK(cuMemFree(base) == CUDA_SUCCESS, "free pool");
}

/* ---- threads: a server's shape ------------------------------------------------------------ */

enum { IT_WORKERS = 4, IT_ROUNDS = 3 };

typedef struct worker_s {
  int index;
  CUcontext ctx;
  pthread_barrier_t *held, *grown, *done;
  pthread_mutex_t *lock;
  pthread_cond_t *started_cond;
  int *started;
  pid_t tid;
  uint64_t sum; /* its own checksum: threads fold in any order */
} worker_t;

static uint64_t fold_into(uint64_t sum, CUdeviceptr p) {
  unsigned char buf[256];
  IT_CHECK(cuMemcpyDtoH(buf, p, sizeof buf) == CUDA_SUCCESS, "DtoH");
  for (size_t i = 0; i < sizeof buf; i++) sum = (sum ^ buf[i]) * UINT64_C(0x100000001B3);
  return sum;
}

static void *worker(void *arg) {
  worker_t *w = arg;
  w->tid = (pid_t)syscall(SYS_gettid);
  w->sum = UINT64_C(0xCBF29CE484222325);
  IT_CHECK(cuCtxSetCurrent(w->ctx) == CUDA_SUCCESS, "cuCtxSetCurrent");
  char name[16];
  snprintf(name, sizeof name, "worker-%d", w->index);
  if (w->index < 2) nvtxNameOsThreadA((uint32_t)w->tid, name);
  else if (w->index == 2) pthread_setname_np(pthread_self(), name);
  else nvtxNameOsThreadW((uint32_t)w->tid, L"worker-3");
  const char *stage = w->index % 2 ? "decode" : "prefill";
  size_t bytes = (size_t)(1 + w->index) * IT_MIB + (size_t)w->index * 4096;
  for (int round = 0; round < IT_ROUNDS; round++) {
    nvtxRangePushA("request");
    if (round == 0) { /* the next worker may start: this one's phases come first */
      pthread_mutex_lock(w->lock);
      *w->started = w->index + 1;
      pthread_cond_broadcast(w->started_cond);
      pthread_mutex_unlock(w->lock);
    }
    nvtxRangePushA(stage);
    CUdeviceptr p = alloc_filled(bytes, (unsigned char)(w->index * 16 + round));
    pthread_barrier_wait(w->held); /* every worker holds its block */
    if (w->index == 3) {
      nvtxRangePushA("grow");
      CUdeviceptr big = alloc_filled((size_t)(round + 1) * 8 * IT_MIB, (unsigned char)(100 + round));
      w->sum = fold_into(w->sum, big);
      IT_CHECK(cuMemFree(big) == CUDA_SUCCESS, "free big");
      nvtxRangePop();
    }
    pthread_barrier_wait(w->grown);
    w->sum = fold_into(w->sum, p);
    IT_CHECK(cuMemFree(p) == CUDA_SUCCESS, "free");
    nvtxRangePop();
    nvtxRangePop();
    pthread_barrier_wait(w->done);
  }
  return NULL;
}

static void run_threads(void) {
  CUcontext ctx = it_driver_context();
  nvtxRangePushA("serve");
  pthread_barrier_t held, grown, done;
  pthread_barrier_init(&held, NULL, IT_WORKERS);
  pthread_barrier_init(&grown, NULL, IT_WORKERS);
  pthread_barrier_init(&done, NULL, IT_WORKERS);
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t started_cond = PTHREAD_COND_INITIALIZER;
  int started = 0;
  worker_t w[IT_WORKERS];
  pthread_t t[IT_WORKERS];
  for (int i = 0; i < IT_WORKERS; i++) {
    w[i] = (worker_t){.index = i, .ctx = ctx, .held = &held, .grown = &grown, .done = &done, .lock = &lock,
                      .started_cond = &started_cond, .started = &started};
    IT_CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0, "pthread_create");
    pthread_mutex_lock(&lock);
    while (started < i + 1) pthread_cond_wait(&started_cond, &lock);
    pthread_mutex_unlock(&lock);
  }
  for (int i = 0; i < IT_WORKERS; i++) pthread_join(t[i], NULL);
  nvtxRangePop();
  for (int i = 0; i < IT_WORKERS; i++) checksum = (checksum ^ w[i].sum) * UINT64_C(0x100000001B3);
  const char *path = getenv("IT_NVTX_THREADS");
  if (path) {
    FILE *f = fopen(path, "w");
    IT_CHECK(f != NULL, "cannot write %s", path);
    fprintf(f, "main %ld\n", (long)syscall(SYS_gettid));
    for (int i = 0; i < IT_WORKERS; i++) fprintf(f, "worker %d %ld\n", i, (long)w[i].tid);
    fclose(f);
  }
  printf("checksum=%016llx\n", (unsigned long long)checksum);
}

/* ---- live: the phase of the thread that allocated last ---------------------------------------- */

typedef struct live_s {
  CUcontext ctx;
  sem_t a_holds, b_opened, b_go, b_holds, end;
} live_t;

static void *live_a(void *arg) {
  live_t *l = arg;
  IT_CHECK(cuCtxSetCurrent(l->ctx) == CUDA_SUCCESS, "cuCtxSetCurrent");
  nvtxRangePushA("live_a");
  CUdeviceptr p = alloc_filled(IT_MIB, 1);
  sem_post(&l->a_holds);
  sem_wait(&l->end);
  fold(p);
  IT_CHECK(cuMemFree(p) == CUDA_SUCCESS, "free");
  nvtxRangePop();
  return NULL;
}

static void *live_b(void *arg) {
  live_t *l = arg;
  IT_CHECK(cuCtxSetCurrent(l->ctx) == CUDA_SUCCESS, "cuCtxSetCurrent");
  sem_wait(&l->a_holds);
  nvtxRangePushA("live_b"); /* opened after a's allocation, but nothing allocated in it yet */
  sem_post(&l->b_opened);
  sem_wait(&l->b_go);
  CUdeviceptr p = alloc_filled(2 * IT_MIB, 2);
  sem_post(&l->b_holds);
  sem_wait(&l->end);
  IT_CHECK(cuMemFree(p) == CUDA_SUCCESS, "free");
  nvtxRangePop();
  return NULL;
}

/* Thread a allocates inside "live_a"; then thread b opens "live_b" without allocating: "ready 1",
 * and a line on stdin; b allocates: "ready 2", and a line; both free and end. */
static void run_live(void) {
  live_t l = {.ctx = it_driver_context()};
  sem_init(&l.a_holds, 0, 0);
  sem_init(&l.b_opened, 0, 0);
  sem_init(&l.b_go, 0, 0);
  sem_init(&l.b_holds, 0, 0);
  sem_init(&l.end, 0, 0);
  pthread_t a, b;
  IT_CHECK(pthread_create(&a, NULL, live_a, &l) == 0 && pthread_create(&b, NULL, live_b, &l) == 0, "pthread_create");
  char line[64];
  sem_wait(&l.b_opened);
  printf("ready 1\n");
  fflush(stdout);
  IT_CHECK(fgets(line, sizeof line, stdin) != NULL, "stdin");
  sem_post(&l.b_go);
  sem_wait(&l.b_holds);
  printf("ready 2\n");
  fflush(stdout);
  IT_CHECK(fgets(line, sizeof line, stdin) != NULL, "stdin");
  sem_post(&l.end);
  sem_post(&l.end);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("checksum=%016llx\n", (unsigned long long)checksum);
}

int main(int argc, char **argv) {
  IT_CHECK((argc == 2 || (argc == 3 && strcmp(argv[2], "bigger") == 0)) &&
               (strcmp(argv[1], "phases") == 0 || strcmp(argv[1], "none") == 0 || strcmp(argv[1], "threads") == 0 ||
                strcmp(argv[1], "live") == 0),
           "usage: %s phases|none|threads|live [bigger]", argv[0]);
  if (strcmp(argv[1], "threads") == 0 || strcmp(argv[1], "live") == 0) {
    (void)it_preloaded();
    if (argv[1][0] == 't') run_threads();
    else run_live();
    return 0;
  }
  size_t grad_unit = (argc == 3 ? 16 : 8) * IT_MIB;
  bool nvtx = strcmp(argv[1], "phases") == 0;
  (void)it_preloaded();
  if (nvtx) {
    nvtxMarkA("snapbar_start"); /* before any CUDA call */
    nvtxRangePushA("snapbar_setup");
  }
  (void)it_driver_context();
  CUdeviceptr weights = alloc_filled(2 * IT_MIB, 7);
  nvtxDomainHandle_t trainer = NULL;
  nvtxStringHandle_t backward = NULL;
  nvtxRangeId_t io = 0;
  if (nvtx) {
    nvtxRangePop();
    trainer = nvtxDomainCreateA("trainer");
    backward = nvtxDomainRegisterStringA(trainer, "backward");
    io = nvtxRangeStartA("snapbar_io");
  }
  pthread_t thread;
  ender_t e = {.io = io};
  if (nvtx) IT_CHECK(pthread_create(&thread, NULL, ender, &e) == 0, "pthread_create");
  for (int step = 0; step < 3; step++) {
    if (nvtx) nvtxRangePushA("snapbar_step");
    pause_ms(2);
    if (nvtx) nvtxRangePushW(L"snapbar_forward");
    CUdeviceptr act = alloc_filled(4 * IT_MIB, (unsigned char)(step + 1));
    pause_ms(2);
    if (nvtx) nvtxRangePop();
    if (nvtx) {
      nvtxEventAttributes_t a;
      memset(&a, 0, sizeof a);
      a.version = NVTX_VERSION;
      a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
      a.category = 3; /* ignored */
      a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
      a.message.registered = backward;
      nvtxDomainRangePushEx(trainer, &a);
    }
    pause_ms(2);
    CUdeviceptr grad = alloc_filled((size_t)(step + 1) * grad_unit, (unsigned char)(step + 11));
    pause_ms(2);
    fold(grad);
    fold(act);
    IT_CHECK(cuMemFree(grad) == CUDA_SUCCESS && cuMemFree(act) == CUDA_SUCCESS, "free");
    pause_ms(2);
    if (nvtx) nvtxDomainRangePop(trainer);
    if (nvtx && step == 0) pthread_join(thread, NULL); /* its ranges stay inside the first step */
    if (nvtx) nvtxRangePop();
    pause_ms(2);
  }
  if (nvtx) pool_with_regions(trainer);
  if (nvtx) {
    nvtxMarkW(L"snapbar_done\u00e9");
  }
  fold(weights);
  IT_CHECK(cuMemFree(weights) == CUDA_SUCCESS, "free weights");
  printf("checksum=%016llx\n", (unsigned long long)checksum);
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 44, item 2: a free is recorded before its address can be handed out again. A driver frees,
 * then answers; another thread may be handed the address in between. The fake driver's free hook
 * stops the freeing thread there (after the free, before the answer) while a second thread is
 * handed the address, every round, so what is a rare race in a server happens each time here.
 *
 *   it_free_order async   cuMemFreeAsync of stream-ordered memory; the other thread's
 *                         cuMemAllocAsync gets the address
 *   it_free_order cache   the same free; the other thread's cuMemAlloc makes the cache take a new
 *                         segment there
 *   it_free_order vmm     cuMemUnmap; the other thread maps another handle at the address
 *
 * Prints how many rounds the address was handed out again (the fake driver's mmap decides; vmm
 * always). Run under cudasnap with an exit snapshot, which free_order.sh checks: clean for
 * `cudasnap check`, never two live allocations at one address, and what is live at the end is
 * the program's. */
#include <cuda.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "tests/integration/it_driver.h"

enum { ROUNDS = 24 };
#define IT_BYTES (4 * IT_MIB)

static CUcontext it_ctx;
static const char *it_scenario;
static pthread_t it_freeing_thread;
static _Atomic uintptr_t it_armed; /* the address whose free stops in the hook */
static sem_t it_go, it_done;
static CUdeviceptr it_got;            /* what the other thread was handed */
static CUstream it_streams[2];
static CUdeviceptr it_reserved;       /* vmm: the range mapped and unmapped */
static CUmemGenericAllocationHandle it_handles[2];

static void it_map(CUdeviceptr at, CUmemGenericAllocationHandle h) {
  IT_CHECK(cuMemMap(at, IT_BYTES, 0, h, 0) == CUDA_SUCCESS, "cuMemMap");
  CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  IT_CHECK(cuMemSetAccess(at, IT_BYTES, &access, 1) == CUDA_SUCCESS, "cuMemSetAccess");
}

/* The other thread: handed memory each time the freeing thread stops in the driver. */
static void *it_other(void *arg) {
  (void)arg;
  IT_CHECK(cuCtxSetCurrent(it_ctx) == CUDA_SUCCESS, "cuCtxSetCurrent");
  for (int round = 0; round < ROUNDS; round++) {
    sem_wait(&it_go);
    it_got = 0;
    if (strcmp(it_scenario, "async") == 0) {
      IT_CHECK(cuMemAllocAsync(&it_got, IT_BYTES, it_streams[1]) == CUDA_SUCCESS, "cuMemAllocAsync");
    } else if (strcmp(it_scenario, "cache") == 0) {
      it_got = it_alloc_ok(IT_BYTES);
    } else {
      it_map(it_reserved, it_handles[1]);
      it_got = it_reserved;
    }
    sem_post(&it_done);
  }
  return NULL;
}

/* In the driver, after it freed `address` and before it answers. */
static void it_free_hook(uintptr_t address) {
  if (!pthread_equal(pthread_self(), it_freeing_thread) || address != atomic_load(&it_armed)) return;
  sem_post(&it_go);
  sem_wait(&it_done);
}

/* The other thread's memory goes, unhooked, so the next round starts as this one did. */
static void it_release_other(void) {
  if (strcmp(it_scenario, "async") == 0) {
    IT_CHECK(cuMemFreeAsync(it_got, it_streams[1]) == CUDA_SUCCESS, "cuMemFreeAsync (other)");
    IT_CHECK(cuStreamSynchronize(it_streams[1]) == CUDA_SUCCESS, "cuStreamSynchronize");
  } else if (strcmp(it_scenario, "cache") == 0) {
    it_free_ok(it_got);
    /* a new segment next round */
    if (cudasnap_empty_cache) IT_CHECK(cudasnap_empty_cache(0) == 0, "cudasnap_empty_cache");
  } else {
    IT_CHECK(cuMemUnmap(it_reserved, IT_BYTES) == CUDA_SUCCESS, "cuMemUnmap (other)");
  }
}

int main(int argc, char **argv) {
  IT_CHECK(argc == 2, "usage: it_free_order async|cache|vmm");
  it_scenario = argv[1];
  IT_CHECK(strcmp(it_scenario, "async") == 0 || strcmp(it_scenario, "cache") == 0 || strcmp(it_scenario, "vmm") == 0,
           "unknown scenario %s", it_scenario);
  (void)it_preloaded();
  it_ctx = it_driver_context();
  for (int i = 0; i < 2; i++)
    IT_CHECK(cuStreamCreate(&it_streams[i], CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "cuStreamCreate");
  bool vmm = strcmp(it_scenario, "vmm") == 0;
  if (vmm) {
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    IT_CHECK(cuMemAddressReserve(&it_reserved, IT_BYTES, 0, 0, 0) == CUDA_SUCCESS, "cuMemAddressReserve");
    for (int i = 0; i < 2; i++)
      IT_CHECK(cuMemCreate(&it_handles[i], IT_BYTES, &prop, 0) == CUDA_SUCCESS, "cuMemCreate");
  }
  sem_init(&it_go, 0, 0);
  sem_init(&it_done, 0, 0);
  it_freeing_thread = pthread_self();
  fake_cuda_set_free_hook(it_free_hook);
  pthread_t other;
  IT_CHECK(pthread_create(&other, NULL, it_other, NULL) == 0, "pthread_create");
  int reused = 0;
  for (int round = 0; round < ROUNDS; round++) {
    CUdeviceptr mine = 0;
    if (vmm) {
      it_map(it_reserved, it_handles[0]);
      mine = it_reserved;
    } else {
      IT_CHECK(cuMemAllocAsync(&mine, IT_BYTES, it_streams[0]) == CUDA_SUCCESS, "cuMemAllocAsync");
      IT_CHECK(cuStreamSynchronize(it_streams[0]) == CUDA_SUCCESS, "cuStreamSynchronize");
    }
    atomic_store(&it_armed, mine);
    CUresult r = vmm ? cuMemUnmap(mine, IT_BYTES) : cuMemFreeAsync(mine, it_streams[0]);
    IT_CHECK(r == CUDA_SUCCESS, "the hooked free: error %d", (int)r);
    atomic_store(&it_armed, 0);
    reused += it_got == mine;
    if (round + 1 < ROUNDS) it_release_other(); /* the last round's stays live to the end */
  }
  pthread_join(other, NULL);
  fake_cuda_set_free_hook(NULL);
  printf("%s: the address was handed out again in %d of %d rounds\n", it_scenario, reused, ROUNDS);
  IT_CHECK(reused > 0, "the fake driver never handed the freed address out again: nothing was tested");
  return 0;
}

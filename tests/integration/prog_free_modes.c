/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #3 test 3: the free modes against the fake driver's controllable events and sticky
 * errors, through the driver API, with cudasnap preloaded and CUDASNAP_FREE set to the mode named
 * on the command line (the program checks behaviour, which is how the mode shows).
 *
 *   it_free_modes fence    a freed block is not reused while its events are pending; it is once they
 *                          complete, and when the device is full (after a synchronization)
 *   it_free_modes sync     a free synchronizes and the block is reused at once; a sticky error is
 *                          returned by cuMemFree_v2 of a live block; allocation works after it clears
 *   it_free_modes stream   reuse at once, with no synchronization and no event */
#include <cuda.h>

#include "tests/integration/it_driver.h"

/* The block still works: write a pattern and read it back. */
static void it_use(CUdeviceptr p, size_t n, unsigned char seed) {
  static unsigned char in[8192], out[8192];
  size_t k = n < sizeof in ? n : sizeof in;
  for (size_t i = 0; i < k; i++) in[i] = (unsigned char)(seed + i * 31);
  IT_CHECK(cuMemcpyHtoD(p, in, k) == CUDA_SUCCESS, "cuMemcpyHtoD failed");
  IT_CHECK(cuMemcpyDtoH(out, p, k) == CUDA_SUCCESS, "cuMemcpyDtoH failed");
  IT_CHECK(memcmp(in, out, k) == 0, "data mismatch");
}

static int it_overlaps(CUdeviceptr a, CUdeviceptr b, size_t n) { return a < b + n && b < a + n; }

int main(int argc, char **argv) {
  IT_CHECK(argc == 2, "usage: it_free_modes fence|sync|stream");
  const char *mode = argv[1];
  const char *env = getenv("CUDASNAP_FREE");
  IT_CHECK(env && strcmp(env, mode) == 0, "run with CUDASNAP_FREE=%s", mode);
  IT_CHECK(it_preloaded(), "this test needs cudasnap preloaded");

  (void)it_driver_context();
  fake_cuda_control_t fake = it_fake();
  const size_t n = IT_MIB;

  if (strcmp(mode, "fence") == 0) {
    fake.set_manual_events(1);
    CUdeviceptr a = it_alloc_ok(n);
    it_use(a, n, 1);
    fake_cuda_counters_t c0 = it_counters(&fake);
    it_free_ok(a);
    fake_cuda_counters_t c1 = it_counters(&fake);
    IT_CHECK(c1.event_record > c0.event_record, "fence mode recorded no event at the free");
    IT_CHECK(c1.ctx_synchronize == c0.ctx_synchronize, "fence mode synchronized at the free");
    CUdeviceptr b = it_alloc_ok(n);
    IT_CHECK(!it_overlaps(a, b, n), "fence mode reused block 0x%llx while its events were pending (got 0x%llx)",
             (unsigned long long)a, (unsigned long long)b);
    it_use(b, n, 2);
    fake.complete_events();
    CUdeviceptr c = it_alloc_ok(n);
    IT_CHECK(c == a, "fence mode did not reuse 0x%llx once its events completed (got 0x%llx)",
             (unsigned long long)a, (unsigned long long)c);
    it_use(c, n, 3);
    it_free_ok(b);
    it_free_ok(c);
    fake.complete_events();

    /* When the device is full, pending frees are waited for (a synchronization completes their
     * events) and their memory serves the request instead of an out-of-memory error. */
    CUdeviceptr x = it_alloc_ok(40 * IT_MIB);
    fake.set_capacity(it_counters(&fake).bytes_in_use + 16 * IT_MIB);
    it_free_ok(x);
    int64_t waits = it_stat(0, "num_sync_all_streams");
    CUdeviceptr y = 0;
    CUresult r = cuMemAlloc(&y, 40 * IT_MIB);
    IT_CHECK(r == CUDA_SUCCESS, "40 MiB with the device full and a 40 MiB block pending: error %d", (int)r);
    IT_CHECK(it_stat(0, "num_sync_all_streams") > waits, "the allocation succeeded without waiting for the pending free");
    it_use(y, 40 * IT_MIB, 4);
    it_free_ok(y);
    fake.set_capacity((size_t)8 << 30);
    fake.complete_events();
  } else if (strcmp(mode, "sync") == 0) {
    CUdeviceptr a = it_alloc_ok(n);
    it_use(a, n, 1);
    fake_cuda_counters_t c0 = it_counters(&fake);
    it_free_ok(a);
    fake_cuda_counters_t c1 = it_counters(&fake);
    IT_CHECK(c1.ctx_synchronize > c0.ctx_synchronize, "sync mode did not synchronize at the free");
    CUdeviceptr b = it_alloc_ok(n);
    IT_CHECK(b == a, "sync mode did not reuse the freed block at once (0x%llx, then 0x%llx)",
             (unsigned long long)a, (unsigned long long)b);
    it_use(b, n, 2);

    fake.set_sticky_error(CUDA_ERROR_LAUNCH_FAILED);
    CUresult r = cuMemFree(b);
    IT_CHECK(r == CUDA_ERROR_LAUNCH_FAILED, "cuMemFree_v2 with a sticky error returned %d, expected %d", (int)r,
             (int)CUDA_ERROR_LAUNCH_FAILED);
    fake.set_sticky_error(0);
    CUdeviceptr c = it_alloc_ok(n);
    it_use(c, n, 3);
    it_free_ok(c);
    IT_CHECK(cudasnap_memory_allocated(0) == 0, "%" PRId64 " bytes still allocated",
             cudasnap_memory_allocated(0));
  } else if (strcmp(mode, "stream") == 0) {
    fake.set_manual_events(1); /* nothing may wait for them */
    CUdeviceptr a = it_alloc_ok(n);
    it_use(a, n, 1);
    fake_cuda_counters_t c0 = it_counters(&fake);
    it_free_ok(a);
    CUdeviceptr b = it_alloc_ok(n);
    fake_cuda_counters_t c1 = it_counters(&fake);
    IT_CHECK(b == a, "stream mode did not reuse the freed block at once (0x%llx, then 0x%llx)",
             (unsigned long long)a, (unsigned long long)b);
    IT_CHECK(c1.ctx_synchronize == c0.ctx_synchronize && c1.event_record == c0.event_record,
             "stream mode synchronized (%" PRIu64 ") or recorded events (%" PRIu64 ") at free and reuse",
             c1.ctx_synchronize - c0.ctx_synchronize, c1.event_record - c0.event_record);
    it_use(b, n, 2);
    it_free_ok(b);
  } else {
    IT_FAIL("unknown mode %s", mode);
  }
  printf("free mode %s ok\n", mode);
  return 0;
}

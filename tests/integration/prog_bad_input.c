/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #3 test 6: bad input gets the driver's own answer, with and without cudasnap.
 *   - cuMemFree_v2 of an address never allocated: CUDA_ERROR_INVALID_VALUE
 *   - cuMemFree_v2 of a pointer inside a live block: CUDA_ERROR_INVALID_VALUE, block still live
 *   - freeing a block twice: CUDA_ERROR_INVALID_VALUE the second time, and the cache is not
 *     corrupted (later allocations are distinct and usable; the driver's bytes_in_use unchanged by
 *     the bad free)
 *   - cuMemFree_v2(0): CUDA_SUCCESS
 *   - cuMemAlloc_v2(NULL, n) and cuMemAlloc_v2(&p, 0): CUDA_ERROR_INVALID_VALUE
 * Prints the sequence of results as checksum=<hex>; the runner compares both runs. */
#include <cuda.h>

#include "tests/integration/it_driver.h"

static uint64_t sum = UINT64_C(0xCBF29CE484222325);

static CUresult it_expect(CUresult got, CUresult want, const char *what) {
  IT_CHECK(got == want, "%s returned %d, expected %d", what, (int)got, (int)want);
  it_fold(&sum, (const unsigned char *)&got, sizeof got);
  return got;
}

static void it_use(CUdeviceptr p, size_t n, unsigned char seed) {
  static unsigned char in[4096], out[4096];
  size_t k = n < sizeof in ? n : sizeof in;
  for (size_t i = 0; i < k; i++) in[i] = (unsigned char)(seed ^ (i * 13));
  it_expect(cuMemcpyHtoD(p, in, k), CUDA_SUCCESS, "cuMemcpyHtoD");
  it_expect(cuMemcpyDtoH(out, p, k), CUDA_SUCCESS, "cuMemcpyDtoH");
  IT_CHECK(memcmp(in, out, k) == 0, "data mismatch in a block of %zu bytes", n);
  it_fold(&sum, out, k);
}

int main(void) {
  it_preloaded();
  (void)it_driver_context();
  fake_cuda_control_t fake = it_fake();

  it_expect(cuMemFree(0), CUDA_SUCCESS, "cuMemFree_v2(0)");
  it_expect(cuMemAlloc(NULL, 4096), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc_v2(NULL, 4096)");
  CUdeviceptr z = 0;
  it_expect(cuMemAlloc(&z, 0), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc_v2(&p, 0)");

  /* An address nobody allocated (a host address is a safe "never allocated" device address). */
  static char never[64];
  it_expect(cuMemFree((CUdeviceptr)(uintptr_t)never), CUDA_ERROR_INVALID_VALUE, "cuMemFree_v2(never allocated)");

  /* Small and large blocks: a small one shares a segment, a large one has its own. */
  static const size_t sizes[] = {4096, 3 * IT_MIB};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    CUdeviceptr a = 0, keep = 0;
    it_expect(cuMemAlloc(&keep, n), CUDA_SUCCESS, "cuMemAlloc_v2(keep)");
    it_expect(cuMemAlloc(&a, n), CUDA_SUCCESS, "cuMemAlloc_v2(a)");
    it_use(keep, n, 1);
    it_use(a, n, 2);

    it_expect(cuMemFree(a + 512), CUDA_ERROR_INVALID_VALUE, "cuMemFree_v2(inside a live block)");
    it_use(a, n, 3); /* still live and intact */

    it_expect(cuMemFree(a), CUDA_SUCCESS, "cuMemFree_v2(a)");
    size_t in_use = it_counters(&fake).bytes_in_use;
    it_expect(cuMemFree(a), CUDA_ERROR_INVALID_VALUE, "second cuMemFree_v2(a)");
    IT_CHECK(it_counters(&fake).bytes_in_use == in_use, "the double free changed the driver's bytes in use (%zu -> %zu)",
             in_use, it_counters(&fake).bytes_in_use);

    /* The cache is intact: new blocks are distinct from each other and from `keep`, and hold data. */
    CUdeviceptr b = 0, c = 0;
    it_expect(cuMemAlloc(&b, n), CUDA_SUCCESS, "cuMemAlloc_v2(b)");
    it_expect(cuMemAlloc(&c, n), CUDA_SUCCESS, "cuMemAlloc_v2(c)");
    IT_CHECK(b != c && b != keep && c != keep, "blocks handed out twice after a double free");
    it_use(b, n, 4);
    it_use(c, n, 5);
    it_use(keep, n, 6);
    it_expect(cuMemFree(b), CUDA_SUCCESS, "cuMemFree_v2(b)");
    it_expect(cuMemFree(c), CUDA_SUCCESS, "cuMemFree_v2(c)");
    it_expect(cuMemFree(keep), CUDA_SUCCESS, "cuMemFree_v2(keep)");
    it_expect(cuMemFree(keep), CUDA_ERROR_INVALID_VALUE, "second cuMemFree_v2(keep)");
  }
  if (cudasnap_memory_allocated) {
    IT_CHECK(cudasnap_memory_allocated(0) == 0, "%" PRId64 " bytes still allocated", cudasnap_memory_allocated(0));
    IT_CHECK(it_stat(0, "allocation.all.allocated") == 8, "allocation.all.allocated = %" PRId64 ", expected 8",
             it_stat(0, "allocation.all.allocated"));
  }
  printf("checksum=%016" PRIx64 "\n", sum);
  return 0;
}

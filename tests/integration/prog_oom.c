/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #3 test 4: out of memory, run with FAKE_CUDA_CAPACITY small (64 MiB). Allocate 3 MiB blocks
 * until the device is full: the program sees CUDA_ERROR_OUT_OF_MEMORY. Free them all and allocate
 * 40 MiB: with cudasnap the freed blocks are still cached, so it must release its cache and retry
 * (num_alloc_retries); the allocation succeeds either way. Prints checksum=<hex> of the 40 MiB
 * block's contents, the same with and without cudasnap. */
#include <cuda.h>

#include "tests/integration/it_driver.h"

enum { IT_MAX_BLOCKS = 1024 };

int main(void) {
  int preloaded = it_preloaded();
  const char *cap = getenv("FAKE_CUDA_CAPACITY");
  IT_CHECK(cap && strtoull(cap, NULL, 0) >= 48 * IT_MIB && strtoull(cap, NULL, 0) <= 128 * IT_MIB,
           "run with FAKE_CUDA_CAPACITY between 48 and 128 MiB");
  const size_t capacity = (size_t)strtoull(cap, NULL, 0);
  (void)it_driver_context();
  fake_cuda_control_t fake = it_fake();

  static CUdeviceptr blocks[IT_MAX_BLOCKS];
  int n = 0;
  CUresult r = CUDA_SUCCESS;
  while (n < IT_MAX_BLOCKS) {
    CUdeviceptr p = 0;
    r = cuMemAlloc(&p, 3 * IT_MIB);
    if (r != CUDA_SUCCESS) break;
    blocks[n++] = p;
  }
  IT_CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "allocating until full ended with error %d after %d blocks, expected %d",
           (int)r, n, (int)CUDA_ERROR_OUT_OF_MEMORY);
  IT_CHECK(n >= 8, "only %d blocks of 3 MiB fit", n);
  fprintf(stderr, "%d blocks of 3 MiB before out of memory\n", n);
  if (preloaded) IT_CHECK(it_stat(0, "num_ooms") >= 1, "num_ooms is %" PRId64, it_stat(0, "num_ooms"));

  for (int i = 0; i < n; i++) IT_CHECK(cuMemFree(blocks[i]) == CUDA_SUCCESS, "cuMemFree_v2 of block %d failed", i);
  int64_t retries_before = preloaded ? it_stat(0, "num_alloc_retries") : 0;

  CUdeviceptr big = 0;
  r = cuMemAlloc(&big, 40 * IT_MIB);
  IT_CHECK(r == CUDA_SUCCESS, "40 MiB after freeing everything: error %d", (int)r);
  if (preloaded) {
    int64_t retries = it_stat(0, "num_alloc_retries") - retries_before;
    IT_CHECK(retries >= 1, "num_alloc_retries did not grow (%" PRId64 "): the cache was not released and retried",
             retries);
    IT_CHECK(cudasnap_memory_reserved(0) <= (int64_t)capacity, "reserved %" PRId64 " bytes",
             cudasnap_memory_reserved(0));
  }

  /* The block is usable end to end. */
  static unsigned char buf[64 * 1024], back[64 * 1024];
  uint64_t sum = 0;
  for (size_t off = 0; off + sizeof buf <= 40 * IT_MIB; off += 4 * IT_MIB) {
    it_pattern(buf, off, 0, sizeof buf);
    IT_CHECK(cuMemcpyHtoD(big + off, buf, sizeof buf) == CUDA_SUCCESS, "cuMemcpyHtoD failed");
    IT_CHECK(cuMemcpyDtoH(back, big + off, sizeof back) == CUDA_SUCCESS, "cuMemcpyDtoH failed");
    IT_CHECK(memcmp(buf, back, sizeof buf) == 0, "data mismatch in the 40 MiB block");
    it_fold(&sum, back, sizeof back);
  }
  IT_CHECK(cuMemFree(big) == CUDA_SUCCESS, "cuMemFree_v2 of the 40 MiB block failed");
  fake_cuda_counters_t c = it_counters(&fake);
  IT_CHECK(!preloaded || c.bytes_in_use <= capacity, "the driver holds %zu bytes", c.bytes_in_use);
  printf("checksum=%016" PRIx64 "\n", sum);
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #3 test 8: fork after CUDA initialization. The parent allocates (a live block, and cached
 * ones), forks; the child tries one allocation, takes whatever the driver gives, touches nothing of
 * the parent's and exits 0 through exit() (so every atexit handler and destructor runs). The
 * parent checks the child's status, then keeps allocating and freeing correctly, including the
 * block that was live across the fork. Prints checksum=<hex>. */
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/it_driver.h"

int main(void) {
  int preloaded = it_preloaded();
  (void)it_driver_context();
  fake_cuda_control_t fake = it_fake();

  it_workload_t w;
  it_workload_init(&w, &it_driver_ops, UINT64_C(0xf0f0), 4);
  it_workload_run(&w, 200); /* leaves up to 4 live blocks and a warm cache */
  it_block_t across = {.size = 5 * IT_MIB, .tag = 77};
  IT_CHECK(it_driver_alloc(&across.dptr, across.size) == 0, "allocation before the fork failed");
  it_write_block(&w, &across);
  fake_cuda_counters_t before_fork = it_counters(&fake);

  fflush(NULL);
  pid_t pid = fork();
  IT_CHECK(pid >= 0, "fork failed");
  if (pid == 0) {
    CUdeviceptr p = 0;
    CUresult r = cuMemAlloc(&p, 4096);
    fprintf(stderr, "child: cuMemAlloc_v2 after fork -> %d\n", (int)r);
    if (r == CUDA_SUCCESS) {
      unsigned char x = 42;
      if (cuMemcpyHtoD(p, &x, 1) != CUDA_SUCCESS) exit(3);
      if (cuMemFree(p) != CUDA_SUCCESS) exit(4);
    }
    if (preloaded && cudasnap_memory_allocated(0) != 0) {
      fprintf(stderr, "child: inherited %" PRId64 " allocated bytes from the parent\n", cudasnap_memory_allocated(0));
      exit(5);
    }
    exit(0);
  }
  int status = 0;
  IT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
  IT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status 0x%x", (unsigned)status);

  /* The parent's state is untouched by the child. */
  fake_cuda_counters_t after_fork = it_counters(&fake);
  IT_CHECK(after_fork.bytes_in_use == before_fork.bytes_in_use, "the parent's device memory changed across the fork");
  it_check_block(&w, &across);
  IT_CHECK(it_driver_free(across.dptr) == 0, "freeing the block that was live across the fork failed");
  it_workload_run(&w, 400);
  it_workload_finish(&w);
  if (preloaded) {
    IT_CHECK(it_stat(0, "allocation.all.allocated") == (int64_t)w.allocations + 1,
             "allocation.all.allocated = %" PRId64 ", the parent made %" PRIu64,
             it_stat(0, "allocation.all.allocated"), w.allocations + 1);
    IT_CHECK(cudasnap_memory_allocated(0) == 0, "%" PRId64 " bytes still allocated", cudasnap_memory_allocated(0));
  }
  printf("checksum=%016" PRIx64 "\n", w.checksum);
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #3 test 2: the real CUDA 13 runtime (linked dynamically, or statically from
 * libcudart_static.a, depending on the build) against the fake driver. It calls cudaMalloc once;
 * without a real driver that fails (the fake driver has no private export tables), which is
 * printed and not a failure. What the test checks is the debug log cudasnap writes on stderr: the
 * runtime's lookups must have reached its hooks.
 *
 * Usage: it_real_cudart_{dynamic,static} [CUDART_DIR]. With a directory, the libcudart loaded must
 * come from there, so a fake libcudart.so.13 on LD_LIBRARY_PATH cannot stand in for the real one;
 * without, none may be loaded (static runtime). The loaded libcuda.so.1 must be the fake. */
#include <cuda_runtime_api.h>
#include <link.h>

#include "tests/integration/it_common.h"

static const char *it_cudart_path;

static int it_find_cudart(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  if (info->dlpi_name && strstr(info->dlpi_name, "libcudart.so")) it_cudart_path = info->dlpi_name;
  return 0;
}

int main(int argc, char **argv) {
  it_preloaded();
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, 1 << 20);
  printf("cudaMalloc -> %d (%s)\n", (int)e, cudaGetErrorName(e));
  if (e == cudaSuccess) cudaFree(p);
  /* The driver the runtime loaded must be the fake (a real or stub libcuda.so.1 would change what
   * the test sees). */
  fake_cuda_control_t fake;
  IT_CHECK(fake_cuda_control_load(&fake) == 0, "the runtime did not load the fake libcuda.so.1");
  fake_cuda_counters_t c;
  fake.get_counters(&c);
  fprintf(stderr, "fake driver: %llu cuGetProcAddress lookups\n", (unsigned long long)c.proc_address_lookups);
  IT_CHECK(c.proc_address_lookups > 0, "the runtime made no cuGetProcAddress lookup");
  dl_iterate_phdr(it_find_cudart, NULL);
  if (argc > 1) {
    IT_CHECK(it_cudart_path && strncmp(it_cudart_path, argv[1], strlen(argv[1])) == 0,
             "the loaded libcudart is %s, expected one from %s", it_cudart_path ? it_cudart_path : "(none)", argv[1]);
  } else {
    IT_CHECK(!it_cudart_path, "a static-cudart program loaded %s", it_cudart_path);
  }
  return 0;
}

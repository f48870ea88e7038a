/* SPDX-License-Identifier: Apache-2.0 */
/* Issue #3 test 2: a math library's embedded runtime. dlopen()s the real libcublasLt.so.13 and
 * calls cublasLtCreate; against the fake driver it fails (printed, not a failure). The test checks
 * from cudasnap's debug log that the embedded runtime's lookups reached the hooks.
 *
 * Usage: it_cublaslt PATH_TO_LIBCUBLASLT */
#include <dlfcn.h>

#include "tests/integration/it_common.h"

typedef int (*it_cublaslt_create_fn)(void **handle);
typedef int (*it_cublaslt_destroy_fn)(void *handle);

int main(int argc, char **argv) {
  IT_CHECK(argc == 2, "usage: it_cublaslt PATH_TO_LIBCUBLASLT");
  it_preloaded();
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  IT_CHECK(h, "dlopen(%s): %s", argv[1], dlerror());
  it_cublaslt_create_fn create;
  IT_FN_FROM_PTR(create, dlsym(h, "cublasLtCreate"));
  IT_CHECK(create, "no cublasLtCreate in %s", argv[1]);
  void *handle = NULL;
  int status = create(&handle);
  printf("cublasLtCreate -> %d\n", status);
  fake_cuda_control_t fake;
  IT_CHECK(fake_cuda_control_load(&fake) == 0, "cuBLASLt's runtime did not load the fake libcuda.so.1");
  fake_cuda_counters_t c;
  fake.get_counters(&c);
  fprintf(stderr, "fake driver: %llu cuGetProcAddress lookups\n", (unsigned long long)c.proc_address_lookups);
  IT_CHECK(c.proc_address_lookups > 0, "cuBLASLt's runtime made no cuGetProcAddress lookup");
  if (status == 0) {
    it_cublaslt_destroy_fn destroy;
    IT_FN_FROM_PTR(destroy, dlsym(h, "cublasLtDestroy"));
    if (destroy) destroy(handle);
  }
  return 0;
}

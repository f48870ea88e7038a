/* SPDX-License-Identifier: Apache-2.0 */
/* cuGetProcAddress redirection against every request the CUDA 13 runtime makes
 * (tests/fakes/cudart13-getprocaddress-requests.txt, 440 lines).
 *
 * The fake driver is the oracle: it resolves each request to one of its exported functions, and
 * dladdr names that function. cudasnap's variant for the request must be exactly that export when
 * cudasnap hooks it, and none otherwise. Then, through cudasnap's own cuGetProcAddress_v2 hook: the
 * return code and symbolStatus are the driver's, a NULL answer stays NULL, a hooked variant comes
 * back as cudasnap's hook and anything else as the driver's own pointer. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "interpose/hook_table.h"
#include "interpose/procaddr.h"
#include "real/real.h"

static const char *requests_path;

static void test_every_runtime_request(void **state) {
  (void)state;
  FILE *f = fopen(requests_path, "r");
  assert_non_null(f);
  PFN_cuGetProcAddress_v12000 driver = CS_REAL_FN(cuGetProcAddress_v2, PFN_cuGetProcAddress_v12000);
  assert_non_null(driver);
  char line[256];
  int lines = 0, hooked = 0, judged_lines = 0;
  while (fgets(line, sizeof line, f)) {
    char name[128] = "";
    int version = 0;
    unsigned long long flags = 0;
    if (sscanf(line, "%127[^,], ver=%d, flags=%llu", name, &version, &flags) != 3 &&
        sscanf(line, ", ver=%d, flags=%llu", &version, &flags) != 2)
      fail_msg("unreadable line: %s", line);
    lines++;
    bool ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;

    void *p = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r = driver(name, &p, version, flags, &status);

    /* the oracle: which export did the driver pick? The fake answers names it does not
     * implement with one shared stub, which says nothing about variants. */
    cs_fn_t expected = CS_FN_COUNT;
    Dl_info info;
    bool judged = !p || (dladdr(p, &info) && info.dli_sname && info.dli_saddr == p &&
                         strncmp(info.dli_sname, "cu", 2) == 0);
    if (p && judged) expected = cs_fn_find(info.dli_sname);
    if (expected != CS_FN_COUNT && cs_fn_info[expected].kind != CS_FN_DRIVER_HOOK) expected = CS_FN_COUNT;
    cs_fn_t ours = name[0] ? cs_procaddr_variant(name, version, ptds) : CS_FN_COUNT;
    judged_lines += judged;
    if (judged && ours != expected)
      fail_msg("%s ver=%d flags=%llu: driver gave %s, cudasnap picks %s", name, version, flags,
               expected == CS_FN_COUNT ? "no hooked variant" : cs_fn_info[expected].name,
               ours == CS_FN_COUNT ? "none" : cs_fn_info[ours].name);

    /* through cudasnap's hook */
    void *q = NULL;
    CUdriverProcAddressQueryResult status2 = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r2 = cuGetProcAddress_v2(name, &q, version, flags, &status2);
    assert_int_equal(r2, r);
    assert_int_equal(status2, status);
    if (!p) {
      assert_null(q);
    } else if (ours != CS_FN_COUNT) {
      assert_ptr_equal(q, cs_ptr_from_fn(cs_fn_hook(ours)));
      hooked++;
    } else {
      assert_ptr_equal(q, p);
    }
  }
  fclose(f);
  assert_int_equal(lines, 440);
  printf("%d requests, %d judged by the fake's exports, %d redirected\n", lines, judged_lines, hooked);
  assert_true(judged_lines >= 60);
  /* cuMemAlloc, cuMemFree, cuMemGetInfo, the captures, stream and context life cycle, ... */
  assert_true(hooked >= 30);
}

static void test_null_answers_stay_null(void **state) {
  (void)state;
  void *p = (void *)1;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  cuGetProcAddress_v2("", &p, 0, 0, &status);
  assert_null(p);
  assert_int_equal(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  p = (void *)1;
  cuGetProcAddress_v2("cuMemAllocAsync", &p, 11000, 0, &status); /* before it existed */
  assert_null(p);
  assert_int_equal(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

static void test_self_query_returns_our_resolver(void **state) {
  (void)state;
  void *p = NULL;
  CUdriverProcAddressQueryResult status;
  assert_int_equal(cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, &status), CUDA_SUCCESS);
  assert_ptr_equal(p, cs_ptr_from_fn((cs_any_fn)&cuGetProcAddress_v2));
  assert_int_equal(cuGetProcAddress_v2("cuGetProcAddress", &p, 11030, 0, &status), CUDA_SUCCESS);
  assert_ptr_equal(p, cs_ptr_from_fn((cs_any_fn)&cuGetProcAddress));
  /* and never our own hook as "real": the slot holds the driver's */
  assert_false(cs_fn_is_hook(cs_real(CS_FN_cuGetProcAddress_v2)));
}

int main(void) {
  requests_path = CS_REQUESTS_FILE;
  /* As the runtime does: the driver is loaded by name, and found through LD_LIBRARY_PATH. */
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "test_procaddr: cannot load the fake libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_runtime_request),
      cmocka_unit_test(test_null_answers_stay_null),
      cmocka_unit_test(test_self_query_returns_our_resolver),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Another tool's NVTX injection (the role Nsight Systems plays): counts nvtxRangePushA calls and
 * reports them at exit as "nvtx_spy: N pushes". */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*spy_fn)(void);
typedef const void *(*spy_get_export_table_t)(uint32_t id);
typedef struct spy_callbacks_s {
  size_t struct_size;
  int (*get_module_function_table)(int module, spy_fn ***out_table, unsigned *out_size);
} spy_callbacks_t;

static atomic_int spy_pushes;

static int spy_push_a(const char *message) {
  (void)message;
  return atomic_fetch_add(&spy_pushes, 1);
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(spy_get_export_table_t get);
int InitializeInjectionNvtx2(spy_get_export_table_t get) {
  const spy_callbacks_t *cb = get(1 /* NVTX_ETID_CALLBACKS */);
  spy_fn **table = NULL;
  unsigned size = 0;
  if (!cb || !cb->get_module_function_table(1 /* CORE */, &table, &size) || size < 9) return 0;
  *table[9] = (spy_fn)spy_push_a; /* NVTX_CBID_CORE_RangePushA */
  return 1;
}

__attribute__((destructor)) static void spy_report(void) {
  fprintf(stderr, "nvtx_spy: %d pushes\n", atomic_load(&spy_pushes));
}

/* SPDX-License-Identifier: Apache-2.0 */
/* libcudasnap.so as the process's NVTX injection: the program's ranges and marks become phases
 * (phases/phases.h), which snapshots write as `external_annotations`.
 *
 * NVTX v3 is header-only: every library that uses it carries its own copy, which, at its first
 * NVTX call, dlopens the library named by NVTX_INJECTION64_PATH and calls its
 * InitializeInjectionNvtx2 with a function that returns export tables. The callbacks table gives,
 * per module (CORE: nvtxRangePushA & co; CORE2: the domain calls), an array of pointers to that
 * copy's function-pointer slots; the injection writes its functions into the slots it handles, and
 * NVTX turns the others into no-ops. Ids and layouts: nvtx3/nvtxDetail/nvtxTypes.h.
 *
 * So the constructor below sets NVTX_INJECTION64_PATH to this library (unless another tool's
 * injection is named there: that one is never replaced), and since the library is already loaded
 * (preloaded), NVTX's dlopen finds it. A process that never calls NVTX never calls anything here:
 * the variable, which it and its children inherit, is then all it sees of cudasnap (pinned down by
 * tests/integration/inert_touched.sh). It cannot be set later: NVTX reads it at the first NVTX
 * call, which may come before any CUDA call.
 * The callbacks run on the program's threads, hand each call to phases/ranges.h, take no lock and
 * call CUDA at most for cuCtxGetCurrent (the annotation's device) once cudasnap is active; names
 * given to threads with nvtxNameOsThread name them in the snapshot. */
#define NVTX_NO_IMPL
#define NVTX_AS_SYSTEM_HEADER
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "common/cs_log.h"
#include "interpose/nvtx.h"
#include "interpose/nvtx_env.h"
#include "phases/phases.h"
#include "phases/ranges.h"
#include "process/lifecycle.h"
#include "real/libc_dlsym.h"

/* ---- the export-table protocol, as nvtxTypes.h defines it ---- */

typedef void (*cs_nvtx_fn)(void);
typedef cs_nvtx_fn **cs_nvtx_table_t;
typedef const void *(*cs_nvtx_get_export_table_t)(uint32_t id);

enum { CS_NVTX_ETID_CALLBACKS = 1, CS_NVTX_ETID_VERSIONINFO = 3 };
enum { CS_NVTX_MODULE_CORE = 1, CS_NVTX_MODULE_CORE2 = 5 };
enum {
  CS_NVTX_CORE_MarkEx = 1, CS_NVTX_CORE_MarkA = 2, CS_NVTX_CORE_MarkW = 3,
  CS_NVTX_CORE_RangeStartEx = 4, CS_NVTX_CORE_RangeStartA = 5, CS_NVTX_CORE_RangeStartW = 6,
  CS_NVTX_CORE_RangeEnd = 7, CS_NVTX_CORE_RangePushEx = 8, CS_NVTX_CORE_RangePushA = 9,
  CS_NVTX_CORE_RangePushW = 10, CS_NVTX_CORE_RangePop = 11, CS_NVTX_CORE_NameOsThreadA = 14,
  CS_NVTX_CORE_NameOsThreadW = 15,
};
enum {
  CS_NVTX_CORE2_DomainMarkEx = 1, CS_NVTX_CORE2_DomainRangeStartEx = 2, CS_NVTX_CORE2_DomainRangeEnd = 3,
  CS_NVTX_CORE2_DomainRangePushEx = 4, CS_NVTX_CORE2_DomainRangePop = 5,
  CS_NVTX_CORE2_DomainRegisterStringA = 10, CS_NVTX_CORE2_DomainRegisterStringW = 11,
  CS_NVTX_CORE2_DomainCreateA = 12, CS_NVTX_CORE2_DomainCreateW = 13, CS_NVTX_CORE2_DomainDestroy = 14,
};

typedef struct cs_nvtx_callbacks_s {
  size_t struct_size;
  int (*get_module_function_table)(int module, cs_nvtx_table_t *out_table, unsigned *out_size);
} cs_nvtx_callbacks_t;

typedef struct cs_nvtx_version_info_s {
  size_t struct_size;
  uint32_t version;
  uint32_t reserved0;
  void (*set_injection_nvtx_version)(uint32_t version);
} cs_nvtx_version_info_t;

/* Set by the constructor: whether NVTX's call is accepted. */
static bool cs_nvtx_accepting;

/* ---- the callbacks: each hands the call to phases/ranges.h ---- */

/* The annotation's device: no CUDA call is made before cudasnap is active. */
#define CS_NVTX_DEVICE cs_lifecycle_thread_device

static void cs_nvtx_MarkEx(const nvtxEventAttributes_t *a) {
  cs_ranges_mark(cs_ranges_name_attr(NULL, a), CS_NVTX_DEVICE);
}
static void cs_nvtx_MarkA(const char *m) { cs_ranges_mark(cs_ranges_name(NULL, m), CS_NVTX_DEVICE); }
static void cs_nvtx_MarkW(const wchar_t *m) { cs_ranges_mark(cs_ranges_name_w(NULL, m), CS_NVTX_DEVICE); }
static nvtxRangeId_t cs_nvtx_RangeStartEx(const nvtxEventAttributes_t *a) {
  return cs_ranges_start(cs_ranges_name_attr(NULL, a), CS_NVTX_DEVICE);
}
static nvtxRangeId_t cs_nvtx_RangeStartA(const char *m) {
  return cs_ranges_start(cs_ranges_name(NULL, m), CS_NVTX_DEVICE);
}
static nvtxRangeId_t cs_nvtx_RangeStartW(const wchar_t *m) {
  return cs_ranges_start(cs_ranges_name_w(NULL, m), CS_NVTX_DEVICE);
}
static void cs_nvtx_RangeEnd(nvtxRangeId_t id) { cs_ranges_end(id, CS_NVTX_DEVICE); }
static int cs_nvtx_RangePushEx(const nvtxEventAttributes_t *a) {
  return cs_ranges_push(NULL, cs_ranges_name_attr(NULL, a), CS_NVTX_DEVICE);
}
static int cs_nvtx_RangePushA(const char *m) { return cs_ranges_push(NULL, cs_ranges_name(NULL, m), CS_NVTX_DEVICE); }
static int cs_nvtx_RangePushW(const wchar_t *m) {
  return cs_ranges_push(NULL, cs_ranges_name_w(NULL, m), CS_NVTX_DEVICE);
}
static int cs_nvtx_RangePop(void) { return cs_ranges_pop(NULL, CS_NVTX_DEVICE); }
static void cs_nvtx_NameOsThreadA(uint32_t thread, const char *name) { cs_ranges_name_thread(thread, name); }
static void cs_nvtx_NameOsThreadW(uint32_t thread, const wchar_t *name) { cs_ranges_name_thread_w(thread, name); }

static void cs_nvtx_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  cs_ranges_mark(cs_ranges_name_attr(d, a), CS_NVTX_DEVICE);
}
static nvtxRangeId_t cs_nvtx_DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  return cs_ranges_start(cs_ranges_name_attr(d, a), CS_NVTX_DEVICE);
}
static void cs_nvtx_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  (void)d;
  cs_ranges_end(id, CS_NVTX_DEVICE);
}
static int cs_nvtx_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  return cs_ranges_push(d, cs_ranges_name_attr(d, a), CS_NVTX_DEVICE);
}
static int cs_nvtx_DomainRangePop(nvtxDomainHandle_t d) { return cs_ranges_pop(d, CS_NVTX_DEVICE); }

static nvtxStringHandle_t cs_nvtx_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s) {
  (void)d;
  return cs_ranges_string_handle(cs_ranges_name(NULL, s));
}
static nvtxStringHandle_t cs_nvtx_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s) {
  (void)d;
  return cs_ranges_string_handle(cs_ranges_name_w(NULL, s));
}

static nvtxDomainHandle_t cs_nvtx_DomainCreateA(const char *name) { return cs_ranges_domain(name); }
static nvtxDomainHandle_t cs_nvtx_DomainCreateW(const wchar_t *name) { return cs_ranges_domain_w(name); }
static void cs_nvtx_DomainDestroy(nvtxDomainHandle_t d) { (void)d; /* handles stay valid */ }

/* ---- attaching ---- */

#define CS_NVTX_SET(table, size, id, fn)                                                           \
  do {                                                                                              \
    if ((unsigned)(id) <= (size) && (table)[id]) {                                                 \
      *(table)[id] = (cs_nvtx_fn)(fn);                                                              \
    }                                                                                               \
  } while (0)

static bool cs_nvtx_attach_core(const cs_nvtx_callbacks_t *cb) {
  cs_nvtx_table_t t = NULL;
  unsigned n = 0;
  if (!cb->get_module_function_table(CS_NVTX_MODULE_CORE, &t, &n) || !t) return false;
  CS_NVTX_SET(t, n, CS_NVTX_CORE_MarkEx, cs_nvtx_MarkEx);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_MarkA, cs_nvtx_MarkA);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_MarkW, cs_nvtx_MarkW);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_RangeStartEx, cs_nvtx_RangeStartEx);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_RangeStartA, cs_nvtx_RangeStartA);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_RangeStartW, cs_nvtx_RangeStartW);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_RangeEnd, cs_nvtx_RangeEnd);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_RangePushEx, cs_nvtx_RangePushEx);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_RangePushA, cs_nvtx_RangePushA);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_RangePushW, cs_nvtx_RangePushW);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_RangePop, cs_nvtx_RangePop);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_NameOsThreadA, cs_nvtx_NameOsThreadA);
  CS_NVTX_SET(t, n, CS_NVTX_CORE_NameOsThreadW, cs_nvtx_NameOsThreadW);
  return true;
}

static void cs_nvtx_attach_core2(const cs_nvtx_callbacks_t *cb) {
  cs_nvtx_table_t t = NULL;
  unsigned n = 0;
  if (!cb->get_module_function_table(CS_NVTX_MODULE_CORE2, &t, &n) || !t) return;
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainMarkEx, cs_nvtx_DomainMarkEx);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainRangeStartEx, cs_nvtx_DomainRangeStartEx);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainRangeEnd, cs_nvtx_DomainRangeEnd);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainRangePushEx, cs_nvtx_DomainRangePushEx);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainRangePop, cs_nvtx_DomainRangePop);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainRegisterStringA, cs_nvtx_DomainRegisterStringA);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainRegisterStringW, cs_nvtx_DomainRegisterStringW);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainCreateA, cs_nvtx_DomainCreateA);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainCreateW, cs_nvtx_DomainCreateW);
  CS_NVTX_SET(t, n, CS_NVTX_CORE2_DomainDestroy, cs_nvtx_DomainDestroy);
}

/* Called by each NVTX copy in the process at its first call (so possibly several times, from
 * several threads). 1: attached; 0: NVTX turns that copy's calls into no-ops. */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(cs_nvtx_get_export_table_t get);
int InitializeInjectionNvtx2(cs_nvtx_get_export_table_t get) {
  if (!cs_nvtx_accepting || !get) return 0;
  const cs_nvtx_callbacks_t *cb = get(CS_NVTX_ETID_CALLBACKS);
  if (!cb || cb->struct_size < sizeof *cb || !cb->get_module_function_table) return 0;
  if (!cs_phases_init()) return 0;
  cs_ranges_install_fork_handler();
  if (!cs_nvtx_attach_core(cb)) return 0;
  cs_nvtx_attach_core2(cb);
  const cs_nvtx_version_info_t *v = get(CS_NVTX_ETID_VERSIONINFO);
  if (v && v->struct_size >= sizeof *v && v->set_injection_nvtx_version) v->set_injection_nvtx_version(NVTX_VERSION);
  return 1;
}

/* ---- before main: become the injection ---- */

/* Is this copy of cudasnap in the global scope (preloaded), rather than opened by NVTX alone? Asked
 * through the main program's handle: a lookup through RTLD_DEFAULT from here would also search this
 * library's own local scope, and find it either way. */
static bool cs_nvtx_preloaded_now(void) {
  void *program = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
  void *global = program ? cs_libc_dlsym(program, "InitializeInjectionNvtx2") : NULL;
  if (program) dlclose(program);
  Dl_info mine, found;
  return global && dladdr((void *)&cs_nvtx_accepting, &mine) && dladdr(global, &found) &&
         mine.dli_fbase == found.dli_fbase;
}

bool cs_nvtx_attached(void) { return cs_nvtx_accepting; }

bool cs_nvtx_library_preloaded(void) {
  static int known; /* 0: not asked yet, 1: yes, 2: no (asked before main, so no race) */
  if (!known) known = cs_nvtx_preloaded_now() ? 1 : 2;
  return known == 1;
}

__attribute__((constructor)) static void cs_nvtx_constructor(void) {
  const char *current = getenv("NVTX_INJECTION64_PATH");
  bool preloaded = cs_nvtx_library_preloaded();
  cs_nvtx_env_action_t action = cs_nvtx_env_decide(getenv("CUDASNAP_NVTX"), current, preloaded);
  bool debug = getenv("CUDASNAP_LOG") && strcmp(getenv("CUDASNAP_LOG"), "debug") == 0;
  Dl_info self;
  switch (action) {
  case CS_NVTX_ENV_SET:
  case CS_NVTX_ENV_OURS:
    if (dladdr((void *)&cs_nvtx_accepting, &self) && self.dli_fname && self.dli_fname[0] &&
        setenv("NVTX_INJECTION64_PATH", self.dli_fname, 1) == 0)
      cs_nvtx_accepting = true;
    break;
  case CS_NVTX_ENV_OTHER_TOOL:
    /* the level is not parsed yet (that happens at the first CUDA call), hence the direct test */
    if (debug) {
      cs_log_level_t level = cs_log_get_level();
      cs_log_set_level(CS_LOG_DEBUG);
      cs_log_debug("NVTX_INJECTION64_PATH names another tool (%s): it keeps NVTX; no phases from NVTX", current);
      cs_log_set_level(level);
    }
    break;
  case CS_NVTX_ENV_STRAY:
    unsetenv("NVTX_INJECTION64_PATH");
    break;
  case CS_NVTX_ENV_OFF:
  case CS_NVTX_ENV_NOTHING:
    break;
  }
}

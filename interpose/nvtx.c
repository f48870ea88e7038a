/* libcudasnap.so as the process's NVTX injection: the program's ranges and marks become phases
 * (record/phases.h), which snapshots write as `external_annotations`.
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
 * The callbacks run on the program's threads, take no lock and call CUDA at most for
 * cuCtxGetCurrent (the annotation's device) once cudasnap is active. Every range is its thread's:
 * a push/pop range the pushing thread's, a start/end range the starting thread's (issue 44); names
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

#include "common/cs_compiler.h"
#include "common/cs_log.h"
#include "interpose/contexts.h"
#include "interpose/libc_dlsym.h"
#include "interpose/lifecycle.h"
#include "interpose/nvtx.h"
#include "interpose/nvtx_env.h"
#include "record/phases.h"
#include "record/pools.h"
#include "record/thread_id.h"
#include "record/ticks.h"

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

/* ---- names ---- */

/* A domain: its name, interned with "::" (handles point here; never freed). */
enum { CS_NVTX_MAX_DOMAINS = 256, CS_NVTX_NAME_MAX = 512 };
struct nvtxDomainRegistration_st {
  char prefix[128]; /* "domain::" */
  size_t prefix_len;
};
static struct nvtxDomainRegistration_st cs_nvtx_domains[CS_NVTX_MAX_DOMAINS];
static int cs_nvtx_domain_count;
static pthread_mutex_t cs_nvtx_domain_lock = PTHREAD_MUTEX_INITIALIZER;

/* A wide string as UTF-8 (wchar_t is UTF-32 on Linux), truncated to fit. */
static size_t cs_nvtx_utf8(const wchar_t *w, char *out, size_t cap) {
  size_t n = 0;
  for (; w && *w; w++) {
    uint32_t c = (uint32_t)*w;
    char b[4];
    size_t k;
    if (c < 0x80) { b[0] = (char)c; k = 1; }
    else if (c < 0x800) { b[0] = (char)(0xC0 | c >> 6); b[1] = (char)(0x80 | (c & 0x3F)); k = 2; }
    else if (c < 0x10000) {
      b[0] = (char)(0xE0 | c >> 12); b[1] = (char)(0x80 | (c >> 6 & 0x3F)); b[2] = (char)(0x80 | (c & 0x3F)); k = 3;
    } else if (c < 0x110000) {
      b[0] = (char)(0xF0 | c >> 18); b[1] = (char)(0x80 | (c >> 12 & 0x3F));
      b[2] = (char)(0x80 | (c >> 6 & 0x3F)); b[3] = (char)(0x80 | (c & 0x3F)); k = 4;
    } else continue;
    if (n + k >= cap) break;
    memcpy(out + n, b, k);
    n += k;
  }
  out[n] = '\0';
  return n;
}

/* The phase id of a message in a domain (NULL: the default domain, names as they are). */
static uint32_t cs_nvtx_name(nvtxDomainHandle_t domain, const char *text, size_t len) {
  if (!domain) return cs_phases_name(text, len);
  char buf[CS_NVTX_NAME_MAX];
  size_t p = domain->prefix_len;
  memcpy(buf, domain->prefix, p);
  len = strnlen(text, len < sizeof buf - 1 - p ? len : sizeof buf - 1 - p);
  memcpy(buf + p, text, len);
  return cs_phases_name(buf, p + len);
}

/* The last name this thread used, by domain and address: programs push the same literals (and
 * registered strings) over and over. The text is compared too, since a caller's buffer may hold
 * another name next time. */
static CS_TLS nvtxDomainHandle_t cs_nvtx_last_domain;
static CS_TLS const char *cs_nvtx_last_text;
static CS_TLS uint32_t cs_nvtx_last_id;

static bool cs_nvtx_same_name(nvtxDomainHandle_t domain, const char *text, uint32_t id) {
  const char *name = cs_phases_name_text(id);
  if (domain) {
    if (strncmp(name, domain->prefix, domain->prefix_len) != 0) return false;
    name += domain->prefix_len;
  }
  return strcmp(name, text) == 0;
}

static uint32_t cs_nvtx_name_a(nvtxDomainHandle_t domain, const char *text) {
  if (!text) text = "";
  if (text == cs_nvtx_last_text && domain == cs_nvtx_last_domain && cs_nvtx_same_name(domain, text, cs_nvtx_last_id))
    return cs_nvtx_last_id;
  uint32_t id = cs_nvtx_name(domain, text, SIZE_MAX);
  cs_nvtx_last_domain = domain;
  cs_nvtx_last_text = text;
  cs_nvtx_last_id = id;
  return id;
}

static uint32_t cs_nvtx_name_w(nvtxDomainHandle_t domain, const wchar_t *text) {
  char buf[CS_NVTX_NAME_MAX];
  size_t n = cs_nvtx_utf8(text, buf, sizeof buf);
  return cs_nvtx_name(domain, buf, n);
}

/* Registered strings: the handle is the phase id of the bare string. */
static nvtxStringHandle_t cs_nvtx_handle_of(uint32_t id) { return (nvtxStringHandle_t)(uintptr_t)id; }

static uint32_t cs_nvtx_name_attr(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr) {
  size_t need = offsetof(nvtxEventAttributes_t, message) + sizeof attr->message;
  if (!attr || attr->size < need) return cs_nvtx_name_a(domain, "");
  switch (attr->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII: return cs_nvtx_name_a(domain, attr->message.ascii);
  case NVTX_MESSAGE_TYPE_UNICODE: return cs_nvtx_name_w(domain, attr->message.unicode);
  case NVTX_MESSAGE_TYPE_REGISTERED:
    return cs_nvtx_name_a(domain, cs_phases_name_text((uint32_t)(uintptr_t)attr->message.registered));
  default: return cs_nvtx_name_a(domain, "");
  }
}

/* ---- recording ---- */

static int cs_nvtx_device(void) {
  return atomic_load_explicit(&cs_lifecycle_active, memory_order_acquire) ? cs_contexts_thread_device() : 0;
}

/* Push/pop: NVTX keeps one stack per thread and domain; a pop names nothing, so the names pushed
 * are kept here. Deeper than this, ranges are not recorded (their pops are matched by depth). */
enum { CS_NVTX_STACK = 32 };
typedef struct cs_nvtx_stack_s {
  uint32_t name[CS_NVTX_STACK];
  nvtxDomainHandle_t domain[CS_NVTX_STACK];
  int depth;        /* entries held */
  int unrecorded;   /* pushes past CS_NVTX_STACK not yet popped */
} cs_nvtx_stack_t;
static CS_TLS cs_nvtx_stack_t cs_nvtx_stack;

static int cs_nvtx_push(nvtxDomainHandle_t domain, uint32_t name) {
  cs_nvtx_stack_t *s = &cs_nvtx_stack;
  if (s->depth == CS_NVTX_STACK) return CS_NVTX_STACK + s->unrecorded++;
  s->name[s->depth] = name;
  s->domain[s->depth] = domain;
  cs_phases_record(name, CS_PHASE_START, cs_nvtx_device());
  return s->depth++;
}

static int cs_nvtx_pop(nvtxDomainHandle_t domain) {
  cs_nvtx_stack_t *s = &cs_nvtx_stack;
  if (s->unrecorded > 0) return CS_NVTX_STACK + --s->unrecorded;
  for (int i = s->depth - 1; i >= 0; i--) {
    if (s->domain[i] != domain) continue;
    cs_phases_record(s->name[i], CS_PHASE_END, cs_nvtx_device());
    for (int k = i; k + 1 < s->depth; k++) { /* another domain's ranges above it stay, in order */
      s->name[k] = s->name[k + 1];
      s->domain[k] = s->domain[k + 1];
    }
    return --s->depth;
  }
  return -1; /* a pop with nothing pushed, as NVTX reports it */
}

/* Start/end: the range id carries the name and the starting thread (bit 32 set: 0 stays "not
 * recorded"), so no table of open ranges is needed and an end on any thread names its range and
 * gives it to the thread that started it: a range belongs to one thread, at both ends. */
enum { CS_NVTX_ID_THREAD_SHIFT = 33 };

uint64_t cs_nvtx_range_start(uint32_t name) {
  uint32_t thread = cs_thread_id();
  cs_phases_record_on(name, CS_PHASE_START, cs_nvtx_device(), thread, cs_ticks_now());
  return (uint64_t)thread << CS_NVTX_ID_THREAD_SHIFT | UINT64_C(1) << 32 | name;
}

void cs_nvtx_range_end(uint64_t id) {
  uint32_t name = (uint32_t)id;
  uint64_t thread = id >> CS_NVTX_ID_THREAD_SHIFT;
  if ((id >> 32 & 1) && name && thread != 0 && thread < UINT64_C(1) << CS_THREAD_ID_BITS)
    cs_phases_record_on(name, CS_PHASE_END, cs_nvtx_device(), (uint32_t)thread, cs_ticks_now());
}

static nvtxRangeId_t cs_nvtx_start(uint32_t name) { return cs_nvtx_range_start(name); }
static void cs_nvtx_end(nvtxRangeId_t id) { cs_nvtx_range_end(id); }

/* A mark: a phase of no length (START and END at one time), so readers that pair the two see it
 * and none leaves it open. */
static void cs_nvtx_mark(uint32_t name) {
  uint64_t now = cs_ticks_now();
  int device = cs_nvtx_device();
  cs_phases_record_at(name, CS_PHASE_START, device, now);
  cs_phases_record_at(name, CS_PHASE_END, device, now);
}

/* ---- the callbacks ---- */

static void cs_nvtx_MarkEx(const nvtxEventAttributes_t *a) { cs_nvtx_mark(cs_nvtx_name_attr(NULL, a)); }
static void cs_nvtx_MarkA(const char *m) { cs_nvtx_mark(cs_nvtx_name_a(NULL, m)); }
static void cs_nvtx_MarkW(const wchar_t *m) { cs_nvtx_mark(cs_nvtx_name_w(NULL, m)); }
static nvtxRangeId_t cs_nvtx_RangeStartEx(const nvtxEventAttributes_t *a) {
  return cs_nvtx_start(cs_nvtx_name_attr(NULL, a));
}
static nvtxRangeId_t cs_nvtx_RangeStartA(const char *m) { return cs_nvtx_start(cs_nvtx_name_a(NULL, m)); }
static nvtxRangeId_t cs_nvtx_RangeStartW(const wchar_t *m) { return cs_nvtx_start(cs_nvtx_name_w(NULL, m)); }
static void cs_nvtx_RangeEnd(nvtxRangeId_t id) { cs_nvtx_end(id); }
static int cs_nvtx_RangePushEx(const nvtxEventAttributes_t *a) { return cs_nvtx_push(NULL, cs_nvtx_name_attr(NULL, a)); }
static int cs_nvtx_RangePushA(const char *m) { return cs_nvtx_push(NULL, cs_nvtx_name_a(NULL, m)); }
static int cs_nvtx_RangePushW(const wchar_t *m) { return cs_nvtx_push(NULL, cs_nvtx_name_w(NULL, m)); }
static int cs_nvtx_RangePop(void) { return cs_nvtx_pop(NULL); }
/* A thread's name, for the phases of that thread (nvtxNameOsThread takes the kernel's id). */
static void cs_nvtx_NameOsThreadA(uint32_t thread, const char *name) {
  cs_phases_name_thread(thread, cs_phases_name(name ? name : "", CS_NVTX_NAME_MAX));
}
static void cs_nvtx_NameOsThreadW(uint32_t thread, const wchar_t *name) {
  cs_phases_name_thread(thread, cs_nvtx_name_w(NULL, name));
}

static void cs_nvtx_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  cs_nvtx_mark(cs_nvtx_name_attr(d, a));
}
static nvtxRangeId_t cs_nvtx_DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  return cs_nvtx_start(cs_nvtx_name_attr(d, a));
}
static void cs_nvtx_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  (void)d;
  cs_nvtx_end(id);
}
static int cs_nvtx_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  return cs_nvtx_push(d, cs_nvtx_name_attr(d, a));
}
static int cs_nvtx_DomainRangePop(nvtxDomainHandle_t d) { return cs_nvtx_pop(d); }

static nvtxStringHandle_t cs_nvtx_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s) {
  (void)d;
  return cs_nvtx_handle_of(cs_nvtx_name_a(NULL, s));
}
static nvtxStringHandle_t cs_nvtx_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s) {
  (void)d;
  return cs_nvtx_handle_of(cs_nvtx_name_w(NULL, s));
}

/* Domains are few and created once: a lock and a scan. Equal names share a handle. */
static nvtxDomainHandle_t cs_nvtx_domain(const char *name) {
  if (!name) name = "";
  size_t len = strnlen(name, sizeof cs_nvtx_domains[0].prefix - 3);
  pthread_mutex_lock(&cs_nvtx_domain_lock);
  nvtxDomainHandle_t d = NULL;
  for (int i = 0; i < cs_nvtx_domain_count && !d; i++)
    if (cs_nvtx_domains[i].prefix_len == len + 2 && memcmp(cs_nvtx_domains[i].prefix, name, len) == 0)
      d = &cs_nvtx_domains[i];
  if (!d && cs_nvtx_domain_count < CS_NVTX_MAX_DOMAINS) {
    d = &cs_nvtx_domains[cs_nvtx_domain_count++];
    memcpy(d->prefix, name, len);
    memcpy(d->prefix + len, "::", 3);
    d->prefix_len = len + 2;
  }
  pthread_mutex_unlock(&cs_nvtx_domain_lock);
  return d; /* NULL past the limit: that domain's names go to the default domain */
}

static nvtxDomainHandle_t cs_nvtx_DomainCreateA(const char *name) { return cs_nvtx_domain(name); }
static nvtxDomainHandle_t cs_nvtx_DomainCreateW(const wchar_t *name) {
  char buf[CS_NVTX_NAME_MAX];
  cs_nvtx_utf8(name, buf, sizeof buf);
  return cs_nvtx_domain(buf);
}
static void cs_nvtx_DomainDestroy(nvtxDomainHandle_t d) { (void)d; /* handles stay valid */ }

/* ---- attaching ---- */

#define CS_NVTX_SET(table, size, id, fn)                                                           \
  do {                                                                                              \
    if ((unsigned)(id) <= (size) && (table)[id]) {                                                 \
      *(table)[id] = (cs_nvtx_fn)(fn);                                                              \
    }                                                                                               \
  } while (0)

static void cs_nvtx_postfork_child(void) {
  cs_thread_id_postfork_child(); /* before anything records: the child's thread has its own id */
  cs_phases_clear();
  cs_pools_postfork_child();
}

void cs_nvtx_install_fork_handler(void) {
  static atomic_bool installed;
  if (!atomic_exchange(&installed, true)) pthread_atfork(NULL, NULL, cs_nvtx_postfork_child);
}

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
  cs_nvtx_install_fork_handler();
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

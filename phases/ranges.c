/* SPDX-License-Identifier: Apache-2.0 */
/* NVTX's ranges and marks as phases (contract in phases/ranges.h). */
#include "phases/ranges.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "phases/phases.h"
#include "phases/pools.h"
#include "record/thread_id.h"
#include "record/ticks.h"

/* ---- names ---- */

/* A domain: its name, interned with "::" (handles point here; never freed). */
enum { CS_RANGES_MAX_DOMAINS = 256 };
struct nvtxDomainRegistration_st {
  char prefix[128]; /* "domain::" */
  size_t prefix_len;
};
static struct nvtxDomainRegistration_st cs_ranges_domains[CS_RANGES_MAX_DOMAINS];
static int cs_ranges_domain_count;
static pthread_mutex_t cs_ranges_domain_lock = PTHREAD_MUTEX_INITIALIZER;

/* A wide string as UTF-8 (wchar_t is UTF-32 on Linux), truncated to fit. */
static size_t cs_ranges_utf8(const wchar_t *w, char *out, size_t cap) {
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
static uint32_t cs_ranges_name_in(nvtxDomainHandle_t domain, const char *text, size_t len) {
  if (!domain) return cs_phases_name(text, len);
  char buf[CS_RANGES_NAME_MAX];
  size_t p = domain->prefix_len;
  memcpy(buf, domain->prefix, p);
  len = strnlen(text, len < sizeof buf - 1 - p ? len : sizeof buf - 1 - p);
  memcpy(buf + p, text, len);
  return cs_phases_name(buf, p + len);
}

/* The last name this thread used, by domain and address: programs push the same literals (and
 * registered strings) over and over. The text is compared too, since a caller's buffer may hold
 * another name next time. */
static CS_TLS nvtxDomainHandle_t cs_ranges_last_domain;
static CS_TLS const char *cs_ranges_last_text;
static CS_TLS uint32_t cs_ranges_last_id;

static bool cs_ranges_same_name(nvtxDomainHandle_t domain, const char *text, uint32_t id) {
  const char *name = cs_phases_name_text(id);
  if (domain) {
    if (strncmp(name, domain->prefix, domain->prefix_len) != 0) return false;
    name += domain->prefix_len;
  }
  return strcmp(name, text) == 0;
}

uint32_t cs_ranges_name(nvtxDomainHandle_t domain, const char *text) {
  if (!text) text = "";
  if (text == cs_ranges_last_text && domain == cs_ranges_last_domain &&
      cs_ranges_same_name(domain, text, cs_ranges_last_id))
    return cs_ranges_last_id;
  uint32_t id = cs_ranges_name_in(domain, text, SIZE_MAX);
  cs_ranges_last_domain = domain;
  cs_ranges_last_text = text;
  cs_ranges_last_id = id;
  return id;
}

uint32_t cs_ranges_name_w(nvtxDomainHandle_t domain, const wchar_t *text) {
  char buf[CS_RANGES_NAME_MAX];
  size_t n = cs_ranges_utf8(text, buf, sizeof buf);
  return cs_ranges_name_in(domain, buf, n);
}

nvtxStringHandle_t cs_ranges_string_handle(uint32_t id) { return (nvtxStringHandle_t)(uintptr_t)id; }

uint32_t cs_ranges_name_attr(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr) {
  size_t need = offsetof(nvtxEventAttributes_t, message) + sizeof attr->message;
  if (!attr || attr->size < need) return cs_ranges_name(domain, "");
  switch (attr->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII: return cs_ranges_name(domain, attr->message.ascii);
  case NVTX_MESSAGE_TYPE_UNICODE: return cs_ranges_name_w(domain, attr->message.unicode);
  case NVTX_MESSAGE_TYPE_REGISTERED:
    return cs_ranges_name(domain, cs_phases_name_text((uint32_t)(uintptr_t)attr->message.registered));
  default: return cs_ranges_name(domain, "");
  }
}

/* ---- recording ---- */

/* Push/pop: NVTX keeps one stack per thread and domain; a pop names nothing, so the names pushed
 * are kept here. Deeper than this, ranges are not recorded (their pops are matched by depth). */
enum { CS_RANGES_STACK = 32 };
typedef struct cs_ranges_stack_s {
  uint32_t name[CS_RANGES_STACK];
  nvtxDomainHandle_t domain[CS_RANGES_STACK];
  int depth;        /* entries held */
  int unrecorded;   /* pushes past CS_RANGES_STACK not yet popped */
} cs_ranges_stack_t;
static CS_TLS cs_ranges_stack_t cs_ranges_stack;

int cs_ranges_push(nvtxDomainHandle_t domain, uint32_t name, cs_ranges_device_fn device) {
  cs_ranges_stack_t *s = &cs_ranges_stack;
  if (s->depth == CS_RANGES_STACK) return CS_RANGES_STACK + s->unrecorded++;
  s->name[s->depth] = name;
  s->domain[s->depth] = domain;
  cs_phases_record(name, CS_PHASE_START, device());
  return s->depth++;
}

int cs_ranges_pop(nvtxDomainHandle_t domain, cs_ranges_device_fn device) {
  cs_ranges_stack_t *s = &cs_ranges_stack;
  if (s->unrecorded > 0) return CS_RANGES_STACK + --s->unrecorded;
  for (int i = s->depth - 1; i >= 0; i--) {
    if (s->domain[i] != domain) continue;
    cs_phases_record(s->name[i], CS_PHASE_END, device());
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
enum { CS_RANGES_ID_THREAD_SHIFT = 33 };

uint64_t cs_ranges_start(uint32_t name, cs_ranges_device_fn device) {
  uint32_t thread = cs_thread_id();
  cs_phases_record_on(name, CS_PHASE_START, device(), thread, cs_ticks_now());
  return (uint64_t)thread << CS_RANGES_ID_THREAD_SHIFT | UINT64_C(1) << 32 | name;
}

void cs_ranges_end(uint64_t id, cs_ranges_device_fn device) {
  uint32_t name = (uint32_t)id;
  uint64_t thread = id >> CS_RANGES_ID_THREAD_SHIFT;
  if ((id >> 32 & 1) && name && thread != 0 && thread < UINT64_C(1) << CS_THREAD_ID_BITS)
    cs_phases_record_on(name, CS_PHASE_END, device(), (uint32_t)thread, cs_ticks_now());
}

/* A mark: a phase of no length (START and END at one time), so readers that pair the two see it
 * and none leaves it open. */
void cs_ranges_mark(uint32_t name, cs_ranges_device_fn device) {
  uint64_t now = cs_ticks_now();
  int on = device();
  cs_phases_record_at(name, CS_PHASE_START, on, now);
  cs_phases_record_at(name, CS_PHASE_END, on, now);
}

/* Domains are few and created once: a lock and a scan. Equal names share a handle. */
nvtxDomainHandle_t cs_ranges_domain(const char *name) {
  if (!name) name = "";
  size_t len = strnlen(name, sizeof cs_ranges_domains[0].prefix - 3);
  pthread_mutex_lock(&cs_ranges_domain_lock);
  nvtxDomainHandle_t d = NULL;
  for (int i = 0; i < cs_ranges_domain_count && !d; i++)
    if (cs_ranges_domains[i].prefix_len == len + 2 && memcmp(cs_ranges_domains[i].prefix, name, len) == 0)
      d = &cs_ranges_domains[i];
  if (!d && cs_ranges_domain_count < CS_RANGES_MAX_DOMAINS) {
    d = &cs_ranges_domains[cs_ranges_domain_count++];
    memcpy(d->prefix, name, len);
    memcpy(d->prefix + len, "::", 3);
    d->prefix_len = len + 2;
  }
  pthread_mutex_unlock(&cs_ranges_domain_lock);
  return d; /* NULL past the limit: that domain's names go to the default domain */
}

nvtxDomainHandle_t cs_ranges_domain_w(const wchar_t *name) {
  char buf[CS_RANGES_NAME_MAX];
  cs_ranges_utf8(name, buf, sizeof buf);
  return cs_ranges_domain(buf);
}

void cs_ranges_name_thread(uint32_t thread, const char *name) {
  cs_phases_name_thread(thread, cs_phases_name(name ? name : "", CS_RANGES_NAME_MAX));
}

void cs_ranges_name_thread_w(uint32_t thread, const wchar_t *name) {
  cs_phases_name_thread(thread, cs_ranges_name_w(NULL, name));
}

/* ---- fork ---- */

static void cs_ranges_postfork_child(void) {
  cs_thread_id_postfork_child(); /* before anything records: the child's thread has its own id */
  cs_phases_clear();
  cs_pools_postfork_child();
}

void cs_ranges_install_fork_handler(void) {
  static atomic_bool installed;
  if (!atomic_exchange(&installed, true)) pthread_atfork(NULL, NULL, cs_ranges_postfork_child);
}

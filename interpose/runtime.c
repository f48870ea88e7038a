#include "interpose/runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "memviz/allocator_frames.h"

extern char **environ;

/* ---- options: parsed once; concurrent first callers wait for the one that parses ---- */

static cs_options_t cs_runtime_opts;
static cs_job_t cs_runtime_job_info;
static pthread_mutex_t cs_runtime_opts_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool cs_runtime_opts_ready;

const cs_options_t *cs_runtime_options(void) {
  if (atomic_load_explicit(&cs_runtime_opts_ready, memory_order_acquire)) return &cs_runtime_opts;
  pthread_mutex_lock(&cs_runtime_opts_lock);
  if (!atomic_load_explicit(&cs_runtime_opts_ready, memory_order_relaxed)) {
    cs_options_init(&cs_runtime_opts);
    cs_options_parse((const char *const *)environ, &cs_runtime_opts);
    cs_log_set_level(cs_runtime_opts.log);
    cs_options_log(&cs_runtime_opts);
    char why[160]; /* checked already: only a list the program filled first, or no memory, stops it */
    if (cs_runtime_opts.allocator_frames[0] != '\0' &&
        cs_allocator_frames_add_list(cs_runtime_opts.allocator_frames, why, sizeof why) != 0)
      cs_log_warn("CUDASNAP_ALLOCATOR_FRAMES is used only in part: %s", why);
    cs_job_parse((const char *const *)environ, &cs_runtime_job_info);
    if (gethostname(cs_runtime_job_info.host, sizeof cs_runtime_job_info.host - 1) != 0)
      cs_runtime_job_info.host[0] = '\0';
    atomic_store_explicit(&cs_runtime_opts_ready, true, memory_order_release);
  }
  pthread_mutex_unlock(&cs_runtime_opts_lock);
  return &cs_runtime_opts;
}

const cs_job_t *cs_runtime_job(void) {
  (void)cs_runtime_options();
  return &cs_runtime_job_info;
}

/* ---- the device -> allocators registry ---- */

static pthread_rwlock_t cs_registry_lock = PTHREAD_RWLOCK_INITIALIZER;
static cs_allocator_t *cs_registry[CS_MAX_DEVICES][CS_MAX_CONTEXTS_PER_DEVICE];

int cs_runtime_add_allocator(int device, cs_allocator_t *a) {
  if (device < 0 || device >= CS_MAX_DEVICES || !a) return -CS_EINVAL;
  int rc = -CS_EINVAL;
  pthread_rwlock_wrlock(&cs_registry_lock);
  for (int i = 0; i < CS_MAX_CONTEXTS_PER_DEVICE; i++) {
    if (cs_registry[device][i]) continue;
    cs_registry[device][i] = a;
    rc = 0;
    break;
  }
  pthread_rwlock_unlock(&cs_registry_lock);
  return rc;
}

void cs_runtime_remove_allocator(cs_allocator_t *a) {
  pthread_rwlock_wrlock(&cs_registry_lock);
  for (int d = 0; d < CS_MAX_DEVICES; d++)
    for (int i = 0; i < CS_MAX_CONTEXTS_PER_DEVICE; i++)
      if (cs_registry[d][i] == a) cs_registry[d][i] = NULL;
  pthread_rwlock_unlock(&cs_registry_lock);
}

int cs_runtime_for_each_allocator(int device, cs_runtime_allocator_fn fn, void *ctx) {
  if (device < 0 || device >= CS_MAX_DEVICES) return 0;
  int n = 0;
  pthread_rwlock_rdlock(&cs_registry_lock);
  for (int i = 0; i < CS_MAX_CONTEXTS_PER_DEVICE; i++) {
    cs_allocator_t *a = cs_registry[device][i];
    if (!a) continue;
    fn(ctx, a);
    n++;
  }
  pthread_rwlock_unlock(&cs_registry_lock);
  return n;
}

/* ---- out-of-memory answers past the cache ---- */

static _Atomic int64_t cs_passthrough_ooms[CS_MAX_DEVICES];

void cs_runtime_count_passthrough_oom(int device) {
  if (device < 0 || device >= CS_MAX_DEVICES) return;
  atomic_fetch_add_explicit(&cs_passthrough_ooms[device], 1, memory_order_relaxed);
}

int64_t cs_runtime_passthrough_ooms(int device) {
  if (device < 0 || device >= CS_MAX_DEVICES) return 0;
  return atomic_load_explicit(&cs_passthrough_ooms[device], memory_order_relaxed);
}

void cs_runtime_reset_passthrough_ooms(int device) {
  for (int d = 0; d < CS_MAX_DEVICES; d++)
    if (device < 0 || d == device) atomic_store_explicit(&cs_passthrough_ooms[d], 0, memory_order_relaxed);
}

/* ---- current device ---- */

static _Atomic(cs_runtime_current_device_fn) cs_current_device_fn;

void cs_runtime_set_current_device_fn(cs_runtime_current_device_fn fn) {
  atomic_store_explicit(&cs_current_device_fn, fn, memory_order_release);
}

int cs_runtime_resolve_device(int device) {
  if (device >= 0) return device < CS_MAX_DEVICES ? device : -1;
  if (device != -1) return -1;
  cs_runtime_current_device_fn fn = atomic_load_explicit(&cs_current_device_fn, memory_order_acquire);
  return fn ? fn() : 0;
}

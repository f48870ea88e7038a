/* SPDX-License-Identifier: Apache-2.0 */
#include "process/runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

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

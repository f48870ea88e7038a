/* SPDX-License-Identifier: Apache-2.0 */
/* libcudasnap.so's load and unload in a process: what the constructor does before main (the
 * functions interposed from the start find what they call next; CUDASNAP_CHILDREN=0 takes cudasnap
 * out of LD_PRELOAD; the signal handler learns how to tell a thread inside a CUDA call), and what
 * the destructor says at the end of a process that cudasnap saw no CUDA call of. Activation, at
 * the first CUDA call, is process/lifecycle.h's. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/cs_log.h"
#include "interpose/cudart_api.h"
#include "interpose/dlclose.h"
#include "interpose/exit.h"
#include "interpose/guard.h"
#include "interpose/hooks_runtime.h"
#include "interpose/nvtx.h"
#include "interpose/preload_env.h"
#include "process/lifecycle.h"
#include "process/runtime.h"
#include "process/signals.h"
#include "real/libc_dlsym.h"
#include "real/real.h"

/* ---- children ---- */

/* CUDASNAP_CHILDREN=0: processes started from this one do not load cudasnap. Decided here, before
 * main, because a child may be started before the first CUDA call. Any other value is checked
 * (with a warning if bad) when the options are parsed. */
static void cs_preload_follow_children(void) {
  const char *children = getenv("CUDASNAP_CHILDREN");
  static const char *const off[] = {"0", "false", "no", "off"};
  bool follow = true;
  for (size_t i = 0; children && i < sizeof off / sizeof off[0]; i++)
    if (strcasecmp(children, off[i]) == 0) follow = false;
  if (follow) return;
  const char *preload = getenv("LD_PRELOAD");
  if (!preload) return;
  size_t len = strlen(preload);
  char buf[4096];
  if (len >= sizeof buf) return;
  memcpy(buf, preload, len + 1);
  if (!cs_preload_env_strip(buf)) return;
  if (buf[0]) setenv("LD_PRELOAD", buf, 1);
  else unsetenv("LD_PRELOAD");
}

/* ---- a dlsym overrider ahead of cudasnap ---- */

/* The dlsym the program's lookups reach first, when it is not cudasnap's (another preload, or one
 * in /etc/ld.so.preload). If it does not pass lookups on, cudasnap never sees the driver: every
 * lookup, even of cuInit, goes past it (interposition.md section 4.2, pitfall 5). */
void cs_dlsym_entry(void);
static void *cs_preload_first_dlsym;

static void cs_preload_note_dlsym_order(void) {
  void *global = cs_libc_dlsym(RTLD_DEFAULT, "dlsym");
  if (global && global != cs_ptr_from_fn(cs_dlsym_entry)) cs_preload_first_dlsym = global;
}

/* At exit, without calling CUDA: the program loaded the driver, cudasnap saw none of it, and
 * another dlsym comes first: say so, since the profile is empty for that reason. */
static void cs_preload_report_blindness(void) {
  if (atomic_load(&cs_lifecycle_active) || !cs_preload_first_dlsym || !cs_nvtx_library_preloaded()) return;
  void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!driver) return;
  dlclose(driver);
  Dl_info info;
  const char *who = dladdr(cs_preload_first_dlsym, &info) && info.dli_fname ? info.dli_fname : "another library";
  cs_log_warn("this program used the CUDA driver, but cudasnap saw none of its calls: %s defines dlsym "
              "ahead of cudasnap and does not pass lookups on; put libcudasnap.so first in LD_PRELOAD",
              who);
}

/* ---- a program `cudasnap run` started that never used CUDA ---- */

/* `cudasnap run` puts its own pid, which the program keeps across exec, in _CUDASNAP_RUN_PID (a
 * name outside the CUDASNAP_ table: no unknown-variable warning). Only that process, and only if
 * it started no child (a shell's children make their own snapshots), says at exit that it wrote
 * nothing because it never called CUDA: otherwise the user waits for a file that never comes. */
static bool cs_preload_run_started;
static bool cs_preload_forked;

static void cs_preload_note_fork(void) { cs_preload_forked = true; }

static void cs_preload_note_run(void) {
  const char *run = getenv("_CUDASNAP_RUN_PID");
  char *end;
  long pid = run ? strtol(run, &end, 10) : 0;
  if (!run || *end != '\0' || pid != (long)getpid()) return;
  cs_preload_run_started = true;
  pthread_atfork(NULL, cs_preload_note_fork, NULL);
}

/* The names of the runtime's errors a program without a usable driver gets (no call to the
 * runtime's cudaGetErrorName at exit). */
static const char *cs_preload_error_name(int error) {
  switch (error) {
  case cudaErrorInitializationError: return "cudaErrorInitializationError";
  case cudaErrorStubLibrary: return "cudaErrorStubLibrary";
  case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
  case cudaErrorNoDevice: return "cudaErrorNoDevice";
  default: return NULL;
  }
}

/* Why the program's runtime calls failed, where the process tells: the driver never loaded (the
 * runtime loads it at its first call; it is not in the process at exit), or the error's own. */
static void cs_preload_failure_why(int error, char *why, size_t len) {
  void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver != NULL) dlclose(driver);
  if (driver == NULL)
    snprintf(why, len, "no CUDA driver found: libcuda.so.1 could not be loaded (LD_LIBRARY_PATH, the driver's "
                       "installation)");
  else if (error == cudaErrorNoDevice)
    snprintf(why, len, "the driver sees no CUDA device");
  else
    snprintf(why, len, "the driver was loaded but the runtime could not use it");
}

static void cs_preload_report_unused(void) {
  if (!cs_preload_run_started || cs_preload_forked || atomic_load(&cs_lifecycle_active)) return;
  (void)cs_runtime_options(); /* CUDASNAP_LOG=quiet silences this too */
  char exe[256];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  const char *name = strrchr(exe, '/');
  name = name ? name + 1 : "the program";
  int fn, error;
  if (!cs_rt_first_failure(&fn, &error) || fn < 0 || fn >= CS_FN_COUNT) {
    cs_log_info("%s made no CUDA call: nothing to profile, no snapshot written", name);
    return;
  }
  /* It called CUDA, and the calls failed before any reached a driver: say so, not that it made
   * none (a user looks for the wrong cause). */
  char why[160], code[48];
  const char *error_name = cs_preload_error_name(error);
  if (error_name) snprintf(code, sizeof code, "%s", error_name);
  else snprintf(code, sizeof code, "error %d", error);
  cs_preload_failure_why(error, why, sizeof why);
  cs_log_info("%s's CUDA calls failed (%s returned %s): %s; nothing to profile, no snapshot written", name,
              cs_fn_info[fn].name, code, why);
}

__attribute__((constructor)) static void cs_preload_constructor(void) {
  cs_preload_follow_children();
  cs_preload_note_run();
  cs_preload_note_dlsym_order();
  /* _exit, the signal functions and dlclose are interposed from the start; what they call next is
   * found now, while calling the loader is safe */
  cs_exit_resolve();
  cs_signals_resolve();
  cs_dlclose_resolve();
  cs_signals_set_in_call_fn(cs_guard_in_call);
}

__attribute__((destructor)) static void cs_preload_destructor(void) {
  cs_preload_report_blindness();
  cs_preload_report_unused();
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Activation and fork (contract in process/lifecycle.h). */
#include "process/lifecycle.h"

#include <pthread.h>
#include <unistd.h>

#include "common/cs_log.h"
#include "device/contexts.h"
#include "device/driver_watch.h"
#include "device/graphs.h"
#include "device/mempools.h"
#include "device/passthrough_mem.h"
#include "device/recorder.h"
#include "process/dump.h"
#include "process/ending.h"
#include "process/runtime.h"
#include "process/signals.h"

atomic_bool cs_lifecycle_active;
static pthread_mutex_t cs_lifecycle_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- fork: every module that owns a lock takes it before fork, in one order ---- */

static void cs_lifecycle_prefork(void) {
  cs_contexts_prefork();
  cs_passthrough_prefork();
  cs_mempools_prefork();
}
static void cs_lifecycle_postfork_parent(void) {
  cs_mempools_postfork(false);
  cs_passthrough_postfork(false);
  cs_contexts_postfork(false);
}

/* The child cannot use the parent's CUDA contexts (CUDA does not survive fork); it starts with
 * no context, as a fresh process would, and never touches the parent's device memory. */
static void cs_lifecycle_postfork_child(void) {
  pthread_mutex_init(&cs_lifecycle_lock, NULL);
  cs_record_postfork_child(); /* first: the histories in the parent's file become the child's memory */
  cs_mempools_postfork(true);
  cs_passthrough_postfork(true);
  cs_contexts_postfork(true);
  cs_driver_watch_postfork_child();
  cs_dump_postfork_child();
  cs_ending_postfork_child();
  cs_graphs_postfork_child();
  cs_signals_postfork_child();
  /* The child activates anew at its own first CUDA call: its snapshots are its own. */
  atomic_store(&cs_lifecycle_active, false);
}

int cs_lifecycle_thread_device(void) {
  return atomic_load_explicit(&cs_lifecycle_active, memory_order_acquire) ? cs_contexts_thread_device() : 0;
}

void cs_lifecycle_activate_slow(void) {
  pthread_mutex_lock(&cs_lifecycle_lock);
  if (!atomic_load_explicit(&cs_lifecycle_active, memory_order_relaxed)) {
    const cs_options_t *opts = cs_runtime_options();
    static bool fork_handlers; /* inherited by a child, which activates again */
    if (!fork_handlers) pthread_atfork(cs_lifecycle_prefork, cs_lifecycle_postfork_parent, cs_lifecycle_postfork_child);
    fork_handlers = true;
    cs_passthrough_start(opts); /* memory passed through keeps a history from now on */
    cs_record_start(opts);
    cs_contexts_start(opts);
    cs_dump_start();
    cs_signals_arm(opts);
    cs_log_debug("active in pid %ld", (long)getpid());
    atomic_store_explicit(&cs_lifecycle_active, true, memory_order_release);
  }
  pthread_mutex_unlock(&cs_lifecycle_lock);
}

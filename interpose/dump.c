#include "interpose/dump.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cs_log.h"
#include "interpose/contexts.h"
#include "interpose/reconcile.h"
#include "interpose/record.h"
#include "interpose/runtime.h"
#include "memviz/emit.h"
#include "snapshot/leaks.h"
#include "memviz/output.h"
#include "memviz/viewer_limit.h"
#include "snapshot/pools.h"
#include "snapshot/snapshot.h"

static const char *const cs_trigger_names[] = {"exit", "signal", "oom", "api"};

static pthread_mutex_t cs_dump_lock = PTHREAD_MUTEX_INITIALIZER;
static int cs_dump_number;          /* dumps attempted so far; %n of the next is this + 1 */
static atomic_long cs_dump_owner;   /* the process whose snapshots these are */

/* ---- what the snapshot says about the process ---- */

/* argv from /proc/self/cmdline: the library has no access to main's arguments. */
typedef struct cs_dump_process_s {
  char cmdline[4096];
  const char *argv[64];
  char exe[256];
  char host[256];
} cs_dump_process_t;

static void cs_dump_process(cs_dump_process_t *p) {
  memset(p, 0, sizeof *p);
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, p->cmdline, sizeof p->cmdline - 1) : -1;
  if (fd >= 0) close(fd);
  size_t argc = 0;
  for (ssize_t i = 0; i < n && argc < 63; i += (ssize_t)strlen(p->cmdline + i) + 1) p->argv[argc++] = p->cmdline + i;
  char path[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
  const char *exe = "unknown";
  if (len > 0) {
    path[len] = '\0';
    exe = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  }
  snprintf(p->exe, sizeof p->exe, "%.*s", (int)sizeof p->exe - 1, exe);
  if (gethostname(p->host, sizeof p->host - 1) != 0) snprintf(p->host, sizeof p->host, "unknown");
}

static cs_emit_format_t cs_dump_format(const cs_options_t *opts, const char *path) {
  if (opts->format == CS_FORMAT_JSON) return CS_EMIT_JSON;
  if (opts->format == CS_FORMAT_PICKLE) return CS_EMIT_PICKLE;
  const char *dot = strrchr(path, '.');
  bool pickle = dot && (strcmp(dot, ".pickle") == 0 || strcmp(dot, ".pkl") == 0);
  return pickle ? CS_EMIT_PICKLE : CS_EMIT_JSON;
}

static void cs_dump_size_text(uint64_t bytes, char *buf, size_t len) {
  if (bytes >= (1u << 20)) snprintf(buf, len, "%.1f MiB", (double)bytes / (1 << 20));
  else if (bytes >= 1024) snprintf(buf, len, "%.1f KiB", (double)bytes / 1024);
  else snprintf(buf, len, "%llu B", (unsigned long long)bytes);
}

/* Progress of a long dump, on stderr when it is a terminal: nothing for the first second, then
 * one line rewritten in place, ended when the dump is done. */
typedef struct cs_dump_progress_s {
  struct timespec start;
  bool shown;
} cs_dump_progress_t;

static double cs_dump_elapsed(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static void cs_dump_show_progress(void *ctx, size_t done, size_t total) {
  cs_dump_progress_t *p = ctx;
  if (cs_dump_elapsed(&p->start) < 1.0 || cs_log_get_level() == CS_LOG_QUIET) return;
  char line[96];
  int n = snprintf(line, sizeof line, "\rcudasnap: writing snapshot: %3d%% (%zu of %zu items)",
                   total ? (int)(100.0 * (double)done / (double)total) : 100, done, total);
  if (n > 0) (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  p->shown = true;
}

/* Serialize the state to path. Returns 0 or an errno. */
static int cs_dump_to_file(const cs_snap_state_t *state, const cs_snapshot_meta_t *meta, const char *path,
                           cs_output_t *out, uint64_t *bytes) {
  int err = cs_output_open(out, path);
  if (err) return err;
  static cs_fd_sink_t sink; /* 64 KiB; dumps are serialized by cs_dump_lock */
  cs_fd_sink_init(&sink, out->fd);
  cs_emitter_t *e = cs_emitter_create(cs_dump_format(meta->options, path), cs_fd_sink(&sink), 2);
  if (!e) {
    cs_output_abort(out);
    return ENOMEM;
  }
  cs_symbolizer_t *sym = cs_record_intern() ? cs_symbolizer_create() : NULL;
  cs_dump_progress_t progress = {.shown = false};
  clock_gettime(CLOCK_MONOTONIC, &progress.start);
  cs_snapshot_meta_t with_progress = *meta;
  if (isatty(STDERR_FILENO)) {
    with_progress.progress = cs_dump_show_progress;
    with_progress.progress_ctx = &progress;
  }
  err = cs_snapshot_write(state, cs_record_intern(), sym, &with_progress, e);
  if (progress.shown) (void)!write(STDERR_FILENO, "\n", 1);
  if (sym) cs_symbolizer_destroy(sym);
  int flushed = cs_fd_sink_flush(&sink);
  if (!err) err = flushed;
  *bytes = sink.total;
  if (err) {
    cs_output_abort(out);
    return err;
  }
  return cs_output_commit(out, path);
}

/* The exit leak report, with frames named when stacks were recorded. */
static void cs_dump_report_leaks(const cs_snap_state_t *state) {
  cs_symbolizer_t *sym = cs_record_intern() ? cs_symbolizer_create() : NULL;
  cs_leak_report(state, cs_record_intern(), sym);
  if (sym) cs_symbolizer_destroy(sym);
}

int cs_dump_write(cs_trigger_t trigger, const char *path) {
  const cs_options_t *opts = cs_runtime_options();
  pthread_mutex_lock(&cs_dump_lock);
  int number = ++cs_dump_number;
  /* on the heap: 70 KB, and cudasnap_dump may run on a program's thread with a small stack */
  cs_snap_state_t *state = malloc(sizeof *state);
  if (!state) {
    cs_log_error("cannot take a snapshot: out of host memory");
    pthread_mutex_unlock(&cs_dump_lock);
    return -1;
  }
  int rc = -1;
  cs_pool_list_t pools;
  if (cs_pools_copy(&pools) != 0) cs_log_warn("no memory to copy the NVTX pools; the snapshot draws none");
  if (cs_snap_state_init(state, cs_contexts_device_count()) == 0) {
    cs_contexts_snapshot(state, true);
    /* the driver's figures, right after the copy; never at exit, where cudasnap makes no CUDA
     * call (the runtime may be torn down) */
    if (trigger != CS_TRIGGER_EXIT) cs_reconcile_query(state);
    cs_snap_state_finish(state);
    size_t drawn = 0;
    if (cs_snap_state_add_pools(state, &pools, &drawn) != 0)
      cs_log_warn("no memory to draw the NVTX pools; the snapshot shows their blocks whole");
    if (drawn < pools.heap_count)
      cs_log_debug("%zu of %zu NVTX heaps lie in no allocated block: not drawn", pools.heap_count - drawn,
                   pools.heap_count);
  }
  cs_dump_process_t proc;
  cs_dump_process(&proc);
  char name[4096];
  cs_output_fields_t fields = {.executable = proc.exe, .pid = (long)getpid(), .host = proc.host,
                               .rank = cs_output_rank(), .dump_number = number,
                               .trigger = cs_trigger_names[trigger]};
  if (state->error) {
    cs_log_error("cannot take a snapshot: out of host memory");
  } else if (cs_snap_state_empty(state)) {
    /* the viewer cannot open an empty snapshot; at exit this is no news (the program used CUDA
     * without allocating), on request it is the answer */
    if (trigger == CS_TRIGGER_EXIT) cs_log_debug("no device memory was allocated: no snapshot written");
    else cs_log_info("no device memory allocated yet: no snapshot written (%s)", cs_trigger_names[trigger]);
  } else if (!path && cs_output_expand(opts->output, &fields, name, sizeof name) != 0) {
    cs_log_error("cannot take a snapshot: the name from CUDASNAP_OUTPUT is too long");
  } else {
    if (!path) path = name;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cs_snapshot_meta_t meta = {.version = CS_VERSION_STRING, .pid = (long)getpid(), .argv = proc.argv,
                               .host = proc.host, .trigger = cs_trigger_names[trigger],
                               .dump_number = number,
                               .time_us = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u,
                               .options = opts, .alloc_conf_text = opts->alloc_conf_text};
    cs_phase_list_t phases;
    if (cs_phases_copy(&phases) != 0) cs_log_warn("no memory to copy the NVTX phases; the snapshot has none");
    meta.phases = &phases;
    meta.pools = &pools;
    cs_output_t out;
    uint64_t bytes = 0;
    int err = cs_dump_to_file(state, &meta, path, &out, &bytes);
    cs_phase_list_free(&phases);
    if (err) {
      cs_log_error("cannot write snapshot %s: %s", path, strerror(err));
    } else {
      char size[32];
      cs_dump_size_text(bytes, size, sizeof size);
      bool pickle = cs_dump_format(opts, out.final_path) == CS_EMIT_PICKLE;
      cs_log_info("wrote %s (%s, %zu events%s): %s", out.final_path, size, cs_snap_state_events(state),
                  state->dropped ? ", oldest dropped" : "",
                  pickle ? "open it at https://pytorch.org/memory_viz or with python -m torch.cuda._memory_viz"
                         : cs_viewer_json_advice(bytes));
      rc = 0;
    }
    cs_contexts_mark_snapshot(state);
  }
  if (trigger == CS_TRIGGER_EXIT && !state->error) cs_dump_report_leaks(state);
  cs_pool_list_free(&pools);
  cs_snap_state_free(state);
  free(state);
  pthread_mutex_unlock(&cs_dump_lock);
  return rc;
}

void cs_dump_on_oom(void) {
  if (cs_runtime_options()->dump_on & CS_DUMP_ON_OOM) (void)cs_dump_write(CS_TRIGGER_OOM, NULL);
}

/* ---- exit ---- */

/* Runs from exit(); the CUDA runtime may already be torn down, and nothing here calls CUDA. */
static void cs_dump_at_exit(void) {
  if (atomic_load(&cs_dump_owner) != (long)getpid()) return; /* a fork child's inherited handler */
  bool snapshot = cs_runtime_options()->dump_on & CS_DUMP_ON_EXIT;
  if (snapshot) {
    (void)cs_dump_write(CS_TRIGGER_EXIT, NULL);
    return;
  }
  /* no snapshot wanted, but the leak report still is */
  cs_snap_state_t *state = malloc(sizeof *state);
  if (!state) return;
  if (cs_snap_state_init(state, cs_contexts_device_count()) == 0) {
    cs_contexts_snapshot(state, false);
    cs_dump_report_leaks(state);
  }
  cs_snap_state_free(state);
  free(state);
}

/* ---- the signal: the handler writes one byte; the control thread does the work ---- */

static int cs_dump_pipe[2] = {-1, -1};
static struct sigaction cs_dump_previous;

static void cs_dump_on_signal(int sig, siginfo_t *info, void *uctx) {
  int saved = errno;
  char token = 's';
  if (cs_dump_pipe[1] >= 0) (void)!write(cs_dump_pipe[1], &token, 1);
  errno = saved;
  /* a handler the program installed before cudasnap still runs */
  if (cs_dump_previous.sa_flags & SA_SIGINFO) {
    if (cs_dump_previous.sa_sigaction) cs_dump_previous.sa_sigaction(sig, info, uctx);
  } else if (cs_dump_previous.sa_handler != SIG_DFL && cs_dump_previous.sa_handler != SIG_IGN) {
    cs_dump_previous.sa_handler(sig);
  }
}

static void *cs_dump_control_thread(void *arg) {
  (void)arg;
  char token;
  for (;;) {
    ssize_t n = read(cs_dump_pipe[0], &token, 1);
    if (n == 1) (void)cs_dump_write(CS_TRIGGER_SIGNAL, NULL);
    else if (n == 0 || (n < 0 && errno != EINTR)) return NULL;
  }
}

static void cs_dump_start_signal(int sig) {
  if (cs_dump_pipe[0] >= 0) return;
  if (pipe2(cs_dump_pipe, O_CLOEXEC) != 0) {
    cs_log_warn("cannot create the signal pipe (%s); snapshots on signal %d are off", strerror(errno), sig);
    return;
  }
  (void)fcntl(cs_dump_pipe[1], F_SETFL, O_NONBLOCK); /* a burst of signals never blocks a handler */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits the mask: no signal lands there */
  pthread_t thread;
  int err = pthread_create(&thread, NULL, cs_dump_control_thread, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err) {
    cs_log_warn("cannot start the snapshot thread (%s); snapshots on signal %d are off", strerror(err), sig);
    return;
  }
  pthread_detach(thread);
  /* A fork child that activates again finds the handler it inherited: keep it, or it would chain
   * to itself. */
  struct sigaction current;
  if (sigaction(sig, NULL, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
      current.sa_sigaction == cs_dump_on_signal)
    return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = cs_dump_on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, &cs_dump_previous) != 0)
    cs_log_warn("cannot install the handler for signal %d (%s)", sig, strerror(errno));
}

void cs_dump_start(void) {
  static atomic_bool exit_handler_registered;
  const cs_options_t *opts = cs_runtime_options();
  atomic_store(&cs_dump_owner, (long)getpid());
  if (!atomic_exchange(&exit_handler_registered, true)) atexit(cs_dump_at_exit);
  if ((opts->dump_on & CS_DUMP_ON_SIGNAL) && opts->signal > 0) cs_dump_start_signal(opts->signal);
}

void cs_dump_postfork_child(void) {
  pthread_mutex_init(&cs_dump_lock, NULL);
  cs_dump_number = 0;
  /* The parent's control thread is not here; its pipe must not carry the child's signals. */
  for (int i = 0; i < 2; i++) {
    if (cs_dump_pipe[i] >= 0) close(cs_dump_pipe[i]);
    cs_dump_pipe[i] = -1;
  }
}

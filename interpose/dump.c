#include "interpose/dump.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cs_deadline.h"
#include "common/cs_log.h"
#include "interpose/contexts.h"
#include "interpose/ending.h"
#include "interpose/process_info.h"
#include "interpose/reconcile.h"
#include "interpose/record.h"
#include "interpose/runtime.h"
#include "interpose/signals.h"
#include "memviz/emit.h"
#include "snapshot/leaks.h"
#include "memviz/output.h"
#include "memviz/viewer_limit.h"
#include "snapshot/pools.h"
#include "snapshot/snapshot.h"

static const char *const cs_trigger_names[] = {"exit", "signal", "oom", "api", "crash", "term"};

const char *cs_dump_trigger_name(cs_trigger_t trigger) {
  return (unsigned)trigger < CS_ARRAY_SIZE(cs_trigger_names) ? cs_trigger_names[trigger] : "unknown";
}

static pthread_mutex_t cs_dump_lock = PTHREAD_MUTEX_INITIALIZER;
static int cs_dump_number;          /* dumps attempted so far; %n of the next is this + 1 */
static atomic_long cs_dump_owner;   /* the process whose snapshots these are */
static CS_TLS bool cs_dump_here;    /* this thread is writing a dump */
static atomic_ulong cs_dump_ticks;  /* progress of any dump (cs_dump_progress) */

/* The final snapshot, at exit or as the process ends otherwise: written once. */
enum { CS_FINAL_NONE = 0, CS_FINAL_STARTED = 1, CS_FINAL_FINISHED = 2 };
static atomic_int cs_dump_final_state;

/* The temporary file of the dump under way, for cs_dump_abandon. */
static char cs_dump_temp[4096];
static atomic_bool cs_dump_temp_open;

static void cs_dump_tick(void) { atomic_fetch_add_explicit(&cs_dump_ticks, 1, memory_order_relaxed); }
uint64_t cs_dump_progress(void) { return atomic_load_explicit(&cs_dump_ticks, memory_order_relaxed); }
bool cs_dump_running_here(void) { return cs_dump_here; }
bool cs_dump_owns_process(void) { return atomic_load(&cs_dump_owner) == (long)getpid(); }
bool cs_dump_final_started(void) { return atomic_load(&cs_dump_final_state) != CS_FINAL_NONE; }
bool cs_dump_final_finished(void) { return atomic_load(&cs_dump_final_state) == CS_FINAL_FINISHED; }

void cs_dump_abandon(void) {
  if (atomic_exchange(&cs_dump_temp_open, false)) unlink(cs_dump_temp);
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
  bool terminal; /* shown only on a terminal; counted (cs_dump_tick) always */
  bool shown;
} cs_dump_progress_t;

static double cs_dump_elapsed(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static void cs_dump_show_progress(void *ctx, size_t done, size_t total) {
  cs_dump_progress_t *p = ctx;
  cs_dump_tick();
  if (!p->terminal || cs_dump_elapsed(&p->start) < 1.0 || cs_log_get_level() == CS_LOG_QUIET) return;
  char line[96];
  int n = snprintf(line, sizeof line, "\rcudasnap: writing snapshot: %3d%% (%zu of %zu items)",
                   total ? (int)(100.0 * (double)done / (double)total) : 100, done, total);
  if (n > 0) (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  p->shown = true;
}

/* Serialize the state to path, naming frames through sym (NULL: stacks off). Returns 0 or an errno. */
static int cs_dump_to_file(const cs_snap_state_t *state, const cs_snapshot_meta_t *meta, cs_symbolizer_t *sym,
                           const char *path, cs_output_t *out, uint64_t *bytes) {
  int err = cs_output_open(out, path);
  if (err) return err;
  static cs_fd_sink_t sink; /* 64 KiB; dumps are serialized by cs_dump_lock */
  cs_fd_sink_init(&sink, out->fd);
  cs_emitter_t *e = cs_emitter_create(cs_dump_format(meta->options, path), cs_fd_sink(&sink), 2);
  if (!e) {
    cs_output_abort(out);
    return ENOMEM;
  }
  if (strlen(out->temp_path) < sizeof cs_dump_temp) {
    memcpy(cs_dump_temp, out->temp_path, strlen(out->temp_path) + 1);
    atomic_store(&cs_dump_temp_open, true);
  }
  cs_dump_progress_t progress = {.terminal = isatty(STDERR_FILENO), .shown = false};
  clock_gettime(CLOCK_MONOTONIC, &progress.start);
  cs_snapshot_meta_t with_progress = *meta;
  with_progress.progress = cs_dump_show_progress;
  with_progress.progress_ctx = &progress;
  err = cs_snapshot_write(state, cs_record_intern(), sym, &with_progress, e);
  if (progress.shown) (void)!write(STDERR_FILENO, "\n", 1);
  int flushed = cs_fd_sink_flush(&sink);
  if (!err) err = flushed;
  *bytes = sink.total;
  if (err) {
    atomic_store(&cs_dump_temp_open, false);
    cs_output_abort(out);
    return err;
  }
  err = cs_output_commit(out, path);
  atomic_store(&cs_dump_temp_open, false);
  return err;
}

/* What one dump does. */
typedef struct cs_dump_how_s {
  cs_trigger_t trigger;
  const char *path; /* NULL: named from CUDASNAP_OUTPUT */
  bool snapshot;    /* write the file (else only the leak report) */
  bool leaks;       /* the leak report after it */
  bool ending;      /* the process ends: no CUDA call, no `snapshot` entry in the histories */
} cs_dump_how_t;

/* The snapshot written as the process ends (exit, _exit, a crash, a termination signal). */
static bool cs_dump_is_final(cs_trigger_t trigger) {
  return trigger == CS_TRIGGER_EXIT || trigger == CS_TRIGGER_CRASH || trigger == CS_TRIGGER_TERM;
}

/* Devices as "device 3" or "devices 0, 2", for the best-effort note. */
static void cs_dump_devices_text(uint64_t devices, char *buf, size_t len) {
  int count = __builtin_popcountll(devices);
  size_t used = (size_t)snprintf(buf, len, "device%s", count > 1 ? "s" : "");
  for (int d = 0, n = 0; d < 64 && used < len; d++)
    if (devices & (UINT64_C(1) << d))
      used += (size_t)snprintf(buf + used, len - used, "%s %d", n++ ? "," : "", d);
}

/* ---- a dump in two steps: the copy (under the allocators' locks), then the writing ---- */

/* The state one dump writes, copied at its moment. */
typedef struct cs_dump_copy_s {
  cs_snap_state_t *state;     /* on the heap (70 KB); NULL: no host memory */
  cs_pool_list_t pools;
  uint64_t left_out;          /* devices left out: their allocator's lock was not had in time */
  bool passthrough_left_out;  /* the memory passed through, likewise */
  bool pools_left_out;        /* the NVTX pools, likewise */
  uint64_t time_us;           /* when copied, us since the epoch */
  int64_t allocations;        /* successful allocations so far, every device (an OOM's recovery) */
} cs_dump_copy_t;

static int64_t cs_dump_allocations(const cs_snap_state_t *state) {
  int64_t n = 0;
  for (int d = 0; d < state->device_count && d < CS_SNAP_MAX_DEVICES; d++)
    n += state->stats[d].allocation[CS_STAT_ALL].allocated;
  return n;
}

/* Copy the state how asks for. Returns 0, or -1 when host memory ran out (reported). Takes no
 * lock of the dump's own: an OOM's copy is taken on the allocating thread while another dump may
 * be writing. Every lock it takes, it takes within CS_ENDING_LOCK_WAIT_MS in all, whatever the
 * trigger, and leaves out what that lock guards when it is not had (`best_effort`): its holder may
 * be stuck in the driver for good, and a snapshot must neither hang the process's ending nor a
 * program thread that asked for it. */
static int cs_dump_copy_take(cs_dump_copy_t *c, const cs_dump_how_t *how) {
  memset(c, 0, sizeof *c);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  c->time_us = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
  /* on the heap: cudasnap_dump may run on a program's thread with a small stack */
  c->state = malloc(sizeof *c->state);
  if (!c->state) {
    cs_log_error("cannot take a snapshot: out of host memory");
    return -1;
  }
  uint64_t deadline = cs_deadline_in_ms(CS_ENDING_LOCK_WAIT_MS);
  int pools = cs_pools_copy(&c->pools, deadline);
  if (pools < 0) cs_log_warn("no memory to copy the NVTX pools; the snapshot draws none");
  c->pools_left_out = pools > 0;
  cs_snap_state_t *state = c->state;
  if (cs_snap_state_init(state, cs_contexts_device_count()) == 0) {
    c->left_out = cs_contexts_snapshot(state, how->snapshot, deadline, &c->passthrough_left_out);
    /* the driver's figures, right after the copy; never as the process ends, where cudasnap makes
     * no CUDA call (at exit the runtime may be torn down; at a crash the driver may be what
     * crashed, or the ending thread may hold its locks) */
    if (how->snapshot && !cs_dump_is_final(how->trigger)) cs_reconcile_query(state, deadline);
    if (how->snapshot) {
      cs_snap_state_finish(state);
      size_t drawn = 0;
      if (cs_snap_state_add_pools(state, &c->pools, &drawn) != 0)
        cs_log_warn("no memory to draw the NVTX pools; the snapshot shows their blocks whole");
      if (drawn < c->pools.heap_count)
        cs_log_debug("%zu of %zu NVTX heaps lie in no allocated block: not drawn", c->pools.heap_count - drawn,
                     c->pools.heap_count);
    }
  }
  c->allocations = cs_dump_allocations(state);
  return 0;
}

static void cs_dump_copy_free(cs_dump_copy_t *c) {
  if (!c->state) return;
  cs_pool_list_free(&c->pools);
  cs_snap_state_free(c->state);
  free(c->state);
  c->state = NULL;
}

/* What an OOM snapshot says of its OOM (cs_snapshot_meta_t). */
typedef struct cs_dump_oom_note_s {
  cs_oom_recovery_t recovered;
  uint64_t coalesced;
} cs_dump_oom_note_t;

/* Write a copy: the file (how->snapshot) and the leak report (how->leaks). Returns 0 when a file
 * was written, else -1 (the reason was reported). pre: cs_dump_lock held. */
static int cs_dump_write_copy(cs_dump_copy_t *c, const cs_dump_how_t *how, const cs_dump_oom_note_t *oom) {
  const cs_options_t *opts = cs_runtime_options();
  const char *trigger_name = cs_dump_trigger_name(how->trigger);
  int number = how->snapshot ? ++cs_dump_number : cs_dump_number;
  cs_snap_state_t *state = c->state;
  cs_dump_tick();
  /* one symbolizer for the file and the leak report: each distinct frame is named once */
  cs_symbolizer_t *sym = cs_record_intern() && !state->error ? cs_symbolizer_create() : NULL;
  cs_dump_tick();
  char best_effort[320] = "";
  bool incomplete = c->left_out || c->passthrough_left_out || c->pools_left_out;
  if (c->left_out) {
    char devices[160];
    cs_dump_devices_text(c->left_out, devices, sizeof devices);
    snprintf(best_effort, sizeof best_effort, "%s left out: %s allocator stayed locked for %d ms", devices,
             __builtin_popcountll(c->left_out) > 1 ? "their" : "its", CS_ENDING_LOCK_WAIT_MS);
  }
  if (c->passthrough_left_out) {
    size_t used = strlen(best_effort);
    snprintf(best_effort + used, sizeof best_effort - used,
             "%smemory passed through left out: its lock stayed held for %d ms", used ? "; " : "",
             CS_ENDING_LOCK_WAIT_MS);
  }
  if (c->pools_left_out) {
    size_t used = strlen(best_effort);
    snprintf(best_effort + used, sizeof best_effort - used,
             "%sNVTX pools left out: their lock stayed held for %d ms", used ? "; " : "", CS_ENDING_LOCK_WAIT_MS);
  }
  cs_process_info_t proc;
  cs_process_info_read(&proc);
  char name[4096];
  cs_output_fields_t fields = {.executable = proc.exe, .pid = (long)getpid(), .host = proc.host,
                               .rank = cs_output_rank(), .dump_number = number, .trigger = trigger_name};
  const char *path = how->path;
  int rc = -1;
  if (!how->snapshot) {
    /* the leak report alone */
    if (incomplete) cs_log_warn("the leak report is incomplete: %s", best_effort);
  } else if (state->error) {
    cs_log_error("cannot take a snapshot: out of host memory");
  } else if (cs_snap_state_empty(state)) {
    /* the viewer cannot open an empty snapshot; at exit this is no news (the program used CUDA
     * without allocating), on request it is the answer */
    if (incomplete) cs_log_error("no snapshot at %s: %s", trigger_name, best_effort);
    else if (how->trigger == CS_TRIGGER_EXIT) cs_log_debug("no device memory was allocated: no snapshot written");
    else cs_log_info("no device memory allocated yet: no snapshot written (%s)", trigger_name);
  } else if (!path && cs_output_expand(opts->output, &fields, name, sizeof name) != 0) {
    cs_log_error("cannot take a snapshot: the name from CUDASNAP_OUTPUT is too long");
  } else {
    if (!path) path = name;
    cs_snapshot_meta_t meta = {.version = CS_VERSION_STRING, .pid = (long)getpid(), .argv = proc.argv,
                               .host = proc.host, .trigger = trigger_name, .dump_number = number,
                               .time_us = c->time_us, .options = opts, .alloc_conf_text = opts->alloc_conf_text,
                               .best_effort = incomplete ? best_effort : NULL,
                               .oom_recovered = oom ? oom->recovered : CS_OOM_RECOVERY_UNKNOWN,
                               .oom_coalesced = oom ? oom->coalesced : 0};
    cs_phase_list_t phases;
    if (cs_phases_copy(&phases) != 0) cs_log_warn("no memory to copy the NVTX phases; the snapshot has none");
    meta.phases = &phases;
    meta.pools = &c->pools;
    cs_output_t out;
    uint64_t bytes = 0;
    int err = cs_dump_to_file(state, &meta, sym, path, &out, &bytes);
    cs_phase_list_free(&phases);
    if (err) {
      cs_log_error("cannot write snapshot %s: %s", path, strerror(err));
    } else {
      char size[32];
      cs_dump_size_text(bytes, size, sizeof size);
      bool pickle = cs_dump_format(opts, out.final_path) == CS_EMIT_PICKLE;
      cs_log_info("wrote %s (%s, %zu events%s%s%s): %s", out.final_path, size, cs_snap_state_events(state),
                  state->dropped ? ", oldest dropped" : "", incomplete ? ", best effort: " : "",
                  incomplete ? best_effort : "",
                  pickle ? "open it at https://pytorch.org/memory_viz or with python -m torch.cuda._memory_viz"
                         : cs_viewer_json_advice(bytes));
      rc = 0;
    }
    /* the `snapshot` entry, as PyTorch records one (not as the process ends: it would wait for the
     * locks the copy could not take, and no later snapshot shows it) */
    if (!how->ending) cs_contexts_mark_snapshot(state, cs_deadline_in_ms(CS_ENDING_LOCK_WAIT_MS));
  }
  cs_dump_tick();
  if (how->leaks && !state->error) cs_leak_report(state, cs_record_intern(), sym);
  if (sym) cs_symbolizer_destroy(sym);
  return rc;
}

static int cs_dump_run(const cs_dump_how_t *how) {
  pthread_mutex_lock(&cs_dump_lock);
  cs_dump_here = true;
  cs_dump_tick();
  cs_dump_copy_t copy;
  int rc = cs_dump_copy_take(&copy, how);
  if (rc == 0) rc = cs_dump_write_copy(&copy, how, NULL);
  cs_dump_copy_free(&copy);
  cs_dump_here = false;
  pthread_mutex_unlock(&cs_dump_lock);
  return rc;
}

int cs_dump_write(cs_trigger_t trigger, const char *path) {
  cs_dump_how_t how = {.trigger = trigger, .path = path, .snapshot = true, .leaks = trigger == CS_TRIGGER_EXIT};
  return cs_dump_run(&how);
}

/* ---- out of memory: copied on the allocating thread, written on the control thread ----
 *
 * A program may meet OOM often and on purpose (PyTorch frees its cache and retries; cuDNN probes
 * workspaces), so an OOM costs its thread the state copy only, and the files are coalesced: the
 * first OOM is written at once, later ones at most one per CS_DUMP_OOM_INTERVAL_MS, each the
 * latest OOM of its interval (the earlier ones folded into it, counted in oom_coalesced), and the
 * last OOM before the process ends is always written: by the control thread when its interval is
 * over, or else by the ending, before the final snapshot. */

enum { CS_DUMP_OOM_INTERVAL_MS = 10000 };

static pthread_mutex_t cs_dump_oom_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_dump_copy_t cs_dump_oom_pending;  /* the latest OOM's copy, not written yet (state NULL: none) */
static uint64_t cs_dump_oom_folded;         /* OOMs replaced by a later one since the last written */
static uint64_t cs_dump_oom_next_ms;        /* monotonic ms before which no OOM snapshot is written */
static int64_t cs_dump_oom_latest;          /* the successful allocations at the latest OOM */

static uint64_t cs_dump_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void cs_dump_send(char token);

void cs_dump_on_oom(void) {
  if (!(cs_runtime_options()->dump_on & CS_DUMP_ON_OOM)) return;
  cs_dump_how_t how = {.trigger = CS_TRIGGER_OOM, .snapshot = true};
  cs_dump_copy_t copy;
  if (cs_dump_copy_take(&copy, &how) != 0) return;
  pthread_mutex_lock(&cs_dump_oom_lock);
  if (cs_dump_oom_pending.state) {
    cs_dump_copy_free(&cs_dump_oom_pending);
    cs_dump_oom_folded++;
  }
  cs_dump_oom_pending = copy;
  cs_dump_oom_latest = copy.allocations;
  pthread_mutex_unlock(&cs_dump_oom_lock);
  cs_dump_send('o');
}

/* Write the pending OOM copy if there is one and (unless ending) its interval allows; returns the
 * milliseconds until it may be written (0: written, or nothing pending). ending: the process ends,
 * so a pending OOM is written now, and an allocation that has not succeeded since never will. */
static uint64_t cs_dump_oom_flush(bool ending) {
  pthread_mutex_lock(&cs_dump_oom_lock);
  uint64_t now = cs_dump_now_ms();
  if (!cs_dump_oom_pending.state || (!ending && now < cs_dump_oom_next_ms)) {
    uint64_t wait = cs_dump_oom_pending.state ? cs_dump_oom_next_ms - now : 0;
    pthread_mutex_unlock(&cs_dump_oom_lock);
    return wait;
  }
  cs_dump_copy_t copy = cs_dump_oom_pending;
  cs_dump_oom_pending.state = NULL;
  cs_dump_oom_note_t note = {.coalesced = cs_dump_oom_folded};
  cs_dump_oom_folded = 0;
  cs_dump_oom_next_ms = now + CS_DUMP_OOM_INTERVAL_MS;
  pthread_mutex_unlock(&cs_dump_oom_lock);
  /* recovered: an allocation succeeded after this OOM (a later OOM's copy knows as much) */
  int64_t since = cs_contexts_allocations(CS_ENDING_LOCK_WAIT_MS);
  if (cs_dump_oom_latest > copy.allocations || since > copy.allocations) note.recovered = CS_OOM_RECOVERED;
  else if (ending && since >= 0) note.recovered = CS_OOM_NOT_RECOVERED;
  cs_dump_how_t how = {.trigger = CS_TRIGGER_OOM, .snapshot = true, .ending = ending};
  pthread_mutex_lock(&cs_dump_lock);
  cs_dump_here = true;
  (void)cs_dump_write_copy(&copy, &how, &note);
  cs_dump_here = false;
  pthread_mutex_unlock(&cs_dump_lock);
  cs_dump_copy_free(&copy);
  return 0;
}

/* ---- the final snapshot: at exit, or as the process ends otherwise ---- */

static uint32_t cs_dump_on_bit(cs_trigger_t trigger) {
  switch (trigger) {
  case CS_TRIGGER_CRASH: return CS_DUMP_ON_CRASH;
  case CS_TRIGGER_TERM: return CS_DUMP_ON_TERM;
  default: return CS_DUMP_ON_EXIT;
  }
}

/* The snapshot if CUDASNAP_DUMP_ON has the trigger, and the leak report in any case; once. */
static void cs_dump_final(cs_trigger_t trigger) {
  int none = CS_FINAL_NONE;
  if (!atomic_compare_exchange_strong(&cs_dump_final_state, &none, CS_FINAL_STARTED)) return;
  (void)cs_dump_oom_flush(true); /* the last OOM before the end, if not written yet */
  cs_dump_how_t how = {.trigger = trigger, .snapshot = (cs_runtime_options()->dump_on & cs_dump_on_bit(trigger)) != 0,
                       .leaks = true, .ending = true};
  (void)cs_dump_run(&how);
  atomic_store(&cs_dump_final_state, CS_FINAL_FINISHED);
}

/* Runs from exit() (and quick_exit()); the CUDA runtime may already be torn down, and nothing here
 * calls CUDA. Another thread may be stuck in the driver under an allocator's lock (a watchdog
 * calls exit() on a hung device), or this one may hold it (exit() from a signal handler that
 * interrupted cudasnap): the locks are waited for with a bound, as by every snapshot. */
static void cs_dump_at_exit(void) {
  if (!cs_dump_owns_process()) return; /* a fork child's inherited handler */
  cs_ending_await_deferred();          /* a termination signal came first: it ends the process */
  cs_dump_final(CS_TRIGGER_EXIT);
}

/* ---- the control thread: snapshots on signal, and endings; handlers write one byte ---- */

static int cs_dump_pipe[2] = {-1, -1};
static int cs_dump_signal;                /* CUDASNAP_SIGNAL once its handler is installed, else 0 */
static struct sigaction cs_dump_previous; /* the program's action for it before cudasnap's */

/* sa_flags is an int, and SA_RESETHAND is glibc's unsigned top bit. */
#define CS_SA(flags) ((int)(flags))
static atomic_bool cs_dump_control_started; /* it reads the pipe once it runs */
static atomic_long cs_dump_control_tid;      /* set by the thread itself */

bool cs_dump_control_running(void) { return atomic_load(&cs_dump_control_started); }
bool cs_dump_is_control_thread(void) {
  long tid = atomic_load(&cs_dump_control_tid);
  return tid != 0 && tid == (long)syscall(SYS_gettid);
}

static void cs_dump_send(char token) {
  int saved = errno;
  if (cs_dump_pipe[1] >= 0) (void)!write(cs_dump_pipe[1], &token, 1);
  errno = saved;
}

/* A full pipe drops the byte; the control thread looks for an ending at every byte it reads. */
void cs_dump_wake_control(void) { cs_dump_send('e'); }

/* The dump signal's handler. The action the program had before stays in force otherwise: its
 * handler runs (with its mask and flags, which the kernel got with cudasnap's handler), and a
 * one-shot one (SA_RESETHAND) runs once, as without cudasnap; from then on, as when the program
 * had SIG_DFL, the signal only asks for a snapshot. */
static void cs_dump_on_signal(int sig, siginfo_t *info, void *uctx) {
  cs_dump_send('s');
  struct sigaction previous = cs_dump_previous;
  if (previous.sa_flags & CS_SA(SA_RESETHAND)) {
    memset(&cs_dump_previous, 0, sizeof cs_dump_previous); /* SIG_DFL */
    sigemptyset(&cs_dump_previous.sa_mask);
  }
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(sig, info, uctx);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

static void *cs_dump_control_thread(void *arg) {
  (void)arg;
  atomic_store(&cs_dump_control_tid, (long)syscall(SYS_gettid));
  /* Every signal stays blocked here except the faults: one inside a dump must reach cudasnap's
   * handler, which lets a waiting ending thread end the process of its own cause. */
  sigset_t faults;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  sigaddset(&faults, SIGFPE);
  sigaddset(&faults, SIGILL);
  pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
  char token;
  uint64_t oom_wait_ms = 0; /* a pending OOM snapshot is due in this long (0: none pending) */
  for (;;) {
    struct pollfd pfd = {.fd = cs_dump_pipe[0], .events = POLLIN};
    int ready = poll(&pfd, 1, oom_wait_ms ? (int)oom_wait_ms : -1);
    if (ready == 0) { /* an OOM's interval is over */
      oom_wait_ms = cs_dump_oom_flush(false);
      continue;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    ssize_t n = read(cs_dump_pipe[0], &token, 1);
    if (n == 1) {
      cs_trigger_t ending;
      if (cs_ending_take(&ending)) {
        cs_dump_final(ending);
        /* a final snapshot started elsewhere (exit() on another thread) is waited for */
        while (!cs_dump_final_finished()) {
          struct timespec ms = {.tv_sec = 0, .tv_nsec = 10000000};
          nanosleep(&ms, NULL);
        }
        int deferred = cs_ending_deferred_signal();
        cs_ending_served();
        if (deferred) cs_signals_die_of(deferred);
        return NULL; /* the process is ending */
      }
      if (token == 's') (void)cs_dump_write(CS_TRIGGER_SIGNAL, NULL);
      if (token == 'o') oom_wait_ms = cs_dump_oom_flush(false);
    } else if (n == 0 || (n < 0 && errno != EINTR)) {
      return NULL;
    }
  }
}

static void cs_dump_start_control(void) {
  if (cs_dump_pipe[0] >= 0) return;
  if (pipe2(cs_dump_pipe, O_CLOEXEC) != 0) {
    cs_log_warn("cannot create the snapshot pipe (%s); no snapshot on a signal, a crash or _exit", strerror(errno));
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
    cs_log_warn("cannot start the snapshot thread (%s); no snapshot on a signal, a crash or _exit", strerror(err));
    return;
  }
  pthread_detach(thread);
  atomic_store(&cs_dump_control_started, true);
}

static void cs_dump_start_signal(int sig) {
  /* A fork child that activates again finds the handler it inherited (cs_dump_postfork_child
   * puts the program's back only where it was still cudasnap's): keep it, or it would chain to
   * itself. */
  struct sigaction current;
  if (cs_signals_real_sigaction(sig, NULL, &current) != 0) current.sa_flags = 0;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == cs_dump_on_signal) return;
  /* The program's mask and delivery flags stay (a handler that relies on them still gets them);
   * the one-shot reset is cs_dump_on_signal's to do, and a restarting handler keeps the
   * program's system calls from seeing a snapshot request. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = cs_dump_on_signal;
  bool program_handler = current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN;
  int kept = CS_SA(SA_NODEFER | SA_ONSTACK) | (program_handler ? SA_RESTART : 0);
  sa.sa_flags = SA_SIGINFO | (current.sa_flags & kept) | (program_handler ? 0 : SA_RESTART);
  sa.sa_mask = current.sa_mask;
  if (!program_handler) sigemptyset(&sa.sa_mask);
  if (cs_signals_real_sigaction(sig, &sa, &cs_dump_previous) != 0) {
    cs_log_warn("cannot install the handler for signal %d (%s)", sig, strerror(errno));
    return;
  }
  cs_dump_signal = sig;
}

void cs_dump_start(void) {
  static atomic_bool exit_handler_registered;
  const cs_options_t *opts = cs_runtime_options();
  atomic_store(&cs_dump_owner, (long)getpid());
  if (!atomic_exchange(&exit_handler_registered, true)) {
    atexit(cs_dump_at_exit);
    at_quick_exit(cs_dump_at_exit);
  }
  cs_dump_start_control();
  if ((opts->dump_on & CS_DUMP_ON_SIGNAL) && opts->signal > 0) cs_dump_start_signal(opts->signal);
}

void cs_dump_postfork_child(void) {
  pthread_mutex_init(&cs_dump_lock, NULL);
  /* the parent's OOM is not the child's to write */
  pthread_mutex_init(&cs_dump_oom_lock, NULL);
  cs_dump_copy_free(&cs_dump_oom_pending);
  cs_dump_oom_folded = 0;
  cs_dump_oom_next_ms = 0;
  cs_dump_oom_latest = 0;
  cs_dump_number = 0;
  atomic_store(&cs_dump_final_state, CS_FINAL_NONE);
  atomic_store(&cs_dump_temp_open, false);
  atomic_store(&cs_dump_control_started, false);
  atomic_store(&cs_dump_control_tid, 0);
  /* The parent's control thread is not here; its pipe must not carry the child's signals. */
  for (int i = 0; i < 2; i++) {
    if (cs_dump_pipe[i] >= 0) close(cs_dump_pipe[i]);
    cs_dump_pipe[i] = -1;
  }
  /* Until it uses CUDA itself, the child has the dump signal's disposition it would have without
   * cudasnap (kill -USR1 ends a multiprocessing worker that kept SIG_DFL); unless the program has
   * replaced cudasnap's handler since, which stays. */
  struct sigaction current;
  if (cs_dump_signal > 0 && cs_signals_real_sigaction(cs_dump_signal, NULL, &current) == 0 &&
      (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == cs_dump_on_signal)
    (void)cs_signals_real_sigaction(cs_dump_signal, &cs_dump_previous, NULL);
  cs_dump_signal = 0;
}

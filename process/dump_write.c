/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot writer: a dump in two steps, the copy of the state (each lock taken with a time
 * limit) and the writing (symbolized, to a temporary file renamed into place), with the one line
 * that reports it and the leak report. Dumps are serialized by cs_dump_lock. When they are taken
 * is process/dump_trigger.c's; their names, process/dump_name.c's. */
#include "process/dump_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cs_deadline.h"
#include "common/cs_log.h"
#include "common/cs_process_info.h"
#include "device/contexts.h"
#include "device/driver_query.h"
#include "device/driver_watch.h"
#include "device/recorder.h"
#include "memviz/emit.h"
#include "memviz/output.h"
#include "memviz/viewer_limit.h"
#include "process/dump_name.h"
#include "process/runtime.h"
#include "snapshot/leaks.h"
#include "snapshot/snap_pools.h"
#include "snapshot/snapshot.h"
#include "snapshot/thread_names.h"

static const char *const cs_trigger_names[] = {"exit", "signal", "oom", "api", "crash", "term"};

const char *cs_dump_trigger_name(cs_trigger_t trigger) {
  return (unsigned)trigger < CS_ARRAY_SIZE(cs_trigger_names) ? cs_trigger_names[trigger] : "unknown";
}

static pthread_mutex_t cs_dump_lock = PTHREAD_MUTEX_INITIALIZER;
static int cs_dump_number;          /* dumps attempted so far; %n of the next is this + 1 */
static CS_TLS bool cs_dump_here;    /* this thread is writing a dump */
static atomic_ulong cs_dump_ticks;  /* progress of any dump (cs_dump_progress) */

/* The final snapshot, at exit or as the process ends otherwise: written once. */
enum { CS_FINAL_NONE = 0, CS_FINAL_STARTED = 1, CS_FINAL_FINISHED = 2 };
static atomic_int cs_dump_final_state;

/* The temporary file of the dump under way, for cs_dump_abandon. */
static char cs_dump_temp[4096];
static atomic_bool cs_dump_temp_open;

void cs_dump_tick(void) { atomic_fetch_add_explicit(&cs_dump_ticks, 1, memory_order_relaxed); }
uint64_t cs_dump_progress(void) { return atomic_load_explicit(&cs_dump_ticks, memory_order_relaxed); }
bool cs_dump_running_here(void) { return cs_dump_here; }
bool cs_dump_final_started(void) { return atomic_load(&cs_dump_final_state) != CS_FINAL_NONE; }
bool cs_dump_final_finished(void) { return atomic_load(&cs_dump_final_state) == CS_FINAL_FINISHED; }

void cs_dump_abandon(void) {
  if (atomic_exchange(&cs_dump_temp_open, false)) unlink(cs_dump_temp);
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
  cs_emitter_t *e = cs_emitter_create(cs_dump_name_format(meta->options, path), cs_fd_sink(&sink), 2);
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

/* Devices as "device 3" or "devices 0, 2", for the best-effort note. */
static void cs_dump_devices_text(uint64_t devices, char *buf, size_t len) {
  int count = __builtin_popcountll(devices);
  size_t used = (size_t)snprintf(buf, len, "device%s", count > 1 ? "s" : "");
  for (int d = 0, n = 0; d < 64 && used < len; d++)
    if (devices & (UINT64_C(1) << d))
      used += (size_t)snprintf(buf + used, len - used, "%s %d", n++ ? "," : "", d);
}

/* ---- a dump in two steps: the copy (under the allocators' locks), then the writing ---- */


static void cs_dump_query_device(int device, void *arg) { cs_driver_query_device(device, arg); }

/* The driver's side of the reconciliation: its answer for each device of the snapshot that has a
 * usable context (one of cudasnap's, or the active primary: none is created), asked right after
 * the copy. A device whose context could not be looked up before deadline_ns stays unknown. */
static void cs_dump_query_driver(cs_snap_state_t *s, uint64_t deadline_ns) {
  for (int d = 0; d < s->device_count && d < CS_SNAP_MAX_DEVICES; d++) {
    cs_contexts_with_device(d, deadline_ns, cs_dump_query_device, &s->memory[d].driver);
    /* kept for a later snapshot that cannot ask, and the peak's when it is the peak still */
    if (s->memory[d].driver.driver_known) cs_driver_watch_answer(d, &s->memory[d].driver);
  }
}

static int64_t cs_dump_allocations(const cs_snap_state_t *state) {
  int64_t n = 0;
  for (int d = 0; d < state->device_count && d < CS_SNAP_MAX_DEVICES; d++)
    n += state->stats[d].allocation[CS_STAT_ALL].allocated;
  return n;
}

/* Copy the state how asks for. Returns 0, or -1 when host memory ran out (reported). Takes no
 * lock of the dump's own: an OOM's copy is taken on the allocating thread while another dump may
 * be writing. Every lock it takes, it takes within CS_DUMP_LOCK_WAIT_MS in all, whatever the
 * trigger, and leaves out what that lock guards when it is not had (`best_effort`): its holder may
 * be stuck in the driver for good, and a snapshot must neither hang the process's ending nor a
 * program thread that asked for it. */
int cs_dump_copy_take(cs_dump_copy_t *c, const cs_dump_how_t *how) {
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
  uint64_t deadline = cs_deadline_in_ms(CS_DUMP_LOCK_WAIT_MS);
  int pools = cs_pools_copy(&c->pools, deadline);
  if (pools < 0) cs_log_warn("no memory to copy the NVTX pools; the snapshot draws none");
  c->pools_left_out = pools > 0;
  cs_snap_state_t *state = c->state;
  if (cs_snap_state_init(state, cs_contexts_device_count()) == 0) {
    c->left_out = cs_contexts_snapshot(state, how->snapshot, deadline, &c->passthrough_left_out);
    /* The driver's figures, right after the copy. At exit too: this handler was registered at
     * the first CUDA call, after the runtime and the driver registered their own teardown, and
     * atexit handlers run last registered first, so the driver is still whole here; a context
     * the program destroyed is not asked (cs_contexts_with_device finds none). Never at a crash
     * (the driver may be what crashed, or the crashing thread may hold its locks) nor at a
     * termination signal (it may have interrupted a call into the driver): the snapshot says so. */
    if (how->snapshot) {
      if (how->trigger == CS_TRIGGER_CRASH) state->driver_not_asked = "crash";
      else if (how->trigger == CS_TRIGGER_TERM) state->driver_not_asked = "termination signal";
      else cs_dump_query_driver(state, deadline);
      /* The driver's answer at the peak, and where it was not asked its last answer with its
       * time: plain copies, no lock (device/driver_watch.h), so at a crash too. */
      cs_driver_watch_copy(state, state->driver_not_asked != NULL);
    }
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

void cs_dump_copy_free(cs_dump_copy_t *c) {
  if (!c->state) return;
  cs_pool_list_free(&c->pools);
  cs_snap_state_free(c->state);
  free(c->state);
  c->state = NULL;
}


/* Write a copy: the file (how->snapshot) and the leak report (how->leaks). Returns 0 when a file
 * was written (with how->written: the length of its name, which goes there), else -1 (the reason
 * was reported). pre: cs_dump_lock held. */
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
             __builtin_popcountll(c->left_out) > 1 ? "their" : "its", CS_DUMP_LOCK_WAIT_MS);
  }
  if (c->passthrough_left_out) {
    size_t used = strlen(best_effort);
    snprintf(best_effort + used, sizeof best_effort - used,
             "%smemory passed through left out: its lock stayed held for %d ms", used ? "; " : "",
             CS_DUMP_LOCK_WAIT_MS);
  }
  if (c->pools_left_out) {
    size_t used = strlen(best_effort);
    snprintf(best_effort + used, sizeof best_effort - used,
             "%sNVTX pools left out: their lock stayed held for %d ms", used ? "; " : "", CS_DUMP_LOCK_WAIT_MS);
  }
  cs_process_info_t proc;
  cs_process_info_read(&proc);
  char name[4096];
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
  } else if (!path && cs_dump_name_expand(opts->output, &proc, trigger_name, number, name, sizeof name) != 0) {
    cs_log_error("cannot take a snapshot: the name from CUDASNAP_OUTPUT is too long");
  } else {
    if (!path) path = name;
    cs_snapshot_meta_t meta = {.version = CS_VERSION_STRING, .pid = (long)getpid(), .argv = opts->argv ? proc.argv : NULL,
                               .host = proc.host, .job = cs_runtime_job(), .trigger = trigger_name,
                               .dump_number = number,
                               .time_us = c->time_us, .options = opts, .alloc_conf_text = opts->alloc_conf_text,
                               .best_effort = incomplete ? best_effort : NULL,
                               .oom_recovered = oom ? oom->recovered : CS_OOM_RECOVERY_UNKNOWN,
                               .oom_coalesced = oom ? oom->coalesced : 0};
    cs_phase_list_t phases;
    if (cs_phases_copy(&phases) != 0) cs_log_warn("no memory to copy the NVTX phases; the snapshot has none");
    cs_snap_thread_names(&phases);
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
      bool pickle = cs_dump_name_format(opts, out.final_path) == CS_EMIT_PICKLE;
      cs_log_info("wrote %s (%s, %zu events%s%s%s): %s", out.final_path, size, cs_snap_state_events(state),
                  state->dropped ? ", oldest dropped" : "", incomplete ? ", best effort: " : "",
                  incomplete ? best_effort : "",
                  pickle ? "open it at https://pytorch.org/memory_viz or with python -m torch.cuda._memory_viz"
                         : cs_viewer_json_advice(bytes));
      rc = 0;
      if (how->written) rc = snprintf(how->written, how->written_len, "%s", out.final_path);
    }
    /* the `snapshot` entry, as PyTorch records one (not as the process ends: it would wait for the
     * locks the copy could not take, and no later snapshot shows it) */
    if (!how->ending) cs_contexts_mark_snapshot(state, cs_deadline_in_ms(CS_DUMP_LOCK_WAIT_MS));
  }
  cs_dump_tick();
  if (how->leaks && !state->error) cs_leak_report(state, cs_record_intern(), sym);
  if (sym) cs_symbolizer_destroy(sym);
  return rc;
}

int cs_dump_run(const cs_dump_how_t *how) {
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

int cs_dump_write_named(cs_trigger_t trigger, const char *path, char *written, size_t len) {
  cs_dump_how_t how = {.trigger = trigger, .path = path, .snapshot = true, .leaks = trigger == CS_TRIGGER_EXIT,
                       .written = written, .written_len = len};
  return cs_dump_run(&how);
}

int cs_dump_run_copy(cs_dump_copy_t *c, const cs_dump_how_t *how, const cs_dump_oom_note_t *oom) {
  pthread_mutex_lock(&cs_dump_lock);
  cs_dump_here = true;
  int rc = cs_dump_write_copy(c, how, oom);
  cs_dump_here = false;
  pthread_mutex_unlock(&cs_dump_lock);
  return rc;
}

bool cs_dump_final_begin(void) {
  int none = CS_FINAL_NONE;
  return atomic_compare_exchange_strong(&cs_dump_final_state, &none, CS_FINAL_STARTED);
}

void cs_dump_final_end(void) { atomic_store(&cs_dump_final_state, CS_FINAL_FINISHED); }

void cs_dump_write_postfork_child(void) {
  pthread_mutex_init(&cs_dump_lock, NULL);
  cs_dump_number = 0;
  atomic_store(&cs_dump_final_state, CS_FINAL_NONE);
  atomic_store(&cs_dump_temp_open, false);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "device/recorder.h"

#include <stdatomic.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_compiler.h"
#include "common/cs_log.h"
#include "common/cs_process_info.h"
#include "device/registry.h"
#include "memviz/output.h"
#include "record/pyframes.h"
#include "record/recfile.h"
#include "record/recfile_write.h"
#include "record/stack.h"
#include "record/thread_id.h"
#include "snapshot/snapshot.h"

/* Distinct stacks kept at most; a program with more gets "no stack" for the rest instead of an
 * ever-growing table (about 70 MiB at 32 frames each, at worst). */
enum { CS_RECORD_MAX_STACKS = 1 << 18 };
/* the recording file's pass-through entries keep their kind above the stack id */
_Static_assert(CS_RECORD_MAX_STACKS <= CS_RECFILE_STACK_MASK, "stack ids leave room for the kind");

static cs_intern_t *_Atomic cs_intern;
static uint32_t cs_stack_depth;
static cs_stacks_t cs_stack_mode;
static _Atomic size_t cs_history_entries;  /* CUDASNAP_MAX_ENTRIES, set at start */
static atomic_bool cs_histories_record = true; /* cudasnap_record_history */

/* CUDASNAP_RECORD's file (record/recfile_write.h), NULL without one. */
static cs_recfile_writer_t *_Atomic cs_recfile;
/* The largest stack id after which the module map was looked at: a new stack may hold PCs of a
 * module loaded since. */
static _Atomic uint32_t cs_modules_seen_at;
/* A fork child's detached copy of the parent's writer, until the child makes its own file in the
 * same place (cs_recfile_reopen). */
static cs_recfile_writer_t *cs_recfile_detached;

/* The recording file under the expanded CUDASNAP_RECORD, named as snapshots are (a temporary name,
 * then the name, or name-N when it is taken). A failure is one warning; recording goes on in
 * memory. */
static void cs_record_open_file(const cs_options_t *opts) {
  cs_process_info_t proc;
  cs_process_info_read(&proc);
  cs_output_fields_t fields = {.executable = proc.exe, .pid = (long)getpid(), .host = proc.host,
                               .rank = cs_output_rank(), .dump_number = 0, .trigger = "record"};
  char path[CS_OPTION_PATH_MAX + 64];
  if (cs_output_expand(opts->record, &fields, path, sizeof path) != 0) {
    cs_log_warn("CUDASNAP_RECORD expands to a path too long; recording in memory only");
    return;
  }
  cs_output_t out;
  int err = cs_output_open(&out, path);
  cs_recfile_writer_t *w = NULL;
  if (err == 0) {
    /* Python frames come on top of the CUDASNAP_STACK_DEPTH native ones (cs_record_python_stack) */
    uint32_t depth = opts->stacks == CS_STACKS_NATIVE ? opts->stack_depth : CS_STACK_MAX_DEPTH;
    cs_recfile_params_t params = {.max_entries = opts->max_entries, .stack_depth = depth,
                                  .max_stacks = opts->stacks != CS_STACKS_NONE ? CS_RECORD_MAX_STACKS : 0,
                                  .argv = opts->argv, .conf = &opts->alloc};
    w = cs_recfile_detached ? cs_recfile_reopen(cs_recfile_detached, out.fd, &err)
                            : cs_recfile_create(out.fd, &params, &err);
    if (w) cs_recfile_detached = NULL;
    if (!w) {
      cs_output_abort(&out);
    } else if ((err = cs_output_commit(&out, path)) != 0) {
      /* the file is gone; a fork child's rings may point into the mapping already: it becomes
       * anonymous memory in place, as at a fork */
      cs_recfile_detach(w);
      cs_recfile_detached = w;
      w = NULL;
    }
  }
  if (!w) {
    cs_log_warn("cannot make the recording file %s: %s; recording in memory only", path, strerror(err));
    return;
  }
  cs_log_info("recording to %s", out.final_path);
  cs_recfile_note_modules(w);
  atomic_store_explicit(&cs_recfile, w, memory_order_release);
}

void cs_record_start(const cs_options_t *opts) {
  atomic_store_explicit(&cs_history_entries, opts->max_entries, memory_order_relaxed);
  /* a fork child comes here again, with the parent's file detached: it makes its own */
  if (opts->record[0] && !atomic_load(&cs_recfile)) cs_record_open_file(opts);
  cs_intern_t *t = atomic_load(&cs_intern);
  if (opts->stacks != CS_STACKS_NONE && !t) {
    cs_stack_depth = opts->stack_depth;
    cs_stack_mode = opts->stacks;
    cs_stack_init();
    if (opts->stacks != CS_STACKS_NATIVE) cs_py_init();
    t = cs_intern_create(CS_RECORD_MAX_STACKS);
    if (!t) cs_log_warn("cannot allocate the stack table; snapshots will have no stacks");
    atomic_store_explicit(&cs_intern, t, memory_order_release);
  }
  /* before any stack is interned (at activation, or in a fork child whose table was cleared) */
  cs_recfile_writer_t *w = atomic_load(&cs_recfile);
  if (t && w) cs_intern_set_mirror(t, cs_recfile_add_stack, w);
}

/* The stack with this thread's Python frames merged in, when it has any (record/pyframes.h);
 * apart so that the merge buffer is on the stack only in processes that run Python. */
static CS_NOINLINE uint32_t cs_record_python_stack(cs_intern_t *t, const uintptr_t *pcs, size_t n) {
  /* CUDASNAP_STACK_DEPTH bounds the native frames; the Python frames come on top of them */
  uintptr_t merged[CS_STACK_MAX_DEPTH];
  size_t m = cs_py_merge(pcs, n, merged, CS_STACK_MAX_DEPTH, cs_stack_mode == CS_STACKS_PYTHON);
  if (m != CS_PY_NO_FRAMES) return cs_intern_stack(t, merged, m);
  return cs_intern_stack(t, pcs, cs_stack_mode == CS_STACKS_PYTHON ? 0 : n);
}

/* The thread's last native stack: the capture's number (record/stack.h) and the id it got, in the
 * table of that serial. A capture with the same number wrote the same frames, so it has that id
 * without the table's lookup (issue 36). `busy`: a signal handler's capture while the thread is in
 * here neither reads nor writes it. */
typedef struct cs_record_last_s {
  uint64_t number;
  uint32_t id;
  uint32_t serial;
} cs_record_last_t;
static CS_TLS cs_record_last_t cs_record_last;
static CS_TLS volatile sig_atomic_t cs_record_busy;

static uint32_t cs_record_native_stack(cs_intern_t *t, const uintptr_t *pcs, size_t n, uint64_t number) {
  if (CS_UNLIKELY(cs_record_busy) || number == 0) return cs_intern_stack(t, pcs, n);
  cs_record_busy = 1;
  atomic_signal_fence(memory_order_seq_cst);
  const uint32_t serial = cs_intern_serial(t);
  uint32_t id;
  if (cs_record_last.number == number && cs_record_last.serial == serial) {
    id = cs_record_last.id;
  } else {
    id = cs_intern_stack(t, pcs, n);
    cs_record_last = (cs_record_last_t){.number = id ? number : 0, .id = id, .serial = serial};
  }
  atomic_signal_fence(memory_order_seq_cst);
  cs_record_busy = 0;
  return id;
}

uint32_t cs_record_stack(void) {
  cs_intern_t *t = atomic_load_explicit(&cs_intern, memory_order_acquire);
  if (!t) return 0;
  uintptr_t pcs[CS_STACK_MAX_DEPTH];
  uint64_t number = 0;
  size_t n = cs_stack_mode == CS_STACKS_PYTHON ? 0 : cs_stack_capture_numbered(pcs, cs_stack_depth, &number);
  uint32_t id = cs_stack_mode == CS_STACKS_NATIVE || !cs_py_active() ? cs_record_native_stack(t, pcs, n, number)
                                                                      : cs_record_python_stack(t, pcs, n);
  cs_recfile_writer_t *w = atomic_load_explicit(&cs_recfile, memory_order_relaxed);
  if (CS_UNLIKELY(w != NULL) && id > atomic_load_explicit(&cs_modules_seen_at, memory_order_relaxed)) {
    atomic_store_explicit(&cs_modules_seen_at, id, memory_order_relaxed);
    cs_recfile_note_modules(w); /* a new stack: cold */
  }
  return id;
}

void cs_history_init(cs_history_t *h, int device) {
  size_t entries = atomic_load_explicit(&cs_history_entries, memory_order_relaxed);
  bool enabled = atomic_load(&cs_histories_record);
  h->device = device;
  h->alloc_thread = 0;
  cs_recfile_writer_t *w = atomic_load(&cs_recfile);
  h->in_file = w && cs_recfile_add_ring(w, &h->ring, device);
  if (h->in_file) {
    cs_ring_set_enabled(&h->ring, enabled);
    return;
  }
  if (w && entries > 0)
    cs_log_warn("no room in the recording file for the history of device %d; it is kept in memory only", device);
  if (cs_thread_log_init(&h->log, entries) != 0) {
    cs_log_warn("cannot reserve %zu history entries for device %d (CUDASNAP_MAX_ENTRIES); recording its state only",
                entries, device);
    (void)cs_thread_log_init(&h->log, 0);
  }
  cs_thread_log_set_enabled(&h->log, enabled);
}

void cs_history_destroy(cs_history_t *h) {
  if (h->in_file) cs_ring_destroy(&h->ring);
  else cs_thread_log_destroy(&h->log);
}

bool cs_history_enabled(const cs_history_t *h) { return h->in_file ? h->ring.enabled : h->log.enabled; }

void cs_history_set_enabled(cs_history_t *h, bool enabled) {
  if (h->in_file) cs_ring_set_enabled(&h->ring, enabled);
  else cs_thread_log_set_enabled(&h->log, enabled);
}

void cs_history_clear(cs_history_t *h) {
  if (h->in_file) cs_ring_clear(&h->ring);
  else cs_thread_log_clear(&h->log);
}

size_t cs_history_room(const cs_history_t *h) { return h->in_file ? h->ring.capacity : cs_thread_log_room(&h->log); }

void cs_history_push(cs_history_t *h, cs_action_t action, uint64_t addr, uint64_t size) {
  if (h->in_file) cs_ring_push(&h->ring, action, h->device, addr, size, 0, 0);
  else cs_thread_log_push(&h->log, action, h->device, addr, size, 0, 0);
}

void cs_history_copy(cs_history_t *h, cs_snap_state_t *state) {
  if (h->in_file) cs_snap_state_add_history(state, &h->ring);
  else cs_snap_state_add_log(state, &h->log);
}

void cs_record_set_enabled(bool enabled) { atomic_store(&cs_histories_record, enabled); }

/* The thread that made each device's latest allocation: the live record's phase is the one open
 * on it (publish/live_gather.c). Stored when a history sees its allocating thread change, so a
 * program that allocates from one thread pays one comparison per allocation. With two contexts of
 * one device allocated from by different threads, it is the thread of whichever changed last. */
static _Atomic uint32_t cs_record_alloc_threads[CS_MAX_DEVICES];

static inline void cs_record_note_thread(cs_history_t *h) {
  uint32_t thread = cs_thread_id();
  if (CS_LIKELY(thread == h->alloc_thread) || (unsigned)h->device >= CS_MAX_DEVICES) return;
  h->alloc_thread = thread;
  atomic_store_explicit(&cs_record_alloc_threads[h->device], thread, memory_order_relaxed);
}

uint32_t cs_record_alloc_thread(int device) {
  if ((unsigned)device >= CS_MAX_DEVICES) return 0;
  return atomic_load_explicit(&cs_record_alloc_threads[device], memory_order_relaxed);
}

static void cs_record_event(void *ctx, const cs_trace_event_t *ev) {
  cs_history_t *h = ctx;
  if (ev->action == CS_TRACE_ALLOC) cs_record_note_thread(h);
  if (CS_LIKELY(!h->in_file)) cs_snap_log_event(&h->log, h->device, ev);
  else cs_snap_record_event(&h->ring, h->device, ev);
}

cs_allocator_observer_t cs_record_observer(cs_history_t *h) {
  return (cs_allocator_observer_t){.on_event = cs_record_event, .ctx = h};
}

cs_intern_t *cs_record_intern(void) { return atomic_load_explicit(&cs_intern, memory_order_acquire); }

void cs_record_postfork_child(void) {
  cs_intern_t *t = atomic_load(&cs_intern);
  /* the file is the parent's: the child lets go of it (before the contexts clear their rings,
   * which would write to it), and makes its own when it activates anew */
  cs_recfile_writer_t *w = atomic_load(&cs_recfile);
  if (w) {
    cs_intern_set_mirror(t, NULL, NULL);
    cs_recfile_detach(w);
    cs_recfile_detached = w;
    atomic_store(&cs_recfile, NULL);
    atomic_store(&cs_modules_seen_at, 0); /* the child's stack ids start again from 1 */
  }
  if (t) cs_intern_clear(t);
  cs_py_postfork_child();
  cs_thread_log_postfork_child();
  for (int d = 0; d < CS_MAX_DEVICES; d++) atomic_store(&cs_record_alloc_threads[d], 0); /* the parent's threads */
}

bool cs_record_passthrough_ring(cs_ring_t *r) {
  cs_recfile_writer_t *w = atomic_load(&cs_recfile);
  if (!w) return false;
  if (cs_recfile_add_ring(w, r, CS_RECFILE_RING_PASSTHROUGH)) return true;
  if (atomic_load_explicit(&cs_history_entries, memory_order_relaxed) > 0)
    cs_log_warn("no room in the recording file for the history of memory passed through; it is kept in memory only");
  return false;
}

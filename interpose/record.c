#include "interpose/record.h"

#include <stdatomic.h>

#include "common/cs_compiler.h"
#include "common/cs_log.h"
#include "snapshot/snapshot.h"
#include "record/pyframes.h"
#include "record/stack.h"

/* Distinct stacks kept at most; a program with more gets "no stack" for the rest instead of an
 * ever-growing table (about 70 MiB at 32 frames each, at worst). */
enum { CS_RECORD_MAX_STACKS = 1 << 18 };

static cs_intern_t *_Atomic cs_intern;
static uint32_t cs_stack_depth;
static cs_stacks_t cs_stack_mode;
static _Atomic size_t cs_history_entries;  /* CUDASNAP_MAX_ENTRIES, set at start */
static atomic_bool cs_history_enabled = true;

void cs_record_start(const cs_options_t *opts) {
  atomic_store_explicit(&cs_history_entries, opts->max_entries, memory_order_relaxed);
  if (opts->stacks == CS_STACKS_NONE || atomic_load(&cs_intern)) return;
  cs_stack_depth = opts->stack_depth;
  cs_stack_mode = opts->stacks;
  cs_stack_init();
  if (opts->stacks != CS_STACKS_NATIVE) cs_py_init();
  cs_intern_t *t = cs_intern_create(CS_RECORD_MAX_STACKS);
  if (!t) cs_log_warn("cannot allocate the stack table; snapshots will have no stacks");
  atomic_store_explicit(&cs_intern, t, memory_order_release);
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

uint32_t cs_record_stack(void) {
  cs_intern_t *t = atomic_load_explicit(&cs_intern, memory_order_acquire);
  if (!t) return 0;
  uintptr_t pcs[CS_STACK_MAX_DEPTH];
  size_t n = cs_stack_mode == CS_STACKS_PYTHON ? 0 : cs_stack_capture(pcs, cs_stack_depth);
  if (cs_stack_mode == CS_STACKS_NATIVE || !cs_py_active()) return cs_intern_stack(t, pcs, n);
  return cs_record_python_stack(t, pcs, n);
}

void cs_history_init(cs_history_t *h, int device) {
  size_t entries = atomic_load_explicit(&cs_history_entries, memory_order_relaxed);
  h->device = device;
  if (cs_ring_init(&h->ring, entries) != 0) {
    cs_log_warn("cannot reserve %zu history entries for device %d (CUDASNAP_MAX_ENTRIES); recording its state only",
                entries, device);
    (void)cs_ring_init(&h->ring, 0);
  }
  cs_ring_set_enabled(&h->ring, atomic_load(&cs_history_enabled));
}

void cs_record_set_enabled(bool enabled) { atomic_store(&cs_history_enabled, enabled); }

static void cs_record_event(void *ctx, const cs_trace_event_t *ev) {
  cs_history_t *h = ctx;
  cs_snap_record_event(&h->ring, h->device, ev);
}

cs_allocator_observer_t cs_record_observer(cs_history_t *h) {
  return (cs_allocator_observer_t){.on_event = cs_record_event, .ctx = h};
}

cs_intern_t *cs_record_intern(void) { return atomic_load_explicit(&cs_intern, memory_order_acquire); }

void cs_record_postfork_child(void) {
  cs_intern_t *t = atomic_load(&cs_intern);
  if (t) cs_intern_clear(t);
  cs_py_postfork_child();
}

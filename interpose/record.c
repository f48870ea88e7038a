#include "interpose/record.h"

#include <stdatomic.h>

#include "common/cs_log.h"
#include "snapshot/snapshot.h"
#include "snapshot/stack.h"

/* Distinct stacks kept at most; a program with more gets "no stack" for the rest instead of an
 * ever-growing table (about 70 MiB at 32 frames each, at worst). */
enum { CS_RECORD_MAX_STACKS = 1 << 18 };

static cs_ring_t cs_ring;
static atomic_bool cs_ring_ready;
static cs_intern_t *_Atomic cs_intern;
static uint32_t cs_stack_depth;

void cs_record_start(const cs_options_t *opts) {
  if (atomic_load(&cs_ring_ready)) return; /* a fork child activating again keeps its reset ring */
  if (cs_ring_init(&cs_ring, opts->max_entries) != 0) {
    cs_log_warn("cannot reserve %llu history entries (CUDASNAP_MAX_ENTRIES); recording state only",
                (unsigned long long)opts->max_entries);
    (void)cs_ring_init(&cs_ring, 0);
  }
  atomic_store_explicit(&cs_ring_ready, true, memory_order_release);
  if (opts->stacks != CS_STACKS_NATIVE) return;
  cs_stack_depth = opts->stack_depth;
  cs_stack_init();
  cs_intern_t *t = cs_intern_create(CS_RECORD_MAX_STACKS);
  if (!t) cs_log_warn("cannot allocate the stack table; snapshots will have no stacks");
  atomic_store_explicit(&cs_intern, t, memory_order_release);
}

uint32_t cs_record_stack(void) {
  cs_intern_t *t = atomic_load_explicit(&cs_intern, memory_order_acquire);
  if (!t) return 0;
  uintptr_t pcs[CS_STACK_MAX_DEPTH];
  size_t n = cs_stack_capture(pcs, cs_stack_depth);
  return cs_intern_stack(t, pcs, n);
}

static void cs_record_event(void *ctx, const cs_trace_event_t *ev) {
  if (!atomic_load_explicit(&cs_ring_ready, memory_order_acquire)) return;
  cs_snap_record_event(&cs_ring, *(const int *)ctx, ev);
}

cs_allocator_observer_t cs_record_observer(const int *device) {
  return (cs_allocator_observer_t){.on_event = cs_record_event, .ctx = (void *)device};
}

cs_ring_t *cs_record_ring(void) {
  return atomic_load_explicit(&cs_ring_ready, memory_order_acquire) ? &cs_ring : NULL;
}

cs_intern_t *cs_record_intern(void) { return atomic_load_explicit(&cs_intern, memory_order_acquire); }

void cs_record_prefork(void) {
  if (atomic_load(&cs_ring_ready)) pthread_mutex_lock(&cs_ring.lock);
}

void cs_record_postfork(bool child) {
  if (!atomic_load(&cs_ring_ready)) return;
  if (!child) {
    pthread_mutex_unlock(&cs_ring.lock);
    return;
  }
  cs_ring_reset_in_child(&cs_ring);
  cs_intern_t *t = atomic_load(&cs_intern);
  if (t) cs_intern_clear(t);
}

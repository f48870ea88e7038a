/* SPDX-License-Identifier: Apache-2.0 */
/* The phase ring and the name table (contract in phases/phases.h). */
#include "phases/phases.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "common/cs_compiler.h"
#include "record/thread_id.h"
#include "record/ticks.h"

/* ---- names: open addressing over a fixed table; a slot, once claimed, never changes ---- */

typedef struct cs_phase_name_slot_s {
  _Atomic(const char *) text; /* a copy; NULL: free */
  _Atomic uint64_t hash;      /* set before text is published */
} cs_phase_name_slot_t;

enum { CS_PHASES_NAME_SLOTS = CS_PHASES_MAX_NAMES * 2 }; /* half full at most: short probes */

/* ---- annotations ---- */

typedef struct cs_phase_slot_s {
  _Atomic uint64_t seq;   /* the claim number + 1 once written; 0 while being written */
  _Atomic uint64_t ticks;
  _Atomic uint32_t name;
  _Atomic int32_t device_stage; /* device << 1 | stage */
  _Atomic uint32_t thread;
} cs_phase_slot_t;

/* ---- threads' names: open addressing by thread id; a slot, once claimed, keeps its thread ---- */

typedef struct cs_phase_thread_slot_s {
  _Atomic uint32_t thread; /* 0: free */
  _Atomic uint32_t name;   /* nvtxNameOsThread's, a name id, 0: none */
  _Atomic uint32_t comm;   /* the kernel's name for it when it ended, a name id, 0: none */
} cs_phase_thread_slot_t;

enum { CS_PHASES_THREAD_SLOTS = CS_PHASES_MAX_THREADS * 2 };
static cs_phase_thread_slot_t cs_phase_threads[CS_PHASES_THREAD_SLOTS];

/* Whether this thread recorded an annotation: its name is kept as it ends (cs_phases_see_thread). */
static CS_TLS bool cs_phase_thread_seen;
static void cs_phases_see_thread(void);

static cs_phase_name_slot_t *_Atomic cs_phase_names;
static cs_phase_slot_t *_Atomic cs_phase_slots;
static _Atomic uint64_t cs_phase_claimed;  /* slots claimed since the start (or the last clear) */
static _Atomic uint32_t cs_phase_name_count;
static _Atomic uint32_t cs_phase_overflow_id;

static void *cs_phases_reserve(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void cs_phases_setup(void) {
  cs_ticks_init();
  /* calloc for the names (its large zeroed blocks are untouched pages too): the copies they point
   * to stay reachable for leak checkers, which do not scan raw mappings */
  cs_phase_name_slot_t *names = calloc(CS_PHASES_NAME_SLOTS, sizeof *names);
  cs_phase_slot_t *slots = cs_phases_reserve(CS_PHASES_CAPACITY * sizeof *slots);
  if (!names || !slots) {
    free(names);
    if (slots) munmap(slots, CS_PHASES_CAPACITY * sizeof *slots);
    return;
  }
  atomic_store_explicit(&cs_phase_names, names, memory_order_release);
  atomic_store_explicit(&cs_phase_slots, slots, memory_order_release);
}

bool cs_phases_init(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, cs_phases_setup);
  return atomic_load_explicit(&cs_phase_slots, memory_order_acquire) != NULL;
}

static uint64_t cs_phases_hash(const char *s, size_t len) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h | 1; /* never 0 */
}

/* The id of CS_PHASES_OVERFLOW_NAME (0 until it is interned, first of all names). */
static uint32_t cs_phases_overflow(void) { return atomic_load_explicit(&cs_phase_overflow_id, memory_order_acquire); }

static uint32_t cs_phases_intern(const char *name, size_t len) {
  cs_phase_name_slot_t *names = atomic_load_explicit(&cs_phase_names, memory_order_acquire);
  if (!names) return 0;
  uint64_t hash = cs_phases_hash(name, len);
  char *copy = NULL;
  for (size_t probe = 0; probe < CS_PHASES_NAME_SLOTS; probe++) {
    size_t i = (size_t)(hash + probe) & (CS_PHASES_NAME_SLOTS - 1);
    cs_phase_name_slot_t *slot = &names[i];
    const char *text = atomic_load_explicit(&slot->text, memory_order_acquire);
    if (!text) {
      /* claim it: only while the table is under its limit, so probes stay short */
      if (!copy) {
        if (atomic_fetch_add(&cs_phase_name_count, 1) >= CS_PHASES_MAX_NAMES) {
          atomic_fetch_sub(&cs_phase_name_count, 1);
          return cs_phases_overflow();
        }
        copy = malloc(len + 1);
        if (!copy) {
          atomic_fetch_sub(&cs_phase_name_count, 1);
          return cs_phases_overflow();
        }
        memcpy(copy, name, len);
        copy[len] = '\0';
      }
      uint64_t zero = 0;
      if (!atomic_compare_exchange_strong(&slot->hash, &zero, hash)) {
        /* another thread is claiming this slot: wait for its text, then compare */
        while (!(text = atomic_load_explicit(&slot->text, memory_order_acquire))) {
        }
      } else {
        atomic_store_explicit(&slot->text, copy, memory_order_release);
        return (uint32_t)i + 1;
      }
    }
    if (atomic_load_explicit(&slot->hash, memory_order_relaxed) == hash && strncmp(text, name, len) == 0 &&
        text[len] == '\0') {
      if (copy) {
        free(copy);
        atomic_fetch_sub(&cs_phase_name_count, 1);
      }
      return (uint32_t)i + 1;
    }
  }
  if (copy) {
    free(copy);
    atomic_fetch_sub(&cs_phase_name_count, 1);
  }
  return cs_phases_overflow();
}

uint32_t cs_phases_name(const char *name, size_t len) {
  if (!atomic_load_explicit(&cs_phase_names, memory_order_acquire)) return 0;
  if (!atomic_load_explicit(&cs_phase_overflow_id, memory_order_acquire)) {
    /* the overflow name takes a slot before any other can fill the table */
    static const char overflow[] = CS_PHASES_OVERFLOW_NAME;
    uint32_t id = cs_phases_intern(overflow, sizeof overflow - 1);
    uint32_t none = 0;
    atomic_compare_exchange_strong(&cs_phase_overflow_id, &none, id);
  }
  if (!name) name = "";
  len = strnlen(name, len);
  return cs_phases_intern(name, len);
}

const char *cs_phases_name_text(uint32_t id) {
  cs_phase_name_slot_t *names = atomic_load_explicit(&cs_phase_names, memory_order_acquire);
  if (!names || id == 0 || id > CS_PHASES_NAME_SLOTS) return "";
  const char *text = atomic_load_explicit(&names[id - 1].text, memory_order_acquire);
  return text ? text : "";
}

void cs_phases_record_on(uint32_t name, cs_phase_stage_t stage, int device, uint32_t thread, uint64_t ticks) {
  cs_phase_slot_t *slots = atomic_load_explicit(&cs_phase_slots, memory_order_acquire);
  if (!slots || name == 0) return;
  if (thread == 0) {
    thread = cs_thread_id();
    if (CS_UNLIKELY(!cs_phase_thread_seen)) cs_phases_see_thread();
  }
  uint64_t n = atomic_fetch_add_explicit(&cs_phase_claimed, 1, memory_order_relaxed);
  cs_phase_slot_t *s = &slots[n & (CS_PHASES_CAPACITY - 1)];
  atomic_store_explicit(&s->seq, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&s->ticks, ticks, memory_order_relaxed);
  atomic_store_explicit(&s->name, name, memory_order_relaxed);
  atomic_store_explicit(&s->device_stage, (int32_t)((device < 0 ? 0 : device) << 1 | (int)stage),
                        memory_order_relaxed);
  atomic_store_explicit(&s->thread, thread, memory_order_relaxed);
  atomic_store_explicit(&s->seq, n + 1, memory_order_release);
}

void cs_phases_record_at(uint32_t name, cs_phase_stage_t stage, int device, uint64_t ticks) {
  cs_phases_record_on(name, stage, device, 0, ticks);
}

void cs_phases_record(uint32_t name, cs_phase_stage_t stage, int device) {
  cs_phases_record_on(name, stage, device, 0, cs_ticks_now());
}

/* The slot of a thread: its own, or (claim) a free one it then owns; NULL when none. */
static cs_phase_thread_slot_t *cs_phases_thread_slot(uint32_t thread, bool claim) {
  if (thread == 0) return NULL;
  for (size_t probe = 0; probe < CS_PHASES_THREAD_SLOTS; probe++) {
    cs_phase_thread_slot_t *slot = &cs_phase_threads[(thread * 2654435761u + probe) & (CS_PHASES_THREAD_SLOTS - 1)];
    uint32_t held = atomic_load_explicit(&slot->thread, memory_order_acquire);
    if (held == thread) return slot;
    if (held != 0) continue;
    if (!claim) return NULL;
    if (atomic_compare_exchange_strong(&slot->thread, &held, thread) || held == thread) return slot;
  }
  return NULL;
}

static _Atomic uint32_t cs_phase_threads_named;

/* The thread's slot, claimed if it has none (only while under the limit, so probes stay short). */
static cs_phase_thread_slot_t *cs_phases_thread_claim(uint32_t thread) {
  cs_phase_thread_slot_t *slot = cs_phases_thread_slot(thread, false);
  if (slot) return slot;
  if (atomic_fetch_add(&cs_phase_threads_named, 1) >= CS_PHASES_MAX_THREADS) {
    atomic_fetch_sub(&cs_phase_threads_named, 1);
    return NULL;
  }
  return cs_phases_thread_slot(thread, true);
}

void cs_phases_name_thread(uint32_t thread, uint32_t name) {
  cs_phase_thread_slot_t *slot = name ? cs_phases_thread_claim(thread) : cs_phases_thread_slot(thread, false);
  if (slot) atomic_store_explicit(&slot->name, name, memory_order_release);
}

const char *cs_phases_thread_name(uint32_t thread) {
  cs_phase_thread_slot_t *slot = cs_phases_thread_slot(thread, false);
  uint32_t name = slot ? atomic_load_explicit(&slot->name, memory_order_acquire) : 0;
  return name ? cs_phases_name_text(name) : NULL;
}

static const char *cs_phases_thread_comm(uint32_t thread) {
  cs_phase_thread_slot_t *slot = cs_phases_thread_slot(thread, false);
  uint32_t comm = slot ? atomic_load_explicit(&slot->comm, memory_order_acquire) : 0;
  return comm ? cs_phases_name_text(comm) : NULL;
}

/* A thread that recorded a phase keeps, as it ends, the name the kernel has for it (what
 * pthread_setname_np set): /proc no longer lists it when a snapshot comes. A key's destructor runs
 * at the thread's end; the key is set once per thread, at its first annotation. */
static pthread_once_t cs_phase_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t cs_phase_key;
static bool cs_phase_key_made;
static void cs_phases_thread_ends(void *value) {
  (void)value;
  char comm[16] = "";
  if (prctl(PR_GET_NAME, comm, 0, 0, 0) != 0 || comm[0] == '\0') return;
  cs_phase_thread_slot_t *slot = cs_phases_thread_claim(cs_thread_id());
  if (slot) atomic_store_explicit(&slot->comm, cs_phases_name(comm, sizeof comm), memory_order_release);
}

static void cs_phases_make_key(void) {
  cs_phase_key_made = pthread_key_create(&cs_phase_key, cs_phases_thread_ends) == 0;
}

static CS_COLD void cs_phases_see_thread(void) {
  cs_phase_thread_seen = true;
  pthread_once(&cs_phase_key_once, cs_phases_make_key);
  if (cs_phase_key_made) (void)pthread_setspecific(cs_phase_key, (void *)1);
}

typedef struct cs_phase_raw_s {
  uint64_t ticks;
  uint64_t order;
  uint32_t name;
  int32_t device_stage;
  uint32_t thread;
} cs_phase_raw_t;

static int cs_phase_raw_cmp(const void *x, const void *y) {
  const cs_phase_raw_t *a = x, *b = y;
  if (a->ticks != b->ticks) return a->ticks < b->ticks ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
}

int cs_phases_copy(cs_phase_list_t *out) {
  *out = (cs_phase_list_t){.items = NULL, .count = 0, .dropped = 0, .owned = NULL};
  cs_phase_slot_t *slots = atomic_load_explicit(&cs_phase_slots, memory_order_acquire);
  if (!slots) return 0;
  uint64_t end = atomic_load_explicit(&cs_phase_claimed, memory_order_acquire);
  uint64_t begin = end > CS_PHASES_CAPACITY ? end - CS_PHASES_CAPACITY : 0;
  if (end == begin) return 0;
  cs_phase_raw_t *raw = malloc((size_t)(end - begin) * sizeof *raw);
  if (!raw) return -1;
  size_t n = 0;
  for (uint64_t k = begin; k < end; k++) {
    cs_phase_slot_t *s = &slots[k & (CS_PHASES_CAPACITY - 1)];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    cs_phase_raw_t r = {.ticks = atomic_load_explicit(&s->ticks, memory_order_relaxed), .order = k,
                        .name = atomic_load_explicit(&s->name, memory_order_relaxed),
                        .device_stage = atomic_load_explicit(&s->device_stage, memory_order_relaxed),
                        .thread = atomic_load_explicit(&s->thread, memory_order_relaxed)};
    atomic_thread_fence(memory_order_acquire);
    /* still being written, or already overwritten by a newer claim: skip it */
    if (seq != k + 1 || atomic_load_explicit(&s->seq, memory_order_relaxed) != seq) continue;
    raw[n++] = r;
  }
  qsort(raw, n, sizeof *raw, cs_phase_raw_cmp);
  cs_phase_t *items = malloc((n ? n : 1) * sizeof *items);
  if (!items) {
    free(raw);
    return -1;
  }
  cs_ticks_origin_t origin = cs_ticks_origin();
  cs_ticks_anchor_t now = cs_ticks_anchor();
  double ns_per_tick = cs_ticks_rate(&origin.anchor, &now);
  if (ns_per_tick <= 0.0) ns_per_tick = 1.0;
  for (size_t i = 0; i < n; i++) {
    uint64_t since = raw[i].ticks > origin.anchor.ticks ? raw[i].ticks - origin.anchor.ticks : 0;
    items[i] = (cs_phase_t){.name = cs_phases_name_text(raw[i].name),
                            .time_us = origin.epoch_us + (uint64_t)((double)since * ns_per_tick / 1000.0),
                            .device = raw[i].device_stage >> 1,
                            .stage = (cs_phase_stage_t)(raw[i].device_stage & 1),
                            .thread = raw[i].thread,
                            .thread_name = cs_phases_thread_name(raw[i].thread),
                            .thread_ended_as = cs_phases_thread_comm(raw[i].thread)};
  }
  free(raw);
  *out = (cs_phase_list_t){.items = items, .count = n, .dropped = begin, .owned = NULL};
  return 0;
}

void cs_phase_list_free(cs_phase_list_t *list) {
  free(list->items);
  free(list->owned);
  *list = (cs_phase_list_t){.items = NULL, .count = 0, .dropped = 0, .owned = NULL};
}

/* Newest first, the thread's own annotations: an END makes the next START of its name closed
 * rather than open (ranges of one name nest like parentheses), so the first START without a
 * pending END is innermost. */
uint32_t cs_phases_open_on(uint32_t thread) {
  cs_phase_slot_t *slots = atomic_load_explicit(&cs_phase_slots, memory_order_acquire);
  if (!slots) return 0;
  enum { CS_PENDING = 64 };
  uint32_t pending_name[CS_PENDING];
  uint32_t pending_count[CS_PENDING];
  size_t pending = 0;
  uint64_t end = atomic_load_explicit(&cs_phase_claimed, memory_order_acquire);
  uint64_t oldest = end > CS_PHASES_OPEN_LOOKBACK ? end - CS_PHASES_OPEN_LOOKBACK : 0;
  for (uint64_t k = end; k-- > oldest;) {
    cs_phase_slot_t *s = &slots[k & (CS_PHASES_CAPACITY - 1)];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    uint32_t name = atomic_load_explicit(&s->name, memory_order_relaxed);
    int32_t device_stage = atomic_load_explicit(&s->device_stage, memory_order_relaxed);
    uint32_t by = atomic_load_explicit(&s->thread, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (seq != k + 1 || atomic_load_explicit(&s->seq, memory_order_relaxed) != seq) continue;
    if (by != thread) continue;
    size_t i = 0;
    while (i < pending && pending_name[i] != name) i++;
    if ((device_stage & 1) == CS_PHASE_END) {
      if (i == pending) {
        if (pending == CS_PENDING) return 0; /* too tangled to tell */
        pending_name[pending] = name;
        pending_count[pending++] = 0;
      }
      pending_count[i]++;
    } else if (i < pending && pending_count[i] > 0) {
      pending_count[i]--;
    } else {
      return name;
    }
  }
  return 0;
}

void cs_phases_clear(void) {
  atomic_store(&cs_phase_claimed, 0);
  for (size_t i = 0; i < CS_PHASES_THREAD_SLOTS; i++) {
    atomic_store(&cs_phase_threads[i].name, 0);
    atomic_store(&cs_phase_threads[i].comm, 0);
    atomic_store(&cs_phase_threads[i].thread, 0);
  }
  atomic_store(&cs_phase_threads_named, 0);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Native stack capture: a walk by cached unwind rules (stack_rules.h), or libunwind's unw_backtrace
 * where the rules cannot walk the stack, into the caller's buffer, minus cudasnap's own leading
 * frames. See stack.h for the contract. */
#define UNW_LOCAL_ONLY /* the local-only unwinder: no remote address spaces, faster lookups */

#include <libunwind.h> /* types only: the functions are libunwind's, opened privately */
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__)
#include <emmintrin.h> /* SSE2: every x86-64 has it */
#endif

#include "common/cs_compiler.h"
#include "record/stack.h"
#include "record/stack_rules.h"
#include "common/cs_private_libs.h"

/* The replay reads the program's own stack, outside the frames the compiler knows about. */
#define CS_NO_SANITIZE __attribute__((no_sanitize("address", "thread")))

/* A test seam is writable only in test builds (style.md section 14.5, jemalloc's JET_MUTABLE). */
#ifndef CS_TEST_MUTABLE
#ifdef CS_TESTING
#define CS_TEST_MUTABLE
#else
#define CS_TEST_MUTABLE const
#endif
#endif

/* stack.h declares this type only for tests; an identical typedef is allowed again in C11. */
typedef size_t (*cs_stack_capture_fn)(uintptr_t *pcs, size_t max);

/* ---- cudasnap's own code: leading frames in [lo, hi) are skipped ----
 *
 * The range is the executable segments of the object that contains this file: libcudasnap.so in
 * production, the test executable in a unit test (where tests set it with
 * cs_stack_set_skip_range). Only *leading* frames are skipped: cudasnap frames further out (a
 * hook that called into the driver, which called another hook) are part of how the program got
 * there and stay. Relaxed atomics: the range is written once by cs_stack_init, and a capture
 * racing with it merely skips nothing. */
static _Atomic uintptr_t cs_stack_skip_lo;
static _Atomic uintptr_t cs_stack_skip_hi;
static atomic_int cs_stack_initialized;

/* Leading frames to unwind beyond `max`, so that `max` remain after skipping our own: the
 * hook, the recorder, this file. Each extra frame costs ~8 ns whether skipped or not, so instead
 * of a generous fixed margin the margin follows the most frames skipped so far (a relaxed hint,
 * rarely written). Until it has settled, a capture from a stack deeper than max may lose an
 * outermost frame or two. */
enum { CS_STACK_SKIP_INITIAL = 4, CS_STACK_SKIP_MAX = 16 };
static atomic_uint cs_stack_skip_hint = CS_STACK_SKIP_INITIAL;

/* libunwind, loaded privately by cs_stack_init (private_libs.h); NULL: no stacks. */
static _Atomic(cs_unw_backtrace_fn) cs_stack_unwinder;

/* unw_backtrace keeps each return address's frame layout in a per-thread table that it never
 * empties (libunwind 1.6's trace cache): once a library is unloaded and another mapped at its
 * addresses, a thread that walked the old one would walk the new one's frames by the old layouts
 * (wrong frames, or reads at wrong offsets). So a thread uses unw_backtrace only in the generation
 * of the loaded objects (stack_rules.h) it first used it in, and unw_step, whose caches
 * cs_stack_forget_unloaded flushes, after. The generation + 1 of its first use; 0: none yet. */
static CS_TLS uint64_t cs_stack_backtrace_generation;

/* The walk of unw_backtrace by unw_step, from this function outward; 0 without libunwind. */
CS_NOINLINE static int cs_stack_step_unw(void **raw, int max) {
  const cs_unw_step_api_t *api = cs_private_unw_step();
  if (!api) return 0;
  unw_context_t context;
  unw_cursor_t cursor;
  if (api->getcontext(&context) != 0 || api->init_local(&cursor, &context) != 0) return 0;
  int n = 0;
  while (n < max && api->step(&cursor) > 0) {
    unsigned long ip;
    if (api->get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    raw[n++] = (void *)ip;
  }
  return n;
}

/* Whether this thread's unw_backtrace table may hold layouts of code unloaded since. */
static inline bool cs_stack_backtrace_stale(void) {
  const uint64_t now = cs_stack_rules_generation() + 1;
  if (CS_UNLIKELY(cs_stack_backtrace_generation == 0)) cs_stack_backtrace_generation = now;
  return cs_stack_backtrace_generation != now;
}

void cs_stack_forget_unloaded(void) {
  cs_stack_rules_forget();
  const cs_unw_step_api_t *api = cs_private_unw_step();
  if (api) api->flush_cache(*api->local_space, 0, 0);
}

static size_t cs_stack_capture_unw(uintptr_t *pcs, size_t max) {
  if (max == 0) return 0;
  if (max > CS_STACK_MAX_DEPTH) max = CS_STACK_MAX_DEPTH;
  const size_t margin = atomic_load_explicit(&cs_stack_skip_hint, memory_order_relaxed);
  /* unw_backtrace wants void *[]: a local array, converted below (uintptr_t * is not void **). */
  void *raw[CS_STACK_MAX_DEPTH + CS_STACK_SKIP_MAX];
  cs_unw_backtrace_fn backtrace_fn = atomic_load_explicit(&cs_stack_unwinder, memory_order_relaxed);
  if (CS_UNLIKELY(!backtrace_fn)) { /* before cs_stack_init: load it now (once) */
    backtrace_fn = cs_private_unw_backtrace();
    if (!backtrace_fn) return 0;
    atomic_store_explicit(&cs_stack_unwinder, backtrace_fn, memory_order_relaxed);
  }
  const int got = cs_stack_backtrace_stale() ? cs_stack_step_unw(raw, (int)(max + margin))
                                             : backtrace_fn(raw, (int)(max + margin));
  if (got <= 0) return 0;

  const uintptr_t lo = atomic_load_explicit(&cs_stack_skip_lo, memory_order_relaxed);
  const uintptr_t hi = atomic_load_explicit(&cs_stack_skip_hi, memory_order_relaxed);
  size_t first = 0;
  const size_t total = (size_t)got;
  while (first < total && (uintptr_t)raw[first] - lo < hi - lo) first++; /* lo <= pc < hi */
  if (CS_UNLIKELY(first > margin && total == max + margin))
    atomic_store_explicit(&cs_stack_skip_hint,
                          (unsigned)(first < CS_STACK_SKIP_MAX ? first : CS_STACK_SKIP_MAX),
                          memory_order_relaxed);

  size_t n = total - first;
  if (n > max) n = max;
  for (size_t i = 0; i < n; i++) pcs[i] = (uintptr_t)raw[first + i];
  return n;
}

/* ---- the thread's last walk, replayed (issue 36) ----
 *
 * A walk by rules is a function of where it starts, of the words it reads from the stack (return
 * addresses and saved rbp's) and of the rules of the return addresses it meets, which stay as they
 * were compiled. A thread that allocates in a loop captures from the same place again and again:
 * when a capture starts where this thread's last walk started (the same return address, CFA and
 * rbp, the same range skipped and the same depth) and every word that walk read holds what it
 * held, this walk would read the same words, take the same steps and write the same frames. The
 * check is a row of loads from places known beforehand, where the walk is a chain of them (on a
 * frame-pointer chain each place waits for the word read before it) with a rule to fetch per
 * frame. It reads the words in the walk's order and stops at the first that differs, so it reads
 * nothing the walk would not have read: each place follows from the words before it, as in the
 * walk. Initial-exec TLS, as the walk's own (async-signal-safe); a capture from a signal handler
 * that interrupted one (`busy`) walks without it. */
#ifdef CS_TESTING
static atomic_ulong cs_stack_replays;
unsigned long cs_stack_test_replays(void) { return atomic_load(&cs_stack_replays); }
#define CS_STACK_COUNT_REPLAY() atomic_fetch_add_explicit(&cs_stack_replays, 1, memory_order_relaxed)
#else
#define CS_STACK_COUNT_REPLAY() ((void)0)
#endif

#if defined(__x86_64__)
enum { CS_STACK_REPLAY_PCS = 40 }; /* the default 32 frames and a margin */
typedef struct cs_stack_replay_s {
  cs_walk_trace_t trace; /* the last walk's reads */
  cs_stack_start_t start;
  uintptr_t skip_lo, skip_hi;
  size_t max;
  size_t n; /* the frames it wrote, pcs[0, n) */
  uintptr_t pcs[CS_STACK_REPLAY_PCS];
  uint64_t number;     /* its number (cs_stack_capture_numbered) */
  uint64_t generation; /* of the rules it walked by: a library unloaded since ends the replay */
  bool valid;
} cs_stack_replay_t;
/* A thread's replay lives in a page of its own, mapped at its first capture and unmapped when it
 * exits: 1.6 KB of it in the library's initial-exec TLS would leave a copy opened with dlopen (as
 * NVTX opens its injection) no room in glibc's static TLS ("cannot allocate memory in static TLS
 * block"): the library keeps its TLS near 1 KB. */
static CS_TLS cs_stack_replay_t *cs_stack_replay_block;
static pthread_key_t cs_stack_replay_key;
static atomic_bool cs_stack_replay_key_made;
static CS_TLS volatile sig_atomic_t cs_stack_replay_busy;

static void cs_stack_replay_unmap(void *block) {
  cs_stack_replay_block = NULL; /* a capture in a later destructor maps another */
  munmap(block, sizeof(cs_stack_replay_t));
}

static void cs_stack_replay_make_key(void) {
  if (pthread_key_create(&cs_stack_replay_key, cs_stack_replay_unmap) == 0)
    atomic_store_explicit(&cs_stack_replay_key_made, true, memory_order_release);
}

/* This thread's replay; NULL (walk without one) before cs_stack_init or when no page is had.
 * mmap and pthread_setspecific (keys below 32 use the thread's own array) are async-signal-safe. */
static cs_stack_replay_t *cs_stack_replay_of_thread(void) {
  cs_stack_replay_t *r = cs_stack_replay_block;
  if (CS_LIKELY(r != NULL)) return r;
  if (!atomic_load_explicit(&cs_stack_replay_key_made, memory_order_acquire)) return NULL;
  void *page = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return NULL;
  if (pthread_setspecific(cs_stack_replay_key, page) != 0) {
    munmap(page, sizeof *r);
    return NULL;
  }
  return cs_stack_replay_block = page;
}
static CS_TLS uint64_t cs_stack_walks; /* the thread's walks kept for a replay: the last one's number */

/* Do the words the trace read, in its order, still hold what they held? A window at a time: two
 * 16-byte loads and a compare, where the walk took a rule and a chain of loads per frame. Reading
 * the lower word of a window whose upper word alone was read is safe: it lies between that word
 * and the capture's own frame, on the same stack. */
CS_NO_SANITIZE static bool cs_stack_trace_holds(const cs_walk_trace_t *trace, uintptr_t base) {
  for (uint32_t i = 0; i < trace->windows; i++) {
    const cs_walk_window_t w = trace->window[i];
    const __m128i got = _mm_loadu_si128((const __m128i *)(base + (uintptr_t)(intptr_t)w.where));
    const __m128i want = _mm_load_si128((const __m128i *)trace->value[i]);
    const unsigned same = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(got, want));
    if ((same & w.compared) != w.compared) return false;
  }
  return true;
}

static long cs_stack_walk_replayed(const cs_stack_start_t *start, uintptr_t lo, uintptr_t hi, uintptr_t *pcs,
                                   size_t max, uint64_t *number) {
  const size_t limit = max + CS_STACK_SKIP_MAX;
  *number = 0;
  if (CS_UNLIKELY(cs_stack_replay_busy)) return cs_stack_walk_rules(start, lo, hi, pcs, max, limit, NULL);
  cs_stack_replay_t *r = cs_stack_replay_of_thread();
  if (CS_UNLIKELY(r == NULL)) return cs_stack_walk_rules(start, lo, hi, pcs, max, limit, NULL);
  cs_stack_replay_busy = 1;
  atomic_signal_fence(memory_order_seq_cst);
  long got;
  const uint64_t generation = cs_stack_rules_generation();
  if (r->valid && r->generation == generation && r->start.ra == start->ra && r->start.cfa == start->cfa && r->start.rbp == start->rbp &&
      r->skip_lo == lo && r->skip_hi == hi && r->max == max && cs_stack_trace_holds(&r->trace, start->cfa)) {
    memcpy(pcs, r->pcs, r->n * sizeof *pcs);
    got = (long)r->n;
    *number = r->number;
    CS_STACK_COUNT_REPLAY();
  } else {
    r->valid = false;
    r->trace.windows = 0;
    got = cs_stack_walk_rules(start, lo, hi, pcs, max, limit, &r->trace);
    if (got >= 0 && r->trace.windows <= CS_WALK_TRACE_WINDOWS && (size_t)got <= CS_STACK_REPLAY_PCS) {
      r->start = *start;
      r->skip_lo = lo;
      r->skip_hi = hi;
      r->max = max;
      r->n = (size_t)got;
      memcpy(r->pcs, pcs, r->n * sizeof *pcs);
      r->number = *number = ++cs_stack_walks;
      r->generation = generation;
      r->valid = true;
    }
  }
  atomic_signal_fence(memory_order_seq_cst);
  cs_stack_replay_busy = 0;
  return got;
}

#endif /* __x86_64__ */

/* The walk by cached rules (stack_rules.h), or its replay (with its number, else 0). Starts at the
 * frame of this function itself: __builtin_frame_address(0) makes the compiler keep rbp as this
 * frame's base, with the caller's rbp and the return address above it. Never inlined, so that frame
 * is always its own. CS_STACK_WALK_FAILED: a frame on the way needs libunwind. */
CS_NOINLINE static long cs_stack_walk_here(uintptr_t *pcs, size_t max, uint64_t *number) {
#if defined(__x86_64__)
  const uintptr_t *fp = __builtin_frame_address(0);
  const cs_stack_start_t start = {.ra = fp[1], .cfa = (uintptr_t)(fp + 2), .rbp = fp[0]};
  const uintptr_t lo = atomic_load_explicit(&cs_stack_skip_lo, memory_order_relaxed);
  const uintptr_t hi = atomic_load_explicit(&cs_stack_skip_hi, memory_order_relaxed);
  if (number) return cs_stack_walk_replayed(&start, lo, hi, pcs, max, number);
  return cs_stack_walk_rules(&start, lo, hi, pcs, max, max + CS_STACK_SKIP_MAX, NULL);
#else
  (void)pcs;
  (void)max;
  if (number) *number = 0;
  return CS_STACK_WALK_FAILED;
#endif
}

static size_t cs_stack_capture_rules_numbered(uintptr_t *pcs, size_t max, uint64_t *number) {
  *number = 0;
  if (max == 0) return 0;
  if (max > CS_STACK_MAX_DEPTH) max = CS_STACK_MAX_DEPTH;
  const long got = cs_stack_walk_here(pcs, max, number);
  if (CS_LIKELY(got >= 0)) return (size_t)got;
  *number = 0;
  return cs_stack_capture_unw(pcs, max);
}

static size_t cs_stack_capture_rules(uintptr_t *pcs, size_t max) {
  uint64_t number;
  return cs_stack_capture_rules_numbered(pcs, max, &number);
}

/* test seam: replaced by tests that need identical stacks on purpose */
cs_stack_capture_fn CS_TEST_MUTABLE cs_stack_capture_impl = cs_stack_capture_rules;

#ifdef CS_TESTING
size_t cs_stack_capture_libunwind(uintptr_t *pcs, size_t max) { return cs_stack_capture_unw(pcs, max); }
long cs_stack_capture_by_rules(uintptr_t *pcs, size_t max) { return cs_stack_walk_here(pcs, max, NULL); }
#endif

/* Never inlined, even by link-time optimization: the symbolizer names a PC by the function around it
 * and gives the line of the line table, which for inlined code is the inlined function's, so a
 * caller holding this body would show under its own name with this file's line. */
CS_NOINLINE size_t cs_stack_capture(uintptr_t *pcs, size_t max) { return cs_stack_capture_impl(pcs, max); }

CS_NOINLINE size_t cs_stack_capture_numbered(uintptr_t *pcs, size_t max, uint64_t *number) {
  if (CS_LIKELY(cs_stack_capture_impl == cs_stack_capture_rules))
    return cs_stack_capture_rules_numbered(pcs, max, number);
  *number = 0; /* a test's replacement */
  return cs_stack_capture_impl(pcs, max);
}

/* ---- init ---- */

typedef struct cs_stack_range_s {
  uintptr_t probe; /* an address inside the object we look for */
  uintptr_t lo;    /* out: lowest address of its executable segments; 0 if not found */
  uintptr_t hi;    /* out: one past the highest */
} cs_stack_range_t;

static int cs_stack_find_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  cs_stack_range_t *r = arg;
  bool mine = false;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    const uintptr_t start = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    const uintptr_t end = start + (uintptr_t)ph->p_memsz;
    if (r->probe >= start && r->probe < end) mine = true;
    if (!(ph->p_flags & PF_X)) continue;
    if (start < lo) lo = start;
    if (end > hi) hi = end;
  }
  if (!mine || lo >= hi) return 0;
  r->lo = lo;
  r->hi = hi;
  return 1; /* stop iterating */
}

void cs_stack_init(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&cs_stack_initialized, &expected, 1)) return;

  atomic_store_explicit(&cs_stack_unwinder, cs_private_unw_backtrace(), memory_order_relaxed);
#if defined(__x86_64__)
  cs_stack_replay_make_key();
#endif
  /* dl_iterate_phdr takes the loader lock: fine here, never on the hot path. */
  cs_stack_range_t r = {.probe = (uintptr_t)&cs_stack_capture_unw, .lo = 0, .hi = 0};
  dl_iterate_phdr(cs_stack_find_object, &r);
  atomic_store_explicit(&cs_stack_skip_lo, r.lo, memory_order_relaxed);
  atomic_store_explicit(&cs_stack_skip_hi, r.hi, memory_order_relaxed);

  /* Warm-up: libunwind's first unwind initializes its address space, reads the unwind tables
   * of every object on the way and sets up this thread's trace cache (mmap). Doing it here keeps
   * that out of the first hooked call. Other threads set up their own cache on first use. */
  uintptr_t pcs[CS_STACK_MAX_DEPTH];
  (void)cs_stack_capture_unw(pcs, CS_STACK_MAX_DEPTH);
}

#ifdef CS_TESTING
void cs_stack_set_skip_range(uintptr_t lo, uintptr_t hi) {
  atomic_store_explicit(&cs_stack_skip_lo, lo, memory_order_relaxed);
  atomic_store_explicit(&cs_stack_skip_hi, hi, memory_order_relaxed);
}
#endif

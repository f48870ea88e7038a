/* SPDX-License-Identifier: Apache-2.0 */
/* The walk by cached unwind rules (record/stack_rules.c, stack_cfi.c) gives the frames libunwind
 * gives, on every kind of stack the tests can build: this file's own -O2 code, a shared library
 * built -O2 -fomit-frame-pointer and reached through the PLT, libc calling back (qsort), a frame
 * with a big array and alloca (a CFA on rbp), a new thread down to its outermost frame, signal
 * handlers (where the walk must give up and libunwind answer), a timer signal landing inside
 * the fake libcuda, and a library unloaded and another loaded at its addresses with other frames
 * (the rules of the first must be forgotten). Each capture runs both unwinders from the same frame and compares the frames
 * from that frame's caller outward, to the end of the stack. */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <cmocka.h>

#include "record/stack.h"
#include "record/stack_rules.h"

#define TEST_FRAME __attribute__((noinline, noclone))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

typedef size_t (*stack_rules_lib_fn)(void *arg);
size_t stack_rules_lib_chain(int depth, stack_rules_lib_fn fn, void *arg);
size_t stack_rules_lib_big(int n, stack_rules_lib_fn fn, void *arg);

typedef struct both_s {
  uintptr_t anchor; /* the return address out of capture_both: where both lists must agree */
  uintptr_t unw[CS_STACK_MAX_DEPTH];
  uintptr_t rules[CS_STACK_MAX_DEPTH];
  uintptr_t all[CS_STACK_MAX_DEPTH];
  size_t n_unw, n_all;
  long n_rules;
} both_t;

TEST_FRAME static void capture_both(both_t *b) {
  b->anchor = (uintptr_t)__builtin_return_address(0);
  b->n_unw = cs_stack_capture_libunwind(b->unw, CS_STACK_MAX_DEPTH);
  b->n_rules = cs_stack_capture_by_rules(b->rules, CS_STACK_MAX_DEPTH);
  b->n_all = cs_stack_capture(b->all, CS_STACK_MAX_DEPTH);
  KEEP_FRAME();
}

static long index_of(const uintptr_t *pcs, size_t n, uintptr_t pc) {
  for (size_t i = 0; i < n && i < 8; i++) /* the capture functions: more in a Debug build */
    if (pcs[i] == pc) return (long)i;
  return -1;
}

/* `got` from the anchor on is libunwind's list from the anchor on. */
static bool same_from_anchor(const both_t *b, const uintptr_t *got, size_t n) {
  const long a = index_of(b->unw, b->n_unw, b->anchor);
  const long g = index_of(got, n, b->anchor);
  if (a < 0 || g < 0) return false;
  if (b->n_unw - (size_t)a != n - (size_t)g) return false;
  return memcmp(b->unw + a, got + g, (n - (size_t)g) * sizeof *got) == 0;
}

/* by_rules: the walk must have answered alone (false: it must have given up). */
static void check_both(const both_t *b, bool by_rules) {
  assert_true(b->n_unw > 3);
  assert_true(same_from_anchor(b, b->all, b->n_all));
  if (by_rules) {
    assert_true(b->n_rules >= 0);
    assert_true(same_from_anchor(b, b->rules, (size_t)b->n_rules));
  } else {
    assert_int_equal(b->n_rules, CS_STACK_WALK_FAILED);
  }
}

static size_t capture_cb(void *arg) {
  capture_both(arg);
  KEEP_FRAME();
  return 1;
}

TEST_FRAME static void chain_c(both_t *b) { capture_both(b); KEEP_FRAME(); }
TEST_FRAME static void chain_b(both_t *b) { chain_c(b); KEEP_FRAME(); }
TEST_FRAME static void chain_a(both_t *b) { chain_b(b); KEEP_FRAME(); }

static int no_skip(void **state) {
  (void)state;
  cs_stack_init();
  cs_stack_set_skip_range(0, 0);
  return 0;
}

static void test_own_chain(void **state) {
  (void)state;
  both_t *b = calloc(1, sizeof *b);
  for (int round = 0; round < 3; round++) { /* the first compiles the rules, later ones hit */
    chain_a(b);
    check_both(b, true);
  }
  free(b);
}

static void test_library_without_frame_pointers(void **state) {
  (void)state;
  both_t *b = calloc(1, sizeof *b);
  for (int depth = 0; depth < 12; depth += 5) {
    assert_int_equal(stack_rules_lib_chain(depth, capture_cb, b), 1);
    check_both(b, true);
  }
  assert_int_equal(stack_rules_lib_big(7, capture_cb, b), 1);
  check_both(b, true);
  free(b);
}

static both_t *qsort_both;
static int qsort_captures;
static int compare_ints(const void *x, const void *y) {
  if (qsort_captures++ == 3) capture_both(qsort_both);
  KEEP_FRAME();
  return *(const int *)x - *(const int *)y;
}

static void test_libc_callback(void **state) {
  (void)state;
  int v[64];
  for (int i = 0; i < 64; i++) v[i] = (i * 37) % 64;
  qsort_both = calloc(1, sizeof *qsort_both);
  qsort_captures = 0;
  qsort(v, 64, sizeof v[0], compare_ints);
  check_both(qsort_both, true);
  free(qsort_both);
}

static void *thread_main(void *arg) {
  chain_a(arg);
  KEEP_FRAME();
  return NULL;
}

/* A thread's stack ends in clone3, whose return address the tables leave undefined. */
static void test_new_thread(void **state) {
  (void)state;
#ifdef __SANITIZE_THREAD__
  /* libunwind frees its per-thread cache in a thread-specific destructor that locks a mutex,
   * which ThreadSanitizer's interceptor no longer can at that point of the thread's exit
   * (SIGSEGV in __tsan::MutexPreLock): libunwind's and TSan's quarrel, not the walk's. */
  skip();
#endif
  both_t *b = calloc(1, sizeof *b);
  for (int round = 0; round < 2; round++) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_main, b), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    check_both(b, true);
  }
  free(b);
}

/* A depth limit keeps the innermost frames of the whole stack, as libunwind's does: every capture
 * from one call site, the first one whole. */
TEST_FRAME static void capture_limits(uintptr_t (*pcs)[CS_STACK_MAX_DEPTH], size_t *n,
                                      const volatile size_t *max, size_t count) {
#pragma GCC unroll 1
  for (size_t i = 0; i < count; i++) n[i] = cs_stack_capture(pcs[i], max[i]);
  KEEP_FRAME();
}

static void test_depth_limits(void **state) {
  (void)state;
  enum { COUNT = 48 };
  uintptr_t(*pcs)[CS_STACK_MAX_DEPTH] = calloc(COUNT, sizeof *pcs);
  size_t n[COUNT];
  volatile size_t max[COUNT];
  for (size_t i = 0; i < COUNT; i++) max[i] = i == 0 ? CS_STACK_MAX_DEPTH : i;
  capture_limits(pcs, n, max, COUNT);
  assert_true(n[0] > 4 && n[0] < COUNT - 2);
  for (size_t i = 1; i < COUNT; i++) {
    assert_int_equal(n[i], i < n[0] ? i : n[0]);
    assert_memory_equal(pcs[i], pcs[0], n[i] * sizeof pcs[0][0]);
  }
  free(pcs);
}

static both_t *signal_both;
static void on_signal(int sig) {
  (void)sig;
  capture_both(signal_both);
  KEEP_FRAME();
}

/* A signal frame cannot be walked by rule: the walk gives up, libunwind answers. */
static void test_signal_handler(void **state) {
  (void)state;
  signal_both = calloc(1, sizeof *signal_both);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
  for (int round = 0; round < 2; round++) {
    raise(SIGUSR1);
    check_both(signal_both, false);
  }
  sigaction(SIGUSR1, &old, NULL);
  free(signal_both);
}

/* ---- a timer signal inside the fake libcuda ---- */

static both_t *timer_both;
static volatile sig_atomic_t timer_hits, timer_checked_bad, timer_in_driver;
static uintptr_t driver_lo, driver_hi;

static void on_timer(int sig) {
  (void)sig;
  capture_both(timer_both);
  timer_hits++;
  if (!same_from_anchor(timer_both, timer_both->all, timer_both->n_all)) timer_checked_bad++;
  /* ThreadSanitizer runs handlers later, from its own frames, where the walk may answer */
  if (timer_both->n_rules >= 0 &&
      !same_from_anchor(timer_both, timer_both->rules, (size_t)timer_both->n_rules))
    timer_checked_bad++;
  for (size_t i = 0; i < timer_both->n_all; i++)
    if (timer_both->all[i] >= driver_lo && timer_both->all[i] < driver_hi) timer_in_driver++;
}

typedef int (*cu_fn0)(unsigned);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_retain_fn)(void **, int);
typedef int (*cu_set_fn)(void *);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_free_fn)(unsigned long long);

/* dlsym's object pointer into a function pointer, which ISO C has no cast for */
#define LOAD(var, name)                                                                            \
  do {                                                                                             \
    void *sym_ = dlsym(h, name);                                                                   \
    memcpy(&(var), &sym_, sizeof(var));                                                            \
  } while (0)

static void test_signal_inside_fake_driver(void **state) {
  (void)state;
#ifndef FAKE_LIBCUDA
  skip();
#define FAKE_LIBCUDA "libcuda.so.1"
#endif
  void *h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(h);
  cu_fn0 init = NULL;
  LOAD(init, "cuInit");
  cu_get_fn get = NULL;
  LOAD(get, "cuDeviceGet");
  cu_retain_fn retain = NULL;
  LOAD(retain, "cuDevicePrimaryCtxRetain");
  cu_set_fn set = NULL;
  LOAD(set, "cuCtxSetCurrent");
  cu_alloc_fn alloc = NULL;
  LOAD(alloc, "cuMemAlloc_v2");
  cu_free_fn release = NULL;
  LOAD(release, "cuMemFree_v2");
  assert_true(init && get && retain && set && alloc && release);
  int dev = 0;
  void *ctx = NULL;
  assert_int_equal(init(0), 0);
  assert_int_equal(get(&dev, 0), 0);
  assert_int_equal(retain(&ctx, dev), 0);
  assert_int_equal(set(ctx), 0);
  Dl_info info;
  assert_true(dladdr((void *)(uintptr_t)alloc, &info));
  driver_lo = (uintptr_t)info.dli_fbase;
  driver_hi = driver_lo + ((uintptr_t)1 << 24);

  timer_both = calloc(1, sizeof *timer_both);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_timer;
  sa.sa_flags = SA_RESTART;
  assert_int_equal(sigaction(SIGPROF, &sa, &old), 0);
  const struct itimerval every = {.it_interval = {0, 200}, .it_value = {0, 200}};
  assert_int_equal(setitimer(ITIMER_PROF, &every, NULL), 0);
  const time_t deadline = time(NULL) + 20;
  while ((timer_in_driver == 0 || timer_hits < 50) && time(NULL) < deadline) {
    unsigned long long p = 0;
    if (alloc(&p, 1 << 20) == 0) release(p);
  }
  const struct itimerval stop = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &stop, NULL);
  sigaction(SIGPROF, &old, NULL);
  assert_true(timer_hits > 0);
  assert_true(timer_in_driver > 0);
  assert_int_equal(timer_checked_bad, 0);
  free(timer_both);
}

/* ---- a library unloaded, another at its addresses ---- */

typedef size_t (*swap_chain_fn)(int depth, stack_rules_lib_fn fn, void *arg);
typedef size_t (*swap_frame_fn)(void);
enum { SWAP_DEPTH = 6 };

typedef struct swap_lib_s {
  void *handle;
  void *chain_at; /* the chain function's address, as dlsym gave it */
  swap_chain_fn chain;
  size_t frame;
} swap_lib_t;

static swap_lib_t swap_open(const char *path) {
  swap_lib_t lib = {.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)};
  assert_non_null(lib.handle);
  lib.chain_at = dlsym(lib.handle, "stack_rules_swap_chain");
  void *frame = dlsym(lib.handle, "stack_rules_swap_frame");
  assert_non_null(lib.chain_at);
  assert_non_null(frame);
  swap_frame_fn frame_fn;
  memcpy(&lib.chain, &lib.chain_at, sizeof lib.chain_at);
  memcpy(&frame_fn, &frame, sizeof frame);
  lib.frame = frame_fn();
  return lib;
}

/* A capture SWAP_DEPTH + 1 frames deep in the library: libunwind's frames hold that many in the
 * chain function (the reference is right), and the rules' are libunwind's. */
static void swap_capture_and_check(const swap_lib_t *lib, both_t *b) {
  assert_int_equal(lib->chain(SWAP_DEPTH, capture_cb, b), 1);
  Dl_info at;
  assert_true(dladdr(lib->chain_at, &at) != 0);
  size_t in_chain = 0;
  for (size_t i = 0; i < b->n_unw; i++) {
    Dl_info pc;
    if (dladdr((void *)(b->unw[i] - 1), &pc) && pc.dli_saddr == at.dli_saddr) in_chain++;
  }
  assert_int_equal(in_chain, SWAP_DEPTH + 1);
  check_both(b, true);
}

#ifndef __SANITIZE_THREAD__ /* test_new_thread says why no thread may end here under TSan */
/* The thread that walked library A last keeps A's rules in its memo of its last walk; after the
 * swap it walks B's frames at the same depths and return addresses. */
typedef struct swap_thread_s {
  pthread_barrier_t step;
  const swap_lib_t *lib;
  both_t *b;
} swap_thread_t;

static void *swap_thread_main(void *arg) {
  swap_thread_t *t = arg;
  for (int round = 0; round < 2; round++) {
    pthread_barrier_wait(&t->step); /* the library to walk is there */
    assert_int_equal(t->lib->chain(SWAP_DEPTH, capture_cb, t->b), 1);
    pthread_barrier_wait(&t->step); /* walked */
  }
  return NULL;
}
#endif

/* A library is unloaded (dlclose) and another with the same code and other frames is loaded at its
 * addresses: the rules compiled from the first, in the table and in each thread's memo, must not
 * be used for the second. Before the rules had generations, the walk read the return addresses of
 * B's frames where A's rules said: frames that are not libunwind's, or a failed walk. */
static void test_library_swapped_at_same_address(void **state) {
  (void)state;
  both_t *b = calloc(1, sizeof *b), *tb = calloc(1, sizeof *tb);
  assert_non_null(b);
  assert_non_null(tb);
  swap_lib_t a = swap_open(SWAP_LIB_A);
  assert_int_equal(a.frame, 3000);
  const void *a_chain = a.chain_at;
  for (int round = 0; round < 2; round++) swap_capture_and_check(&a, b); /* compiled, then from the memo */

#ifndef __SANITIZE_THREAD__
  swap_thread_t t = {.lib = &a, .b = tb};
  pthread_t thread;
  assert_int_equal(pthread_barrier_init(&t.step, NULL, 2), 0);
  assert_int_equal(pthread_create(&thread, NULL, swap_thread_main, &t), 0);
  pthread_barrier_wait(&t.step);
  pthread_barrier_wait(&t.step);
  check_both(tb, true);
#endif

  assert_int_equal(dlclose(a.handle), 0);
  swap_lib_t bl = swap_open(SWAP_LIB_B);
  assert_int_equal(bl.frame, 200);
  /* the loader reuses the hole A left: the same addresses, or this test proves nothing */
  assert_ptr_equal(bl.chain_at, a_chain);
  for (int round = 0; round < 2; round++) swap_capture_and_check(&bl, b);

#ifndef __SANITIZE_THREAD__
  t.lib = &bl;
  pthread_barrier_wait(&t.step);
  pthread_barrier_wait(&t.step);
  check_both(tb, true);
  assert_int_equal(pthread_join(thread, NULL), 0);
  pthread_barrier_destroy(&t.step);
#endif
  assert_int_equal(dlclose(bl.handle), 0);
  free(b);
  free(tb);
}

/* ---- walks while generations end ---- */

enum { WALKERS = 3, WALKS = 20000, CHAIN_DEPTH = 8 };

typedef struct walker_s {
  uintptr_t pcs[CS_STACK_MAX_DEPTH];
  long n;
} walker_t;

static atomic_int walkers_running;
static atomic_long walks_wrong;
static pthread_barrier_t walkers_start;

static size_t walker_capture(void *arg) {
  walker_t *w = arg;
  w->n = cs_stack_capture_by_rules(w->pcs, CS_STACK_MAX_DEPTH);
  KEEP_FRAME();
  return 1;
}

/* The frames from the capture through the library's chain, the same in every walk (the call
 * site in walker_main may differ: the compiler may copy the loop's call). */
static bool walker_same(const walker_t *a, const walker_t *b) {
  const size_t common = CHAIN_DEPTH + 2;
  return a->n == b->n && a->n > (long)common && memcmp(a->pcs, b->pcs, common * sizeof a->pcs[0]) == 0;
}

/* Every walk gives the frames of the first, while the rules they use are refilled: libunwind is
 * never called here, so the threads may end under TSan. */
static void *walker_main(void *arg) {
  (void)arg;
  walker_t first = {0}, again = {0};
  pthread_barrier_wait(&walkers_start);
  stack_rules_lib_chain(CHAIN_DEPTH, walker_capture, &first);
  for (int i = 0; i < WALKS; i++) {
    stack_rules_lib_chain(CHAIN_DEPTH, walker_capture, &again);
    if (!walker_same(&first, &again)) atomic_fetch_add(&walks_wrong, 1);
  }
  atomic_fetch_sub(&walkers_running, 1);
  KEEP_FRAME();
  return NULL;
}

/* Threads walk by rules while generations end one after another (as dlclose ends them): slots are
 * refilled and memos forgotten under the readers, who must never read a rule half written or
 * another address's rule. */
static void test_walks_while_generations_end(void **state) {
  (void)state;
  pthread_t t[WALKERS];
  atomic_store(&walkers_running, WALKERS);
  atomic_store(&walks_wrong, 0);
  assert_int_equal(pthread_barrier_init(&walkers_start, NULL, WALKERS + 1), 0);
  for (int i = 0; i < WALKERS; i++) assert_int_equal(pthread_create(&t[i], NULL, walker_main, NULL), 0);
  const uint64_t before = cs_stack_rules_generation();
  pthread_barrier_wait(&walkers_start);
  do {
    cs_stack_rules_forget();
    sched_yield();
  } while (atomic_load(&walkers_running) > 0);
  for (int i = 0; i < WALKERS; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
  pthread_barrier_destroy(&walkers_start);
  assert_true(cs_stack_rules_generation() > before);
  assert_int_equal(atomic_load(&walks_wrong), 0);
}

/* The counters: the walk answered ordinary stacks and gave up only where it had to. */
static void test_rules_answered(void **state) {
  (void)state;
  unsigned long walked = 0, failed = 0;
  cs_stack_rules_counts(&walked, &failed);
  assert_true(walked > 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_own_chain, no_skip),
      cmocka_unit_test_setup(test_library_without_frame_pointers, no_skip),
      cmocka_unit_test_setup(test_libc_callback, no_skip),
      cmocka_unit_test_setup(test_new_thread, no_skip),
      cmocka_unit_test_setup(test_depth_limits, no_skip),
      cmocka_unit_test_setup(test_signal_handler, no_skip),
      cmocka_unit_test_setup(test_signal_inside_fake_driver, no_skip),
      cmocka_unit_test_setup(test_library_swapped_at_same_address, no_skip),
      cmocka_unit_test_setup(test_walks_while_generations_end, no_skip),
      cmocka_unit_test_setup(test_rules_answered, no_skip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

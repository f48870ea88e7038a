/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator's lock (common/cs_lock.h, issue 36): mutual exclusion under contention with more
 * threads than cores, try-acquire, and a waiter behind a long-held lock sleeps in the kernel
 * instead of spinning (its CPU time stays small) and is woken by the release. Under
 * ThreadSanitizer the plain counter below is also the check of the lock's annotations. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "common/cs_lock.h"

enum { THREADS = 16, ROUNDS = 20000 };

static cs_lock_t lock;
static long counter; /* guarded by lock, deliberately not atomic */

static void *hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    cs_lock_acquire(&lock);
    long v = counter;
    if ((i & 63) == 0) sched_yield(); /* sometimes the holder is not running */
    counter = v + 1;
    cs_lock_release(&lock);
  }
  return NULL;
}

static void test_mutual_exclusion(void **state) {
  (void)state;
  cs_lock_init(&lock);
  counter = 0;
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
  assert_int_equal(counter, (long)THREADS * ROUNDS);
  assert_int_equal(atomic_load(&lock.word), 0);
  cs_lock_destroy(&lock);
}

static void test_try(void **state) {
  (void)state;
  cs_lock_init(&lock);
  assert_true(cs_lock_try(&lock));
  assert_false(cs_lock_try(&lock));
  cs_lock_release(&lock);
  assert_true(cs_lock_try(&lock));
  cs_lock_release(&lock);
  cs_lock_destroy(&lock);
}

static double thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static _Atomic int waiter_started;
static double waiter_cpu_ms;

static void *waiter(void *arg) {
  (void)arg;
  const double cpu0 = thread_cpu_ms();
  atomic_store(&waiter_started, 1);
  cs_lock_acquire(&lock);
  waiter_cpu_ms = thread_cpu_ms() - cpu0;
  counter++;
  cs_lock_release(&lock);
  return NULL;
}

/* Held for 300 ms: the waiter spins its budget, CS_LOCK_SPIN_NS at first, then sleeps until the
 * release, and the lock's next waiter spins half as long. */
static void test_waiter_sleeps(void **state) {
  (void)state;
  cs_lock_init(&lock);
  counter = 0;
  cs_lock_acquire(&lock);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, waiter, NULL), 0);
  while (!atomic_load(&waiter_started)) sched_yield();
  const struct timespec hold = {0, 300 * 1000 * 1000};
  nanosleep(&hold, NULL);
  assert_int_equal(counter, 0);
  assert_int_equal(atomic_load(&lock.word), 2); /* the waiter said it sleeps */
  cs_lock_release(&lock);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(counter, 1);
  assert_true(waiter_cpu_ms < 50.0); /* a spinning waiter would have used most of 300 ms */
  assert_int_equal(atomic_load(&lock.shrink), 1);
  cs_lock_destroy(&lock);
}

/* Two CPUs this process may run on, or false. */
static bool two_cpus(unsigned *first, unsigned *second) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
  unsigned found = 0;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
    if (CPU_ISSET(cpu, &allowed)) *(found++ == 0 ? first : second) = cpu;
  return found == 2;
}

static void pin(cpu_set_t *set, unsigned cpu) {
  CPU_ZERO(set);
  CPU_SET(cpu, set);
}

/* A spin that gets the lock doubles the budget back. The waiter must spin on another CPU than the
 * holder's (on the same one it would spin while the holder cannot run, and sleep: the case the
 * budget shrinks for), and must be spinning when the lock is let go, before its budget runs out,
 * which a loaded machine may not allow every time: the round is tried until it happens once. */
static void test_budget_grows_back(void **state) {
  (void)state;
  unsigned holder_cpu = 0, waiter_cpu = 0;
  if (!two_cpus(&holder_cpu, &waiter_cpu)) skip();
  cpu_set_t before, holder_set, waiter_set;
  assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
  pin(&holder_set, holder_cpu);
  pin(&waiter_set, waiter_cpu);
  assert_int_equal(sched_setaffinity(0, sizeof holder_set, &holder_set), 0);
  pthread_attr_t attr;
  assert_int_equal(pthread_attr_init(&attr), 0);
  assert_int_equal(pthread_attr_setaffinity_np(&attr, sizeof waiter_set, &waiter_set), 0);
  bool grew = false;
  for (int attempt = 0; attempt < 200 && !grew; attempt++) {
    cs_lock_init(&lock);
    atomic_store(&lock.shrink, 1); /* a 100 us budget */
    atomic_store(&waiter_started, 0);
    counter = 0;
    cs_lock_acquire(&lock);
    pthread_t t;
    assert_int_equal(pthread_create(&t, &attr, waiter, NULL), 0);
    while (!atomic_load(&waiter_started)) cs_cpu_relax();
    const uint64_t until = cs_deadline_now_ns() + 20000; /* hold 20 us, busy */
    while (cs_deadline_now_ns() < until) cs_cpu_relax();
    cs_lock_release(&lock);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(counter, 1);
    grew = atomic_load(&lock.shrink) == 0;
    cs_lock_destroy(&lock);
  }
  pthread_attr_destroy(&attr);
  assert_int_equal(sched_setaffinity(0, sizeof before, &before), 0);
  assert_true(grew);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mutual_exclusion),
      cmocka_unit_test(test_try),
      cmocka_unit_test(test_waiter_sleeps),
      cmocka_unit_test(test_budget_grows_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

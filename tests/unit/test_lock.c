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

/* Held for 300 ms: the waiter spins about CS_LOCK_SPIN_NS, then sleeps until the release. */
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
  cs_lock_destroy(&lock);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mutual_exclusion),
      cmocka_unit_test(test_try),
      cmocka_unit_test(test_waiter_sleeps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The caching allocator's lock: a word and a futex, with a waiter that spins by time before it
 * sleeps (issue 36).
 *
 * The allocator's sections last tens to hundreds of nanoseconds, far less than a trip through
 * futex to sleep and be woken again, so a contended acquire first spins: it reads the word (no
 * locked write, which would take the line from the holder) and tries when the word says free.
 * Both the spin and the gaps between its reads are bounded by time, read from the clock, not by a
 * count of `pause`s, whose cost differs by CPU: about 140 cycles on Intel cores since Skylake, a
 * few on older ones, 57-76 ns measured on an AMD EPYC VM (bench/README.md at ce4c996).
 *
 * The gaps double from 100 ns to 16 us. A waiter that reads seldom leaves the lock to the thread
 * that holds it and takes it again at once, with the allocator's blocks still in its cache: each
 * hand-over to another core moves them all, and costs more than the section itself. Measured on
 * that VM with 2-16 threads (bench/README.md at ce4c996, "Issue 36, third session"), gaps
 * doubling up to 16 us and a 200 us spin gave 2-3 times the throughput of a 20 us spin with gaps
 * of at most 64 `pause`s, and sleeping sooner gave less: each sleep costs a system call to the
 * waiter and one to the release that wakes it.
 *
 * A spin that ends in sleep means the holder kept the lock for long (it was descheduled, or it
 * waits for something): spinning as long next time would likely be wasted too, and takes a CPU
 * from threads that could run, perhaps the holder. So the budget adapts, per lock: it halves after
 * each spin that ended in sleep, down to CS_LOCK_SPIN_NS / 32, and doubles back after each spin
 * that got the lock.
 *
 * The word: 0 free, 1 held, 2 held and a waiter may sleep (the release then wakes one). That is
 * the mutex of Drepper's "Futexes Are Tricky" (2011), section 5 ("mutex2"). An uncontended
 * acquire is one compare-and-swap and a release one exchange: less than glibc's
 * pthread_mutex_trylock/unlock, which also keep the owner and a user count.
 *
 * ThreadSanitizer cannot see a futex lock: under it, the lock tells it through its annotations. */
#ifndef CS_LOCK_H
#define CS_LOCK_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cs_compiler.h"
#include "common/cs_cpu_relax.h"
#include "common/cs_deadline.h" /* cs_deadline_now_ns */

#if defined(__SANITIZE_THREAD__)
#define CS_LOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CS_LOCK_TSAN 1
#endif
#endif
#ifdef CS_LOCK_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* The longest a waiter spins before it sleeps (the budget adapts: see above). */
#ifndef CS_LOCK_SPIN_NS
#define CS_LOCK_SPIN_NS 200000
#endif
enum { CS_LOCK_MAX_SHRINK = 5 }; /* the shortest budget: CS_LOCK_SPIN_NS >> 5, 6.25 us */
/* The gap between two reads of the word doubles from the first to the longest. */
enum { CS_LOCK_FIRST_GAP_NS = 100, CS_LOCK_MAX_GAP_NS = 16000 };

typedef struct cs_lock_s {
  _Atomic uint32_t word;   /* 0 free, 1 held, 2 held with a waiter that may sleep */
  _Atomic uint32_t shrink; /* the spin budget is CS_LOCK_SPIN_NS >> shrink; zero-initialised: all of it */
} cs_lock_t;

static inline void cs_lock_init(cs_lock_t *l) {
  atomic_store_explicit(&l->word, 0, memory_order_relaxed);
  atomic_store_explicit(&l->shrink, 0, memory_order_relaxed);
#ifdef CS_LOCK_TSAN
  __tsan_mutex_create(l, 0);
#endif
}

static inline void cs_lock_destroy(cs_lock_t *l) {
#ifdef CS_LOCK_TSAN
  __tsan_mutex_destroy(l, 0);
#else
  (void)l;
#endif
}

static inline bool cs_lock_cas(cs_lock_t *l, uint32_t want) {
  uint32_t expected = 0;
  return atomic_compare_exchange_strong_explicit(&l->word, &expected, want, memory_order_acquire,
                                                 memory_order_relaxed);
}

/* Move the spin budget one step (-1 longer, +1 shorter), within its bounds. The step is a plain
 * load and store: two waiters that step at once lose one step, which the next spin makes up. */
static inline void cs_lock_adapt(cs_lock_t *l, int step) {
  uint32_t shrink = atomic_load_explicit(&l->shrink, memory_order_relaxed);
  if (step < 0 && shrink > 0) atomic_store_explicit(&l->shrink, shrink - 1, memory_order_relaxed);
  if (step > 0 && shrink < CS_LOCK_MAX_SHRINK) atomic_store_explicit(&l->shrink, shrink + 1, memory_order_relaxed);
}

/* The contended acquire: spin by time, reading the word at gaps that double, then sleep. Never
 * inlined: it is the rare path. */
static CS_NOINLINE CS_UNUSED void cs_lock_acquire_contended(cs_lock_t *l) {
  const uint64_t budget = (uint64_t)CS_LOCK_SPIN_NS >> atomic_load_explicit(&l->shrink, memory_order_relaxed);
  const uint64_t start = cs_deadline_now_ns();
  uint64_t now = start, gap = CS_LOCK_FIRST_GAP_NS;
  for (;;) {
    if (atomic_load_explicit(&l->word, memory_order_relaxed) == 0 && cs_lock_cas(l, 1)) {
      cs_lock_adapt(l, -1);
      return;
    }
    const uint64_t next = now + gap;
    if (next - start > budget) break;
    if (gap < CS_LOCK_MAX_GAP_NS) gap <<= 1;
    do cs_cpu_relax();
    while ((now = cs_deadline_now_ns()) < next);
  }
  cs_lock_adapt(l, +1);
  /* Sleep: mark the word "a waiter may sleep" and wait while it stays held. A thread that takes
   * it after a wake-up marks it 2 too, so the release after it wakes the next sleeper. */
  while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
    syscall(SYS_futex, (uint32_t *)&l->word, FUTEX_WAIT_PRIVATE, 2u, NULL, NULL, 0);
}

static inline void cs_lock_acquire(cs_lock_t *l) {
#ifdef CS_LOCK_TSAN
  __tsan_mutex_pre_lock(l, 0);
#endif
  if (CS_UNLIKELY(!cs_lock_cas(l, 1))) cs_lock_acquire_contended(l);
#ifdef CS_LOCK_TSAN
  __tsan_mutex_post_lock(l, 0, 0);
#endif
}

static inline bool cs_lock_try(cs_lock_t *l) {
#ifdef CS_LOCK_TSAN
  __tsan_mutex_pre_lock(l, __tsan_mutex_try_lock);
#endif
  const bool got = cs_lock_cas(l, 1);
#ifdef CS_LOCK_TSAN
  __tsan_mutex_post_lock(l, __tsan_mutex_try_lock | (got ? 0 : __tsan_mutex_try_lock_failed), 0);
#endif
  return got;
}

static inline void cs_lock_release(cs_lock_t *l) {
#ifdef CS_LOCK_TSAN
  __tsan_mutex_pre_unlock(l, 0);
#endif
  if (CS_UNLIKELY(atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2))
    syscall(SYS_futex, (uint32_t *)&l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#ifdef CS_LOCK_TSAN
  __tsan_mutex_post_unlock(l, 0);
#endif
}

#endif

/* The caching allocator's lock: a word and a futex, which hands the lock over without spinning
 * when its holder is not running (issue 36).
 *
 * The allocator's sections last tens to hundreds of nanoseconds, far less than a trip through
 * futex to sleep and be woken again (microseconds, more under a hypervisor), so a contended
 * acquire first spins a little: it reads the word (no locked write, which would take the line
 * from the holder) with growing gaps of `pause` between reads, as before (issue 27), and tries
 * when the word says free. But the spin is bounded by time, CS_LOCK_SPIN_NS, not by a count of
 * `pause`s, whose cost differs by CPU: about 140 cycles on Intel cores since Skylake, a few on
 * older ones, 57-76 ns measured on the AMD EPYC VM of bench/README.md. After that the waiter
 * sleeps in FUTEX_WAIT until a release wakes it: with more threads than cores the holder may be
 * descheduled, and spinning longer only takes the CPU from it.
 *
 * CS_LOCK_SPIN_NS is about what a sleep and a wake-up cost (two system calls and a reschedule,
 * tens of microseconds under a hypervisor), so spinning costs at most about as much as sleeping
 * at once would. Measured on that VM with 2-16 threads (bench/README.md, "Issue 36: the lock,
 * measured with threads"), a 20 us spin gave 3-4 times the throughput of sleeping at once with
 * same-size pairs, where a 2 us spin was slower than the 511-`pause` spin before it.
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

/* How long a waiter spins before it sleeps (see above). */
#ifndef CS_LOCK_SPIN_NS
#define CS_LOCK_SPIN_NS 20000
#endif
/* The longest gap between two reads of the word, in `pause`s (growing 1, 2, 4, ...). */
enum { CS_LOCK_MAX_GAP = 64 };

typedef struct cs_lock_s {
  _Atomic uint32_t word; /* 0 free, 1 held, 2 held with a waiter that may sleep */
} cs_lock_t;

static inline void cs_lock_init(cs_lock_t *l) {
  atomic_store_explicit(&l->word, 0, memory_order_relaxed);
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

/* The contended acquire: spin by time, then sleep. Never inlined: it is the rare path. */
static CS_NOINLINE CS_UNUSED void cs_lock_acquire_contended(cs_lock_t *l) {
  const uint64_t start = cs_deadline_now_ns();
  unsigned gap = 1;
  do {
    for (unsigned k = 0; k < gap; k++) cs_cpu_relax();
    if (atomic_load_explicit(&l->word, memory_order_relaxed) == 0 && cs_lock_cas(l, 1)) return;
    if (gap < CS_LOCK_MAX_GAP) gap <<= 1;
  } while (cs_deadline_now_ns() - start < CS_LOCK_SPIN_NS);
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

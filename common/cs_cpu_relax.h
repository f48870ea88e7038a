/* Taking a mutex that is usually free and held briefly.
 *
 * An allocator's sections last tens to hundreds of nanoseconds, far less than a trip through
 * futex to sleep and be woken again (microseconds, more under a hypervisor). So a contended
 * acquire first retries for a short while before it sleeps. An uncontended acquire is the plain
 * trylock: unlike PTHREAD_MUTEX_ADAPTIVE_NP, which measured 5 ns slower per pair on the hot path,
 * it costs nothing over pthread_mutex_lock.
 *
 * The retries back off exponentially (1, 2, 4, ... 256 pauses between them), as Linux's qspinlock
 * and many user-space locks do, instead of a trylock after every pause (issue 27). A trylock is a
 * locked write: each one takes the lock's line from the holder. And a waiter that grabs the lock
 * the moment it is let go makes every section run on the other core, after all the lines it
 * touches have moved there; with growing gaps, the thread that let go often takes the lock again
 * with its lines still in its cache. Measured with 2-8 threads on 2 vCPUs (bench/README.md,
 * "Threads (issue 27)"): random sizes about 1.4x faster than a trylock per pause, same-size pairs
 * 1.2-1.6x. */
#ifndef CS_SPIN_LOCK_H
#define CS_SPIN_LOCK_H

#include <pthread.h>

#include "common/cs_compiler.h"

enum { CS_SPIN_LOCK_ROUNDS = 9 }; /* trylocks before sleeping; 511 pauses between them in all */

static inline void cs_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#endif
}

static inline void cs_mutex_acquire(pthread_mutex_t *m) {
  if (CS_LIKELY(pthread_mutex_trylock(m) == 0)) return;
  for (int round = 0; round < CS_SPIN_LOCK_ROUNDS; round++) {
    for (int k = 0; k < 1 << round; k++) cs_cpu_relax();
    if (pthread_mutex_trylock(m) == 0) return;
  }
  pthread_mutex_lock(m);
}

#endif

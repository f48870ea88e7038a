/* SPDX-License-Identifier: Apache-2.0 */
/* Waiting with a bound, for the paths that run as the process ends, where a lock's holder may
 * never run again (the thread that crashed, or one stopped in the driver): a lock is tried every
 * millisecond until a deadline on CLOCK_MONOTONIC. */
#ifndef CS_DEADLINE_H
#define CS_DEADLINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t cs_deadline_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* now + ms */
static inline uint64_t cs_deadline_in_ms(unsigned ms) { return cs_deadline_now_ns() + (uint64_t)ms * 1000000u; }

/* Sleep a millisecond between tries: the holder may need this CPU to let go. */
static inline void cs_deadline_pause(void) {
  struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};
  nanosleep(&ms, NULL);
}

/* Take m before deadline_ns: true when taken. */
static inline bool cs_deadline_lock(pthread_mutex_t *m, uint64_t deadline_ns) {
  for (;;) {
    if (pthread_mutex_trylock(m) == 0) return true;
    if (cs_deadline_now_ns() >= deadline_ns) return false;
    cs_deadline_pause();
  }
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* cs_ticks: the clock that stamps history entries.
 *
 * It is read once per allocator event, on the allocation hot path, where clock_gettime costs 20 to
 * 50 ns (more under a hypervisor's clock source). So on x86-64 with an invariant time-stamp counter
 * (constant rate, running in every power state, the same on every core) that is cheaper to read
 * than the clock (a hypervisor may trap rdtsc) it is the TSC, as PyTorch's getApproximateTime()
 * is; elsewhere it is CLOCK_MONOTONIC in nanoseconds. Ticks have no
 * fixed unit: an anchor pairs a tick reading with CLOCK_MONOTONIC, and two anchors turn ticks into
 * time at dump time (cs_ticks_rate). */
#ifndef CS_TICKS_H
#define CS_TICKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* Chosen by cs_ticks_init; false (the monotonic clock) until then. */
extern atomic_bool cs_ticks_use_tsc;

/* Pick the source, once per process (later calls return at once). Call before the first
 * cs_ticks_now whose value matters. */
void cs_ticks_init(void);

static inline uint64_t cs_ticks_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t cs_ticks_now(void) {
#if defined(__x86_64__)
  if (atomic_load_explicit(&cs_ticks_use_tsc, memory_order_relaxed)) return __rdtsc();
#endif
  return cs_ticks_monotonic_ns();
}

/* A tick reading and CLOCK_MONOTONIC taken together. */
typedef struct cs_ticks_anchor_s {
  uint64_t ticks;
  uint64_t monotonic_ns;
} cs_ticks_anchor_t;

cs_ticks_anchor_t cs_ticks_anchor(void);

/* The process's time origin, taken once by cs_ticks_init: an anchor and the wall clock of the same
 * moment. Every ring measures from it, so the rings of several contexts agree with each other even
 * when the wall clock is stepped between their creations. */
typedef struct cs_ticks_origin_s {
  cs_ticks_anchor_t anchor;
  uint64_t epoch_us;
} cs_ticks_origin_t;

cs_ticks_origin_t cs_ticks_origin(void); /* pre: cs_ticks_init */

/* Nanoseconds per tick between two anchors (1 for the monotonic source; 0 when `later` is not
 * later). Each anchor carries the 20-50 ns of a clock_gettime, so over 1 ms the estimate is good to
 * about 5e-5, over a second to 1e-7. */
double cs_ticks_rate(const cs_ticks_anchor_t *earlier, const cs_ticks_anchor_t *later);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#include "record/ticks.h"

#include <pthread.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

atomic_bool cs_ticks_use_tsc;

/* CPUID leaf 0x80000007, EDX bit 8: the TSC is invariant. Hypervisors that cannot keep the TSC
 * steady across migrations hide the bit, and then the monotonic clock is used. */
static bool cs_ticks_tsc_invariant(void) {
#if defined(__x86_64__)
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) || eax < 0x80000007u) return false;
  if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx)) return false;
  return (edx >> 8) & 1u;
#else
  return false;
#endif
}

#if defined(__x86_64__)
/* Some hypervisors trap rdtsc (microseconds each) while still reporting an invariant TSC: take
 * the TSC only if a few readings cost less than as many clock_gettime calls. */
static bool cs_ticks_tsc_cheap(void) {
  enum { READS = 64 };
  volatile uint64_t sink = 0;
  uint64_t t0 = cs_ticks_monotonic_ns();
  for (int i = 0; i < READS; i++) sink += __rdtsc();
  uint64_t t1 = cs_ticks_monotonic_ns();
  for (int i = 0; i < READS; i++) sink += cs_ticks_monotonic_ns();
  uint64_t t2 = cs_ticks_monotonic_ns();
  (void)sink;
  return t1 - t0 <= t2 - t1;
}
#endif

static cs_ticks_origin_t cs_ticks_process_origin;

static uint64_t cs_ticks_wall_clock_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void cs_ticks_choose(void) {
  bool tsc = cs_ticks_tsc_invariant();
#if defined(__x86_64__)
  tsc = tsc && cs_ticks_tsc_cheap();
#endif
  atomic_store_explicit(&cs_ticks_use_tsc, tsc, memory_order_relaxed);
  cs_ticks_process_origin.anchor = cs_ticks_anchor();
  cs_ticks_process_origin.epoch_us = cs_ticks_wall_clock_us();
}

cs_ticks_origin_t cs_ticks_origin(void) { return cs_ticks_process_origin; }

/* Once per process: rings already stamped in one unit must never see the other. */
void cs_ticks_init(void) {
  static pthread_once_t chosen = PTHREAD_ONCE_INIT;
  pthread_once(&chosen, cs_ticks_choose);
}

cs_ticks_anchor_t cs_ticks_anchor(void) {
  if (!atomic_load_explicit(&cs_ticks_use_tsc, memory_order_relaxed)) {
    uint64_t ns = cs_ticks_monotonic_ns();
    return (cs_ticks_anchor_t){.ticks = ns, .monotonic_ns = ns};
  }
  /* The clock read sits between two tick reads; their midpoint is its tick. */
  uint64_t before = cs_ticks_now();
  uint64_t ns = cs_ticks_monotonic_ns();
  uint64_t after = cs_ticks_now();
  return (cs_ticks_anchor_t){.ticks = before + (after - before) / 2, .monotonic_ns = ns};
}

double cs_ticks_rate(const cs_ticks_anchor_t *earlier, const cs_ticks_anchor_t *later) {
  if (!atomic_load_explicit(&cs_ticks_use_tsc, memory_order_relaxed)) return 1.0;
  if (later->ticks <= earlier->ticks || later->monotonic_ns < earlier->monotonic_ns) return 0.0;
  return (double)(later->monotonic_ns - earlier->monotonic_ns) / (double)(later->ticks - earlier->ticks);
}

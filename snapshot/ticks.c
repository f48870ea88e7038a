#include "snapshot/ticks.h"

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

void cs_ticks_init(void) { atomic_store_explicit(&cs_ticks_use_tsc, cs_ticks_tsc_invariant(), memory_order_relaxed); }

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

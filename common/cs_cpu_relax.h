/* SPDX-License-Identifier: Apache-2.0 */
/* The pause between two reads of a word another thread will change: tells the core it spins, so
 * that it yields to its sibling hyperthread and does not flood the memory system. Its cost
 * differs by CPU: a few cycles on older Intel cores, about 140 on Intel cores since Skylake, 57-76
 * ns measured on an AMD EPYC VM: spin by time, not by a count of these (common/cs_lock.h). */
#ifndef CS_CPU_RELAX_H
#define CS_CPU_RELAX_H

static inline void cs_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#endif
}

#endif

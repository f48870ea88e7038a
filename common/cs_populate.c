/* SPDX-License-Identifier: Apache-2.0 */
#include "common/cs_populate.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* linux/mman.h since 5.14; older headers lack it */
#endif

void cs_populate(void *p, size_t n) {
  long page_size = sysconf(_SC_PAGESIZE);
  size_t page = page_size > 0 ? (size_t)page_size : 4096;
  uintptr_t lo = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}

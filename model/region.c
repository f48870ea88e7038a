/* SPDX-License-Identifier: Apache-2.0 */
/* Growable arrays in their own mappings once large (contract in model/region.h). */
#include "model/region.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Mappings are whole multiples of a huge page, so that every 2 MiB of one can be a huge page. */
#define CS_REGION_ALIGN ((size_t)2 << 20)

static size_t cs_region_round(size_t bytes) {
  return (bytes + CS_REGION_ALIGN - 1) & ~(CS_REGION_ALIGN - 1);
}

static void cs_region_advise(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: without it, 4 KiB pages */
#else
  (void)p;
  (void)bytes;
#endif
}

void *cs_region_resize(void *p, size_t old_bytes, size_t new_bytes) {
  if (new_bytes < CS_REGION_MIN) return realloc(p, new_bytes);
  if (new_bytes > SIZE_MAX - CS_REGION_ALIGN) return NULL;
  size_t new_map = cs_region_round(new_bytes);
  if (p != NULL && old_bytes >= CS_REGION_MIN) {
    size_t old_map = cs_region_round(old_bytes);
    if (new_map == old_map) return p;
    void *q = mremap(p, old_map, new_map, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) return NULL;
    cs_region_advise(q, new_map);
    return q;
  }
  void *q = mmap(NULL, new_map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED) return NULL;
  cs_region_advise(q, new_map);
  if (p != NULL) {
    memcpy(q, p, old_bytes);
    free(p);
  }
  return q;
}

void cs_region_free(void *p, size_t bytes) {
  if (p == NULL) return;
  if (bytes < CS_REGION_MIN) free(p);
  else munmap(p, cs_region_round(bytes));
}

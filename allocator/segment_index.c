/* SPDX-License-Identifier: Apache-2.0 */
/* The segments sorted by address (segment_index.h). */
#include "allocator/segment_index.h"

#include <stdlib.h>
#include <string.h>

#include "common/cs_assert.h"
#include "common/cs_error.h"

/* The number of segments whose address is <= addr. */
static size_t cs_segment_index_upper(const cs_segment_index_t *x, uintptr_t addr) {
  size_t lo = 0, hi = x->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (x->by_addr[mid]->addr <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

void cs_segment_index_destroy(cs_segment_index_t *x) {
  free(x->by_addr);
  cs_segment_index_init(x);
}

int cs_segment_index_reserve(cs_segment_index_t *x, size_t n) {
  if (n <= x->capacity) return 0;
  size_t capacity = x->capacity ? x->capacity : 16;
  while (capacity < n) {
    if (capacity > SIZE_MAX / 2 / sizeof *x->by_addr) return -CS_EHOSTMEM;
    capacity *= 2;
  }
  cs_segment_t **grown = realloc(x->by_addr, capacity * sizeof *grown);
  if (!grown) return -CS_EHOSTMEM;
  x->by_addr = grown;
  x->capacity = capacity;
  return 0;
}

void cs_segment_index_add(cs_segment_index_t *x, cs_segment_t *s) {
  cs_assert(x->count < x->capacity);
  size_t at = cs_segment_index_upper(x, s->addr);
  memmove(&x->by_addr[at + 1], &x->by_addr[at], (x->count - at) * sizeof *x->by_addr);
  x->by_addr[at] = s;
  x->count++;
}

void cs_segment_index_remove(cs_segment_index_t *x, const cs_segment_t *s) {
  size_t at = cs_segment_index_upper(x, s->addr);
  while (at > 0 && x->by_addr[at - 1] != s && x->by_addr[at - 1]->addr == s->addr) at--;
  cs_assert(at > 0 && x->by_addr[at - 1] == s);
  if (at == 0) return;
  at--;
  memmove(&x->by_addr[at], &x->by_addr[at + 1], (x->count - at - 1) * sizeof *x->by_addr);
  x->count--;
}

cs_segment_t *cs_segment_index_find(const cs_segment_index_t *x, uintptr_t addr) {
  size_t at = cs_segment_index_upper(x, addr);
  if (at == 0) return NULL;
  cs_segment_t *s = x->by_addr[at - 1];
  return addr - s->addr < s->size ? s : NULL;
}

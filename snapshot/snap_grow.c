/* SPDX-License-Identifier: Apache-2.0 */
/* Doubling arrays (contract in snapshot/snap_grow.h). */
#include "snapshot/snap_grow.h"

#include <stdlib.h>

bool cs_snap_grow(void **items, size_t *capacity, size_t need, size_t item_size) {
  if (need <= *capacity) return true;
  size_t grown = *capacity ? *capacity * 2 : 256;
  while (grown < need) grown *= 2;
  void *p = realloc(*items, grown * item_size);
  if (!p) return false;
  *items = p;
  *capacity = grown;
  return true;
}

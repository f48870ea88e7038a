/* SPDX-License-Identifier: Apache-2.0 */
/* Model values to numbers (contract in analysis/val_map.h). */
#include "analysis/val_map.h"

#include <stdlib.h>
#include <string.h>

static size_t cs_val_map_home(const cs_val_map_t *m, cs_val_t key) {
  /* Container words are arena offsets << 3 | tag: neighbours differ in a few low bits. */
  uint64_t h = key * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 32) & (m->nslots - 1);
}

/* The slot holding key, or the empty slot where it would go. pre: nslots > 0. */
static size_t cs_val_map_slot(const cs_val_map_t *m, cs_val_t key) {
  size_t mask = m->nslots - 1;
  size_t i = cs_val_map_home(m, key);
  while (m->keys[i] != CS_VAL_ABSENT && m->keys[i] != key) i = (i + 1) & mask;
  return i;
}

void cs_val_map_init(cs_val_map_t *m) { memset(m, 0, sizeof *m); }

void cs_val_map_free(cs_val_map_t *m) {
  free(m->keys);
  free(m->values);
  cs_val_map_init(m);
}

static int cs_val_map_grow(cs_val_map_t *m) {
  size_t nslots = m->nslots ? m->nslots * 2 : 256;
  cs_val_t *keys = malloc(nslots * sizeof *keys);
  uint32_t *values = malloc(nslots * sizeof *values);
  if (keys == NULL || values == NULL) {
    free(keys);
    free(values);
    return -1;
  }
  for (size_t i = 0; i < nslots; i++) keys[i] = CS_VAL_ABSENT;
  cs_val_map_t bigger = {.keys = keys, .values = values, .nslots = nslots, .count = m->count};
  for (size_t i = 0; i < m->nslots; i++) {
    if (m->keys[i] == CS_VAL_ABSENT) continue;
    size_t slot = cs_val_map_slot(&bigger, m->keys[i]);
    bigger.keys[slot] = m->keys[i];
    bigger.values[slot] = m->values[i];
  }
  free(m->keys);
  free(m->values);
  *m = bigger;
  return 0;
}

bool cs_val_map_get(const cs_val_map_t *m, cs_val_t key, uint32_t *value) {
  if (m->nslots == 0) return false;
  size_t slot = cs_val_map_slot(m, key);
  if (m->keys[slot] == CS_VAL_ABSENT) return false;
  *value = m->values[slot];
  return true;
}

int cs_val_map_put(cs_val_map_t *m, cs_val_t key, uint32_t value) {
  if (2 * (m->count + 1) > m->nslots && cs_val_map_grow(m) != 0) return -1;
  size_t slot = cs_val_map_slot(m, key);
  if (m->keys[slot] == CS_VAL_ABSENT) m->count++;
  m->keys[slot] = key;
  m->values[slot] = value;
  return 0;
}

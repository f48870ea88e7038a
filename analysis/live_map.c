/* SPDX-License-Identifier: Apache-2.0 */
/* Live blocks by address (contract in analysis/live_map.h). */
#include "analysis/live_map.h"

#include <stdlib.h>
#include <string.h>

static size_t cs_live_home(const cs_live_map_t *m, int64_t addr) {
  /* Block addresses share their low bits (512-byte rounding): mix before masking. */
  uint64_t h = (uint64_t)addr * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 32) & (m->nslots - 1);
}

/* The slot holding addr, or the empty slot where it would go. pre: nslots > 0. */
static size_t cs_live_slot(const cs_live_map_t *m, int64_t addr) {
  size_t mask = m->nslots - 1;
  size_t i = cs_live_home(m, addr);
  while (m->slots[i].used && m->slots[i].addr != addr) i = (i + 1) & mask;
  return i;
}

void cs_live_map_init(cs_live_map_t *m) { memset(m, 0, sizeof *m); }

void cs_live_map_free(cs_live_map_t *m) {
  free(m->slots);
  cs_live_map_init(m);
}

int cs_live_map_copy(cs_live_map_t *dst, const cs_live_map_t *src) {
  cs_live_map_init(dst);
  if (src->nslots == 0) return 0;
  cs_live_t *slots = malloc(src->nslots * sizeof *slots);
  if (slots == NULL) return -1;
  memcpy(slots, src->slots, src->nslots * sizeof *slots);
  *dst = *src;
  dst->slots = slots;
  return 0;
}

static int cs_live_map_grow(cs_live_map_t *m) {
  size_t nslots = m->nslots ? m->nslots * 2 : 1024;
  cs_live_t *old = m->slots;
  size_t old_n = m->nslots;
  m->slots = calloc(nslots, sizeof *m->slots);
  if (m->slots == NULL) {
    m->slots = old;
    return -1;
  }
  m->nslots = nslots;
  for (size_t i = 0; i < old_n; i++) {
    if (old[i].used) m->slots[cs_live_slot(m, old[i].addr)] = old[i];
  }
  free(old);
  return 0;
}

int cs_live_map_put(cs_live_map_t *m, int64_t addr, uint64_t bytes, cs_val_t frames, const char *kind) {
  if (2 * (m->count + 1) > m->nslots && cs_live_map_grow(m) != 0) return -1;
  cs_live_t *slot = &m->slots[cs_live_slot(m, addr)];
  if (slot->used) {
    m->bytes -= slot->bytes;
    if (slot->kind != NULL) m->passthrough_bytes -= slot->bytes;
  } else {
    m->count++;
  }
  *slot = (cs_live_t){.addr = addr, .bytes = bytes, .frames = frames, .kind = kind, .used = true};
  m->bytes += bytes;
  if (kind != NULL) m->passthrough_bytes += bytes;
  return 0;
}

const cs_live_t *cs_live_map_get(const cs_live_map_t *m, int64_t addr) {
  if (m->nslots == 0) return NULL;
  const cs_live_t *slot = &m->slots[cs_live_slot(m, addr)];
  return slot->used ? slot : NULL;
}

bool cs_live_map_remove(cs_live_map_t *m, int64_t addr) {
  if (m->nslots == 0) return false;
  size_t mask = m->nslots - 1;
  size_t hole = cs_live_slot(m, addr);
  if (!m->slots[hole].used) return false;
  m->bytes -= m->slots[hole].bytes;
  if (m->slots[hole].kind != NULL) m->passthrough_bytes -= m->slots[hole].bytes;
  m->count--;
  /* Backward shift: move later entries of the probe run into the hole when their home position
   * does not lie (cyclically) between the hole and themselves. */
  for (size_t i = (hole + 1) & mask; m->slots[i].used; i = (i + 1) & mask) {
    size_t home = cs_live_home(m, m->slots[i].addr);
    bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (stays) continue;
    m->slots[hole] = m->slots[i];
    hole = i;
  }
  m->slots[hole].used = false;
  return true;
}

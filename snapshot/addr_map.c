/* SPDX-License-Identifier: Apache-2.0 */
/* The address map of the writer's replay (contract in snapshot/addr_map.h). */
#include "snapshot/addr_map.h"

#include <stdlib.h>
#include <string.h>

#include "record/recfile.h"

void cs_addr_map_init(cs_addr_map_t *m) { memset(m, 0, sizeof *m); }

void cs_addr_map_free(cs_addr_map_t *m) {
  free(m->slots);
  cs_addr_map_init(m);
}

static size_t cs_addr_map_home(const cs_addr_map_t *m, uint64_t addr) {
  /* Block addresses share their low bits (512-byte rounding): mix before masking. */
  return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (m->nslots - 1);
}

/* The slot of addr, or the empty slot where it would go. pre: nslots > 0, addr != 0. */
static size_t cs_addr_map_slot(const cs_addr_map_t *m, uint64_t addr) {
  size_t mask = m->nslots - 1, i = cs_addr_map_home(m, addr);
  while (m->slots[i].addr != 0 && m->slots[i].addr != addr) i = (i + 1) & mask;
  return i;
}

int cs_addr_map_copy(cs_addr_map_t *dst, const cs_addr_map_t *src) {
  *dst = *src;
  if (src->nslots == 0) return 0;
  dst->slots = malloc(src->nslots * sizeof *dst->slots);
  if (dst->slots == NULL) {
    cs_addr_map_init(dst);
    return -1;
  }
  memcpy(dst->slots, src->slots, src->nslots * sizeof *dst->slots);
  return 0;
}

const cs_addr_block_t *cs_addr_map_get(const cs_addr_map_t *m, uint64_t addr) {
  if (addr == 0) return m->has_zero ? &m->zero : NULL;
  if (m->nslots == 0) return NULL;
  const cs_addr_block_t *b = &m->slots[cs_addr_map_slot(m, addr)];
  return b->addr != 0 ? b : NULL;
}

static int cs_addr_map_grow(cs_addr_map_t *m) {
  size_t nslots = m->nslots ? m->nslots * 2 : 1024;
  cs_addr_block_t *slots = calloc(nslots, sizeof *slots);
  if (slots == NULL) return -1;
  cs_addr_map_t bigger = *m;
  bigger.slots = slots;
  bigger.nslots = nslots;
  for (size_t i = 0; i < m->nslots; i++)
    if (m->slots[i].addr != 0) slots[cs_addr_map_slot(&bigger, m->slots[i].addr)] = m->slots[i];
  free(m->slots);
  *m = bigger;
  return 0;
}

static bool cs_addr_map_passthrough(const cs_addr_block_t *b) { return cs_recfile_stack_kind(b->stack_id) >= 0; }

/* Count b in the sums (sign 1) or take it off them (-1). */
static void cs_addr_map_count(cs_addr_map_t *m, const cs_addr_block_t *b, int sign) {
  uint64_t *passthrough = cs_addr_map_passthrough(b) ? &m->passthrough_bytes : NULL;
  if (sign > 0) {
    m->bytes += b->bytes;
    if (passthrough) *passthrough += b->bytes;
  } else {
    m->bytes -= b->bytes;
    if (passthrough) *passthrough -= b->bytes;
  }
}

int cs_addr_map_put(cs_addr_map_t *m, uint64_t addr, uint64_t bytes, uint32_t stack_id) {
  cs_addr_block_t *b;
  if (addr == 0) {
    b = &m->zero;
    if (m->has_zero) cs_addr_map_count(m, b, -1);
    m->has_zero = true;
  } else {
    if (2 * (m->count + 1) > m->nslots && cs_addr_map_grow(m) != 0) return -1;
    b = &m->slots[cs_addr_map_slot(m, addr)];
    if (b->addr != 0) cs_addr_map_count(m, b, -1);
    else m->count++;
  }
  *b = (cs_addr_block_t){.addr = addr, .bytes = bytes, .stack_id = stack_id};
  cs_addr_map_count(m, b, 1);
  return 0;
}

void cs_addr_map_remove(cs_addr_map_t *m, uint64_t addr) {
  if (addr == 0) {
    if (m->has_zero) cs_addr_map_count(m, &m->zero, -1);
    m->has_zero = false;
    return;
  }
  if (m->nslots == 0) return;
  size_t mask = m->nslots - 1, hole = cs_addr_map_slot(m, addr);
  if (m->slots[hole].addr == 0) return;
  cs_addr_map_count(m, &m->slots[hole], -1);
  m->count--;
  /* Backward shift: move up each later entry of the run whose home does not lie between the hole
   * and it, so that every lookup still finds its entry without passing an empty slot. */
  for (size_t i = (hole + 1) & mask; m->slots[i].addr != 0; i = (i + 1) & mask) {
    size_t home = cs_addr_map_home(m, m->slots[i].addr);
    bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
    if (stays) continue;
    m->slots[hole] = m->slots[i];
    hole = i;
  }
  m->slots[hole].addr = 0;
}

void cs_addr_map_each(const cs_addr_map_t *m, void (*each)(void *ctx, const cs_addr_block_t *b), void *ctx) {
  if (m->has_zero) each(ctx, &m->zero);
  for (size_t i = 0; i < m->nslots; i++)
    if (m->slots[i].addr != 0) each(ctx, &m->slots[i]);
}

#include "allocator/block_map.h"

#include <stdlib.h>
#include <string.h>

#include "common/cs_assert.h"
#include "common/cs_error.h"

enum { CS_BLOCK_MAP_MIN_CAPACITY = 64 };

/* Addresses are multiples of 512: drop those bits, then Fibonacci hashing spreads the rest. */
static inline size_t cs_block_map_home(const cs_block_map_t *map, uintptr_t addr) {
  uint64_t h = ((uint64_t)addr >> 9) * UINT64_C(0x9E3779B97F4A7C15);
  return (size_t)(h >> 32) & (map->capacity - 1);
}

void cs_block_map_init(cs_block_map_t *map) { memset(map, 0, sizeof *map); }

void cs_block_map_destroy(cs_block_map_t *map) {
  free(map->slots);
  memset(map, 0, sizeof *map);
}

void cs_block_map_clear(cs_block_map_t *map) {
  if (map->slots) memset(map->slots, 0, map->capacity * sizeof *map->slots);
  map->count = 0;
}

static void cs_block_map_place(cs_block_map_t *map, cs_block_t *block) {
  size_t i = cs_block_map_home(map, block->addr);
  while (map->slots[i]) i = (i + 1) & (map->capacity - 1);
  map->slots[i] = block;
}

static CS_COLD int cs_block_map_grow(cs_block_map_t *map) {
  size_t capacity = map->capacity ? map->capacity * 2 : CS_BLOCK_MAP_MIN_CAPACITY;
  cs_block_t **slots = calloc(capacity, sizeof *slots);
  if (!slots) return -CS_EHOSTMEM;
  cs_block_map_t grown = {.slots = slots, .capacity = capacity, .count = map->count};
  for (size_t i = 0; i < map->capacity; i++)
    if (map->slots[i]) cs_block_map_place(&grown, map->slots[i]);
  free(map->slots);
  *map = grown;
  return 0;
}

int cs_block_map_reserve(cs_block_map_t *map, size_t count) {
  while (CS_UNLIKELY(2 * count > map->capacity)) {
    int err = cs_block_map_grow(map);
    if (err) return err;
  }
  return 0;
}

int cs_block_map_insert(cs_block_map_t *map, cs_block_t *block) {
  int err = cs_block_map_reserve(map, map->count + 1);
  if (err) return err;
  cs_assert(cs_block_map_find(map, block->addr) == NULL);
  cs_block_map_place(map, block);
  map->count++;
  return 0;
}

cs_block_t *cs_block_map_find(const cs_block_map_t *map, uintptr_t addr) {
  if (map->capacity == 0) return NULL;
  for (size_t i = cs_block_map_home(map, addr);; i = (i + 1) & (map->capacity - 1)) {
    cs_block_t *b = map->slots[i];
    if (!b || b->addr == addr) return b;
  }
}

cs_block_t *cs_block_map_remove(cs_block_map_t *map, uintptr_t addr) {
  if (map->capacity == 0) return NULL;
  size_t mask = map->capacity - 1;
  size_t i = cs_block_map_home(map, addr);
  while (map->slots[i] && map->slots[i]->addr != addr) i = (i + 1) & mask;
  cs_block_t *found = map->slots[i];
  if (!found) return NULL;
  /* Backward-shift deletion: move later entries of the probe run into the hole when their home
   * slot does not lie cyclically in (hole, j]. */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; map->slots[j]; j = (j + 1) & mask) {
    size_t home = cs_block_map_home(map, map->slots[j]->addr);
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    map->slots[hole] = map->slots[j];
    hole = j;
  }
  map->slots[hole] = NULL;
  map->count--;
  return found;
}

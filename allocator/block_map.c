/* SPDX-License-Identifier: Apache-2.0 */
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
  free(map->buckets);
  memset(map, 0, sizeof *map);
}

void cs_block_map_clear(cs_block_map_t *map) {
  if (map->buckets) memset(map->buckets, 0, map->capacity * sizeof *map->buckets);
  map->count = 0;
}

static void cs_block_map_push(cs_block_map_t *map, cs_block_t *block) {
  cs_block_t **bucket = &map->buckets[cs_block_map_home(map, block->addr)];
  block->u.held.next_live = *bucket;
  *bucket = block;
}

static CS_COLD int cs_block_map_grow(cs_block_map_t *map) {
  size_t capacity = map->capacity ? map->capacity * 2 : CS_BLOCK_MAP_MIN_CAPACITY;
  cs_block_t **buckets = calloc(capacity, sizeof *buckets);
  if (!buckets) return -CS_EHOSTMEM;
  cs_block_map_t grown = {.buckets = buckets, .capacity = capacity, .count = map->count};
  for (size_t i = 0; i < map->capacity; i++) {
    cs_block_t *next;
    for (cs_block_t *b = map->buckets[i]; b; b = next) {
      next = b->u.held.next_live;
      cs_block_map_push(&grown, b);
    }
  }
  free(map->buckets);
  *map = grown;
  return 0;
}

int cs_block_map_reserve(cs_block_map_t *map, size_t count) {
  while (CS_UNLIKELY(count > map->capacity)) {
    int err = cs_block_map_grow(map);
    if (err) return err;
  }
  return 0;
}

int cs_block_map_insert(cs_block_map_t *map, cs_block_t *block) {
  int err = cs_block_map_reserve(map, map->count + 1);
  if (err) return err;
  cs_assert(cs_block_map_find(map, block->addr) == NULL);
  cs_block_map_push(map, block);
  map->count++;
  return 0;
}

cs_block_t *cs_block_map_find(const cs_block_map_t *map, uintptr_t addr) {
  if (map->capacity == 0) return NULL;
  cs_block_t *b = map->buckets[cs_block_map_home(map, addr)];
  while (b && b->addr != addr) b = b->u.held.next_live;
  return b;
}

cs_block_t *cs_block_map_remove(cs_block_map_t *map, uintptr_t addr) {
  if (map->capacity == 0) return NULL;
  cs_block_t **link = &map->buckets[cs_block_map_home(map, addr)];
  while (*link && (*link)->addr != addr) link = &(*link)->u.held.next_live;
  cs_block_t *found = *link;
  if (!found) return NULL;
  *link = found->u.held.next_live;
  map->count--;
  return found;
}

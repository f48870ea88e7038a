/* SPDX-License-Identifier: Apache-2.0 */
/* A map from model values (cs_val_t words) to 32-bit numbers, for the caches that key on a frame
 * list: frame lists are stored once by content (model/doc.h), so the stack of a million trace
 * entries is a few thousand distinct words, and what is computed from one (its site, its place in
 * a table) is computed once per word. Open addressing with linear probing; no removal. */
#ifndef CS_ANALYSIS_VAL_MAP_H
#define CS_ANALYSIS_VAL_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"

typedef struct cs_val_map_s {
  cs_val_t *keys;   /* CS_VAL_ABSENT = empty (never a key: it is no value) */
  uint32_t *values;
  size_t nslots;    /* a power of two, kept above twice count; 0 before the first put */
  size_t count;
} cs_val_map_t;

void cs_val_map_init(cs_val_map_t *m);
void cs_val_map_free(cs_val_map_t *m);

/* The number put for key; false when there is none. */
bool cs_val_map_get(const cs_val_map_t *m, cs_val_t key, uint32_t *value);

/* Map key (not CS_VAL_ABSENT) to value, replacing what it was mapped to. Returns 0, or -1 without
 * host memory (the map is unchanged then). */
int cs_val_map_put(cs_val_map_t *m, cs_val_t key, uint32_t value);

#endif

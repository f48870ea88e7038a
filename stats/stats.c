/* SPDX-License-Identifier: Apache-2.0 */
/* memory_stats() counters: init, resets, merge and the flat key/value export.
 *
 * Everything here is generated from stats/stats.def; nothing keeps its own list of names. */
#include "stats/stats.h"

#include <stddef.h>
#include <string.h>

#include "common/cs_assert.h"
#include "common/cs_compiler.h"

/* ---------------------------------------------------------------------------------------------
 * The flat field table: key and byte offset of every memory_stats() entry, in memory_stats() order
 * ------------------------------------------------------------------------------------------- */

typedef struct cs_stat_field_s {
  const char *key; /* static, e.g. "active_bytes.large_pool.peak" */
  size_t offset;   /* of the int64_t inside cs_stats_t */
} cs_stat_field_t;

/* memory_stats() sorts by key (Python string order, '.' before '_'). stats.def lists the names in
 * that order; inside one name the pools go all, large_pool, small_pool (not the array-index order
 * all, small, large) and the values allocated, current, freed, peak, which is sorted too. */
#define CS_FIELD_(key, base)                                                                       \
  {key ".allocated", (base) + offsetof(cs_stat_t, allocated)},                                     \
      {key ".current", (base) + offsetof(cs_stat_t, current)},                                     \
      {key ".freed", (base) + offsetof(cs_stat_t, freed)},                                         \
      {key ".peak", (base) + offsetof(cs_stat_t, peak)},
#define CS_POOL_BASE_(name, pool) (offsetof(cs_stats_t, name) + (size_t)(pool) * sizeof(cs_stat_t))

static const cs_stat_field_t cs_stat_fields[] = {
#define CS_STAT_ARRAY(name)                                                                        \
  CS_FIELD_(#name ".all", CS_POOL_BASE_(name, CS_STAT_ALL))                                        \
  CS_FIELD_(#name ".large_pool", CS_POOL_BASE_(name, CS_STAT_LARGE_POOL))                          \
  CS_FIELD_(#name ".small_pool", CS_POOL_BASE_(name, CS_STAT_SMALL_POOL))
#define CS_STAT(name) CS_FIELD_(#name, offsetof(cs_stats_t, name))
#define CS_COUNTER(name) {#name, offsetof(cs_stats_t, name)},
#include "stats/stats.def"
#undef CS_STAT_ARRAY
#undef CS_STAT
#undef CS_COUNTER
};

#undef CS_FIELD_
#undef CS_POOL_BASE_

_Static_assert(CS_ARRAY_SIZE(cs_stat_fields) == CS_STATS_KEY_COUNT,
               "stats.def and CS_STATS_KEY_COUNT disagree");
/* Every field is an int64_t, with no padding, so the table covers the whole struct. */
_Static_assert(sizeof(cs_stats_t) == CS_STATS_KEY_COUNT * sizeof(int64_t),
               "cs_stats_t has fields outside stats.def");

/* ---------------------------------------------------------------------------------------------
 * Init and resets
 * ------------------------------------------------------------------------------------------- */

void cs_stats_init(cs_stats_t *stats, int64_t max_split_size) {
  cs_assert(stats != NULL);
  memset(stats, 0, sizeof *stats);
  stats->max_split_size = max_split_size;
}

void cs_stats_reset_peak(cs_stats_t *stats) {
  cs_assert(stats != NULL);
#define CS_STAT_ARRAY(name)                                                                        \
  for (int p = 0; p < CS_STAT_POOLS; p++) stats->name[p].peak = stats->name[p].current;
#define CS_STAT(name) stats->name.peak = stats->name.current;
#define CS_COUNTER(name)
#include "stats/stats.def"
#undef CS_STAT_ARRAY
#undef CS_STAT
#undef CS_COUNTER
}

/* Every counter except max_split_size is an event count (the five num_*). A counter added to
 * stats.def later is treated as an event count unless CS_STATS_IS_CONFIG_ names it. */
#define CS_STATS_IS_CONFIG_(name) (offsetof(cs_stats_t, name) == offsetof(cs_stats_t, max_split_size))

void cs_stats_reset_accumulated(cs_stats_t *stats) {
  cs_assert(stats != NULL);
#define CS_STAT_ARRAY(name)                                                                        \
  for (int p = 0; p < CS_STAT_POOLS; p++) {                                                        \
    stats->name[p].allocated = 0;                                                                  \
    stats->name[p].freed = 0;                                                                      \
  }
#define CS_STAT(name)                                                                              \
  stats->name.allocated = 0;                                                                       \
  stats->name.freed = 0;
#define CS_COUNTER(name)                                                                           \
  if (!CS_STATS_IS_CONFIG_(name)) stats->name = 0;
#include "stats/stats.def"
#undef CS_STAT_ARRAY
#undef CS_STAT
#undef CS_COUNTER
}

/* ---------------------------------------------------------------------------------------------
 * Merge
 * ------------------------------------------------------------------------------------------- */

static void cs_stat_add(cs_stat_t *dst, const cs_stat_t *src) {
  dst->current += src->current;
  dst->peak += src->peak; /* an upper bound: the two peaks need not have happened together */
  dst->allocated += src->allocated;
  dst->freed += src->freed;
}

/* max_split_size is not a count but the allocator's config value (bytes, -1 = unlimited), so it is
 * not added. Every context of one process reads the same PYTORCH_CUDA_ALLOC_CONF, so the values
 * agree in practice. dst keeps its own value when it has one (> 0); when it has none (-1, or 0 in a
 * zero-filled accumulator) it takes src's unless src has none either (0), so merging into a fresh
 * accumulator carries the setting over. */
void cs_stats_merge(cs_stats_t *dst, const cs_stats_t *src) {
  cs_assert(dst != NULL && src != NULL);
#define CS_STAT_ARRAY(name)                                                                        \
  for (int p = 0; p < CS_STAT_POOLS; p++) cs_stat_add(&dst->name[p], &src->name[p]);
#define CS_STAT(name) cs_stat_add(&dst->name, &src->name);
#define CS_COUNTER(name)                                                                           \
  if (!CS_STATS_IS_CONFIG_(name)) dst->name += src->name;
#include "stats/stats.def"
#undef CS_STAT_ARRAY
#undef CS_STAT
#undef CS_COUNTER
  if (dst->max_split_size <= 0 && src->max_split_size != 0) dst->max_split_size = src->max_split_size;
}

#undef CS_STATS_IS_CONFIG_

/* ---------------------------------------------------------------------------------------------
 * Flat export
 * ------------------------------------------------------------------------------------------- */

size_t cs_stats_flatten(const cs_stats_t *stats, cs_stat_kv_t *out, size_t cap) {
  cs_assert(stats != NULL);
  cs_assert(out != NULL || cap == 0);
  const char *base = (const char *)stats;
  size_t n = cap < CS_STATS_KEY_COUNT ? cap : CS_STATS_KEY_COUNT;
  for (size_t i = 0; i < n; i++) {
    out[i].key = cs_stat_fields[i].key;
    memcpy(&out[i].value, base + cs_stat_fields[i].offset, sizeof out[i].value);
  }
  return CS_STATS_KEY_COUNT;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* torch.cuda.memory_stats()-compatible counters for one allocator instance.
 *
 * Not thread-safe: the owner (one caching allocator) updates and copies them under its own lock.
 * Readers take a copy (cs_allocator_get_stats) and work on that. No allocation anywhere. */
#ifndef CS_STATS_H
#define CS_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PyTorch's Stat: increase() raises current, peak and allocated; decrease() lowers current and
 * raises freed. */
typedef struct cs_stat_s {
  int64_t current;
  int64_t peak;
  int64_t allocated; /* accumulated increases */
  int64_t freed;     /* accumulated decreases */
} cs_stat_t;

/* StatArray index: every update touches ALL plus the block's own pool. */
typedef enum cs_stat_pool_e {
  CS_STAT_ALL = 0,
  CS_STAT_SMALL_POOL = 1,
  CS_STAT_LARGE_POOL = 2,
  CS_STAT_POOLS = 3,
} cs_stat_pool_t;

typedef struct cs_stats_s {
#define CS_STAT_ARRAY(name) cs_stat_t name[CS_STAT_POOLS];
#define CS_STAT(name) cs_stat_t name;
#define CS_COUNTER(name) int64_t name;
#include "stats/stats.def"
#undef CS_STAT_ARRAY
#undef CS_STAT
#undef CS_COUNTER
} cs_stats_t;

/* 9 arrays x 3 pools x 4 + 2 stats x 4 + 6 counters. */
#define CS_STATS_KEY_COUNT 122

static inline void cs_stat_increase(cs_stat_t *s, int64_t n) {
  s->current += n;
  s->allocated += n;
  if (s->current > s->peak) s->peak = s->current;
}

static inline void cs_stat_decrease(cs_stat_t *s, int64_t n) {
  s->current -= n;
  s->freed += n;
}

/* Apply a signed net change as PyTorch does: one increase or one decrease, nothing when zero. */
static inline void cs_stat_update(cs_stat_t *s, int64_t delta) {
  if (delta > 0) cs_stat_increase(s, delta);
  else if (delta < 0) cs_stat_decrease(s, -delta);
}

/* StatArray updates: ALL and one pool (small or large). */
static inline void cs_stat_array_increase(cs_stat_t a[CS_STAT_POOLS], bool small, int64_t n) {
  cs_stat_increase(&a[CS_STAT_ALL], n);
  cs_stat_increase(&a[small ? CS_STAT_SMALL_POOL : CS_STAT_LARGE_POOL], n);
}

static inline void cs_stat_array_decrease(cs_stat_t a[CS_STAT_POOLS], bool small, int64_t n) {
  cs_stat_decrease(&a[CS_STAT_ALL], n);
  cs_stat_decrease(&a[small ? CS_STAT_SMALL_POOL : CS_STAT_LARGE_POOL], n);
}

static inline void cs_stat_array_update(cs_stat_t a[CS_STAT_POOLS], bool small, int64_t delta) {
  cs_stat_update(&a[CS_STAT_ALL], delta);
  cs_stat_update(&a[small ? CS_STAT_SMALL_POOL : CS_STAT_LARGE_POOL], delta);
}

/* All zero; max_split_size as given (-1 = unlimited). */
void cs_stats_init(cs_stats_t *stats, int64_t max_split_size);

/* torch.cuda.reset_peak_memory_stats: every peak becomes its current. */
void cs_stats_reset_peak(cs_stats_t *stats);

/* torch.cuda.reset_accumulated_memory_stats: every allocated and freed, and the five num_*
 * counters, become 0. */
void cs_stats_reset_accumulated(cs_stats_t *stats);

/* Add src into dst, field by field (several contexts on one device), except max_split_size, a
 * setting that is kept (or taken from src when dst has none). Peaks add up, so the merged peak is
 * an upper bound of the true combined peak; exact for one context per device. */
void cs_stats_merge(cs_stats_t *dst, const cs_stats_t *src);

/* One flat memory_stats() entry. `key` points to static storage. */
typedef struct cs_stat_kv_s {
  const char *key;
  int64_t value;
} cs_stat_kv_t;

/* The 122 flat entries in memory_stats() order (sorted by key). Writes min(cap, 122) entries and
 * returns CS_STATS_KEY_COUNT. */
size_t cs_stats_flatten(const cs_stats_t *stats, cs_stat_kv_t *out, size_t cap);

/* torch.cuda.memory_summary(device, abbreviated) text for these stats, into buf (always
 * NUL-terminated when len > 0). Returns the length of the whole text, as snprintf does, so a
 * caller can size the buffer with a first call of len 0. */
size_t cs_stats_summary(const cs_stats_t *stats, int device, bool abbreviated, char *buf, size_t len);

#endif

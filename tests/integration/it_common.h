/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the integration test programs: failure reporting, the cudasnap and fake-driver
 * probes, and the allocate/write/read/free workload every loader runs.
 *
 * The workload keeps a few blocks live at once, writes a pattern derived from (block tag, offset)
 * into each new block with a host-to-device copy, and reads it back before the block is freed: a
 * block handed out twice, or reused while live, shows up as a pattern mismatch. The checksum
 * folds the sizes and the bytes read back, so it is the same with and without cudasnap. */
#ifndef CS_IT_COMMON_H
#define CS_IT_COMMON_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/cudasnap.h"
#include "tests/fakes/fake_cuda_control.h"

#define IT_FAIL(...)                                                                              \
  do {                                                                                            \
    fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
    fprintf(stderr, __VA_ARGS__);                                                                 \
    fputc('\n', stderr);                                                                          \
    exit(1);                                                                                      \
  } while (0)

#define IT_CHECK(cond, ...)                                                                       \
  do {                                                                                            \
    if (!(cond)) IT_FAIL(__VA_ARGS__);                                                            \
  } while (0)

#define IT_MIB ((size_t)1 << 20)
#define IT_KIB ((size_t)1 << 10)

/* dlsym's void * as a function pointer (ISO C has no cast between the two). */
#define IT_FN_FROM_PTR(dst, p)                                                                    \
  do {                                                                                            \
    void *it_p_ = (p);                                                                            \
    _Static_assert(sizeof(dst) == sizeof it_p_, "function pointer size");                         \
    memcpy(&(dst), &it_p_, sizeof it_p_);                                                         \
  } while (0)

static inline uint64_t it_mix(uint64_t x) {
  x += UINT64_C(0x9E3779B97F4A7C15);
  x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
  return x ^ (x >> 31);
}

/* Is cudasnap preloaded? When the runner says what to expect (CS_IT_EXPECT_PRELOAD=0 or 1), a
 * mismatch fails: a test that silently ran without the library would prove nothing. */
static inline int it_preloaded(void) {
  int loaded = cudasnap_memory_allocated != NULL;
  const char *e = getenv("CS_IT_EXPECT_PRELOAD");
  if (e && *e) IT_CHECK((e[0] == '1') == loaded, "cudasnap %s preloaded, expected %s", loaded ? "is" : "is not",
                        e[0] == '1' ? "preloaded" : "not preloaded");
  return loaded;
}

/* One key of cudasnap_memory_stats(device). */
static inline int64_t it_stat(int device, const char *key) {
  cudasnap_stat_t kv[CUDASNAP_MEMORY_STATS_KEYS];
  int n = cudasnap_memory_stats(device, kv, CUDASNAP_MEMORY_STATS_KEYS);
  IT_CHECK(n == CUDASNAP_MEMORY_STATS_KEYS, "cudasnap_memory_stats returned %d keys", n);
  for (int i = 0; i < n; i++)
    if (strcmp(kv[i].key, key) == 0) return kv[i].value;
  IT_FAIL("no statistic named %s", key);
}

static inline fake_cuda_control_t it_fake(void) {
  fake_cuda_control_t c;
  IT_CHECK(fake_cuda_control_load(&c) == 0, "the fake libcuda.so.1 is not loaded (is LD_LIBRARY_PATH set?)");
  return c;
}

static inline fake_cuda_counters_t it_counters(const fake_cuda_control_t *c) {
  fake_cuda_counters_t n;
  c->get_counters(&n);
  return n;
}

/* ---- the workload ---- */

/* The device operations of one loader; each returns the CUresult / cudaError_t as an int. */
typedef struct it_ops_s {
  int (*alloc)(uint64_t *dptr, size_t n);
  int (*free)(uint64_t dptr);
  int (*htod)(uint64_t dst, const void *src, size_t n);
  int (*dtoh)(void *dst, uint64_t src, size_t n);
} it_ops_t;

enum {
  IT_WINDOW = 16 * 1024,      /* bytes written and read at each end (and middle) of a large block */
  IT_WHOLE_MAX = 64 * 1024,   /* blocks up to this size are written and read whole */
  IT_MAX_SLOTS = 64,
};

typedef struct it_block_s {
  uint64_t dptr;
  size_t size;
  uint64_t tag;
} it_block_t;

typedef struct it_workload_s {
  const it_ops_t *ops;
  uint64_t rng;
  unsigned slots;
  it_block_t live[IT_MAX_SLOTS];
  uint64_t allocations; /* successful allocations */
  uint64_t checksum;
  unsigned char *expect, *got; /* host buffers of IT_WHOLE_MAX + 8 bytes */
} it_workload_t;

static inline uint64_t it_next(uint64_t *rng) { return it_mix((*rng)++); }

/* Mixed sizes from 1 B to 40 MiB, mostly small, as a framework would ask: round 0 is 1 byte and
 * round 1 is 40 MiB, so both ends always occur. Large sizes come from a few classes with jitter,
 * as tensors of a model do, so a cache can serve them from few segments. */
static inline size_t it_pick_size(uint64_t *rng, uint64_t round) {
  if (round == 0) return 1;
  if (round == 1) return 40 * IT_MIB;
  uint64_t r = it_next(rng);
  unsigned cls = (unsigned)(r % 100);
  uint64_t j = r >> 8;
  if (cls < 60) return 1 + (size_t)(j % (64 * IT_KIB));                  /* 1 B .. 64 KiB */
  if (cls < 85) return 64 * IT_KIB + (size_t)(j % (960 * IT_KIB));       /* 64 KiB .. 1 MiB */
  static const size_t large[] = {3 * IT_MIB, 6 * IT_MIB, 12 * IT_MIB, 40 * IT_MIB};
  size_t base = large[(j & 0xff) % (cls < 97 ? 3u : 4u)];
  return base - (size_t)((j >> 8) % (256 * IT_KIB));                    /* up to 256 KiB less */
}

/* Pattern of block `tag` for bytes [off, off + n) (off a multiple of 8). */
static inline void it_pattern(unsigned char *buf, uint64_t tag, size_t off, size_t n) {
  size_t words = (n + 7) / 8;
  for (size_t w = 0; w < words; w++) {
    uint64_t v = it_mix(tag ^ ((off / 8 + w) * UINT64_C(0x100000001B3)));
    size_t k = n - w * 8 < 8 ? n - w * 8 : 8;
    memcpy(buf + w * 8, &v, k);
  }
}

/* The windows of a block: whole when small, else head, middle and tail (8-byte aligned starts). */
static inline unsigned it_windows(size_t size, size_t off[3], size_t len[3]) {
  if (size <= IT_WHOLE_MAX) {
    off[0] = 0;
    len[0] = size;
    return 1;
  }
  off[0] = 0;
  len[0] = IT_WINDOW;
  off[1] = (size / 2) & ~(size_t)7;
  len[1] = IT_WINDOW;
  off[2] = (size - IT_WINDOW) & ~(size_t)7;
  len[2] = size - off[2];
  return 3;
}

static inline void it_write_block(it_workload_t *w, const it_block_t *b) {
  size_t off[3], len[3];
  unsigned n = it_windows(b->size, off, len);
  for (unsigned i = 0; i < n; i++) {
    it_pattern(w->expect, b->tag, off[i], len[i]);
    int r = w->ops->htod(b->dptr + off[i], w->expect, len[i]);
    IT_CHECK(r == 0, "host-to-device copy of %zu bytes at +%zu of a %zu-byte block: error %d", len[i], off[i],
             b->size, r);
  }
}

static inline void it_fold(uint64_t *sum, const unsigned char *p, size_t n) {
  uint64_t acc = *sum;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    acc = (acc ^ v) * UINT64_C(0x100000001B3) + (acc >> 29);
  }
  for (; i < n; i++) acc = (acc ^ p[i]) * UINT64_C(0x100000001B3);
  *sum = acc;
}

/* Read the block back, check it still holds its pattern, and fold it into the checksum. */
static inline void it_check_block(it_workload_t *w, const it_block_t *b) {
  size_t off[3], len[3];
  unsigned n = it_windows(b->size, off, len);
  uint64_t size64 = b->size;
  it_fold(&w->checksum, (const unsigned char *)&size64, sizeof size64);
  for (unsigned i = 0; i < n; i++) {
    int r = w->ops->dtoh(w->got, b->dptr + off[i], len[i]);
    IT_CHECK(r == 0, "device-to-host copy of %zu bytes: error %d", len[i], r);
    it_pattern(w->expect, b->tag, off[i], len[i]);
    if (memcmp(w->expect, w->got, len[i]) != 0) {
      size_t at = 0;
      while (w->expect[at] == w->got[at]) at++;
      IT_FAIL("block 0x%" PRIx64 " (%zu bytes) lost its contents at offset %zu: a block was handed out twice "
              "or reused while live", b->dptr, b->size, off[i] + at);
    }
    it_fold(&w->checksum, w->got, len[i]);
  }
}

static inline void it_workload_init(it_workload_t *w, const it_ops_t *ops, uint64_t seed, unsigned slots) {
  memset(w, 0, sizeof *w);
  w->ops = ops;
  w->rng = seed;
  w->slots = slots < IT_MAX_SLOTS ? slots : IT_MAX_SLOTS;
  w->checksum = UINT64_C(0xCBF29CE484222325) ^ seed;
  w->expect = malloc(IT_WHOLE_MAX + 8);
  w->got = malloc(IT_WHOLE_MAX + 8);
  IT_CHECK(w->expect && w->got, "out of host memory");
}

static inline void it_release_slot(it_workload_t *w, unsigned s) {
  it_block_t *b = &w->live[s];
  if (!b->dptr) return;
  it_check_block(w, b);
  int r = w->ops->free(b->dptr);
  IT_CHECK(r == 0, "free of a live %zu-byte block: error %d", b->size, r);
  b->dptr = 0;
}

/* `rounds` allocations, each replacing the block of one slot. */
static inline void it_workload_run(it_workload_t *w, uint64_t rounds) {
  for (uint64_t i = 0; i < rounds; i++) {
    unsigned s = (unsigned)(it_next(&w->rng) % w->slots);
    it_release_slot(w, s);
    it_block_t *b = &w->live[s];
    b->size = it_pick_size(&w->rng, i);
    b->tag = it_next(&w->rng);
    int r = w->ops->alloc(&b->dptr, b->size);
    IT_CHECK(r == 0 && b->dptr, "allocation %" PRIu64 " of %zu bytes: error %d", i, b->size, r);
    w->allocations++;
    it_write_block(w, b);
  }
}

static inline void it_workload_finish(it_workload_t *w) {
  for (unsigned s = 0; s < w->slots; s++) it_release_slot(w, s);
  free(w->expect);
  free(w->got);
  w->expect = w->got = NULL;
}

/* With cudasnap preloaded: every allocation was counted once, nothing is left allocated, and the
 * driver saw only a handful of allocations (every one in record-only mode, CUDASNAP_CACHE=0).
 * Without: the driver saw every one. */
static inline void it_check_cache(const fake_cuda_counters_t *before, const fake_cuda_counters_t *after,
                                  uint64_t allocations, int preloaded, uint64_t max_driver_allocs) {
  uint64_t driver = after->mem_alloc - before->mem_alloc;
  IT_CHECK(after->mem_alloc_failed == before->mem_alloc_failed, "the driver refused %" PRIu64 " allocations",
           after->mem_alloc_failed - before->mem_alloc_failed);
  IT_CHECK(after->capture_violations == before->capture_violations, "%" PRIu64 " calls illegal during capture",
           after->capture_violations - before->capture_violations);
  if (!preloaded) {
    IT_CHECK(driver == allocations, "without cudasnap the driver saw %" PRIu64 " allocations of %" PRIu64, driver,
             allocations);
    return;
  }
  const char *cache = getenv("CUDASNAP_CACHE");
  if (cache && strcmp(cache, "0") == 0) max_driver_allocs = allocations; /* record only */
  IT_CHECK(driver >= 1 && driver <= max_driver_allocs,
           "cuMemAlloc_v2 reached the driver %" PRIu64 " times for %" PRIu64 " allocations (expected 1..%" PRIu64 ")",
           driver, allocations, max_driver_allocs);
  int64_t counted = it_stat(0, "allocation.all.allocated");
  IT_CHECK((uint64_t)counted == allocations, "cudasnap counted %" PRId64 " allocations, the program made %" PRIu64,
           counted, allocations);
  IT_CHECK(it_stat(0, "allocation.all.current") == 0, "allocation.all.current is %" PRId64 " after freeing all",
           it_stat(0, "allocation.all.current"));
  IT_CHECK(cudasnap_memory_allocated(0) == 0, "cudasnap_memory_allocated(0) is %" PRId64 " after freeing all",
           cudasnap_memory_allocated(0));
  fprintf(stderr, "driver allocations: %" PRIu64 " for %" PRIu64 " allocations\n", driver, allocations);
}

#endif

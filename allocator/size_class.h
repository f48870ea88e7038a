/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch's size classes (c10/cuda/CUDACachingAllocator.cpp), as pure inline functions.
 * snapshot-format.md section 6.1 and 6.3 step 2-3. */
#ifndef CS_SIZE_CLASS_H
#define CS_SIZE_CLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cs_alloc_conf.h"

#define CS_KiB ((size_t)1024)
#define CS_MiB (1024 * CS_KiB)

enum {
  CS_MIN_BLOCK_SIZE = 512, /* every size is rounded up to a multiple of this */
};
#define CS_SMALL_SIZE (1 * CS_MiB)      /* requests <= this go to the small pool */
#define CS_SMALL_BUFFER (2 * CS_MiB)    /* segment size of the small pool */
#define CS_LARGE_BUFFER (20 * CS_MiB)   /* segment size for large requests < CS_MIN_LARGE_ALLOC */
#define CS_MIN_LARGE_ALLOC (10 * CS_MiB) /* requests >= this get a segment of their own */
#define CS_ROUND_LARGE (2 * CS_MiB)     /* large segments are a multiple of this */

/* Requests of this size or more fail at once as out of memory (PyTorch's 1 EiB guard), which
 * also keeps every rounding below free of overflow. */
#define CS_MAX_REQUEST ((size_t)1 << 60)

static inline size_t cs_round_up(size_t n, size_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

static inline bool cs_is_pow2(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

static inline unsigned cs_log2_floor(size_t n) { return 63u - (unsigned)__builtin_clzll(n); }

/* roundup_power2_divisions interval of a size: floor(log2(size)) - 20, clamped to 0..15. */
static inline unsigned cs_roundup_interval(size_t size) {
  unsigned log = cs_log2_floor(size);
  unsigned index = log > 20 ? log - 20 : 0;
  return index < CS_ROUNDUP_INTERVALS ? index : CS_ROUNDUP_INTERVALS - 1;
}

/* Round up to the next of `divisions` equal steps between the enclosing powers of two. A power of
 * two stays as it is; divisions is taken down to a power of two. */
static inline size_t cs_round_to_division(size_t size, uint32_t divisions) {
  if (cs_is_pow2(size)) return size;
  size_t floor_pow2 = (size_t)1 << cs_log2_floor(size);
  size_t step = floor_pow2 >> cs_log2_floor(divisions);
  if (step == 0) return floor_pow2 << 1;
  size_t rounded_down = size & ~(step - 1);
  return rounded_down == size ? size : rounded_down + step;
}

/* The block size for a request: PyTorch's round_size. pre: size < CS_MAX_REQUEST. */
static inline size_t cs_round_size(size_t size, const uint32_t divisions[CS_ROUNDUP_INTERVALS]) {
  if (size < CS_MIN_BLOCK_SIZE) return CS_MIN_BLOCK_SIZE;
  uint32_t div = divisions[cs_roundup_interval(size)];
  if (div > 1 && size > (size_t)CS_MIN_BLOCK_SIZE * div) return cs_round_to_division(size, div);
  return cs_round_up(size, CS_MIN_BLOCK_SIZE);
}

static inline bool cs_size_is_small(size_t rounded) { return rounded <= CS_SMALL_SIZE; }

/* The segment size to request from the device for a block of `rounded` bytes. split_large selects
 * PyTorch's large pool (20 MiB segments shared by 1-10 MiB requests); the IPC-safe default gives
 * every large request a segment of its own, rounded to 2 MiB; ipc_small does the same for small
 * requests, at their own size, so that every block starts a segment (legacy CUDA IPC maps a
 * segment from its start). */
static inline size_t cs_segment_size(size_t rounded, bool split_large, bool ipc_small) {
  if (cs_size_is_small(rounded)) return ipc_small ? rounded : CS_SMALL_BUFFER;
  if (split_large && rounded < CS_MIN_LARGE_ALLOC) return CS_LARGE_BUFFER;
  return cs_round_up(rounded, CS_ROUND_LARGE);
}

/* Is the rest of a free block split off as a free block of its own when the block is handed out
 * for a request of `rounded` bytes, `remaining` bytes being left (PyTorch's should_split, with
 * cudasnap's IPC-safe pools)? Otherwise the rest stays in the block handed out: the block's
 * rounding. pool.c hands blocks out by it; `cudasnap recover` draws a recording's blocks by it
 * (a live block reaches the next block or the segment's end unless the rest was split off), so
 * that a recovered snapshot splits free bytes as a dump of the same state does. */
static inline bool cs_splits_rest(bool small, size_t rounded, size_t remaining, const cs_alloc_conf_t *conf) {
  if (small) return !conf->ipc_small && remaining >= CS_MIN_BLOCK_SIZE;
  if (!conf->split_large) return false; /* IPC-safe: a large block is its segment */
  return rounded < conf->max_split_size && remaining > CS_SMALL_SIZE;
}

/* IPC-safe pool: how much larger than the request a cached whole segment may be and still be
 * reused. An eighth of the request, at least the 2 MiB segment rounding, at most
 * max_non_split_rounding (PyTorch's own bound for blocks it never splits). */
static inline size_t cs_whole_segment_slack(size_t rounded, size_t max_non_split_rounding) {
  size_t slack = rounded / 8;
  if (slack < CS_ROUND_LARGE) slack = CS_ROUND_LARGE;
  if (slack > max_non_split_rounding) slack = max_non_split_rounding;
  return slack;
}

/* ipc_small: a cached small segment serves a request no more than an eighth smaller, so that
 * whole-segment reuse cannot hold 1 MiB for a 512-byte request. */
static inline size_t cs_small_segment_slack(size_t rounded) {
  size_t slack = rounded / 8;
  return slack < CS_MIN_BLOCK_SIZE ? CS_MIN_BLOCK_SIZE : slack;
}

#endif

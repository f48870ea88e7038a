/* SPDX-License-Identifier: Apache-2.0 */
/* The frame list cache of formats that cannot refer back to a value (JSON): the bytes of each frame
 * list are kept, per frame list id, the first time the list is written, and copied out again for
 * every later cs_emit_frames_ref of that id. A snapshot's history repeats a few hundred stacks
 * thousands of times, and writing a list out costs a symbolizer lookup plus six emitter calls per
 * frame, where a copy costs one memcpy.
 *
 * Part of the emitter's inside (emit_impl.h): include it only from emit.c and emit_cache.c.
 *
 * Capture follows the list through the emitter's buffer: armed by a frames_ref that missed, it
 * starts when that very value opens as a list, takes the buffered bytes at each flush and the rest
 * when the list closes, and becomes a cache entry at frames_done. Anything else (another value,
 * a done for another id, a done after more output) drops it, and the list is simply not cached.
 *
 * Memory: the bytes plus 8 per id up to the largest cached id, never more than `limit` in all.
 * When the cache cannot grow (limit reached, or no host memory) later lists are written out as
 * before: the cache changes how fast the output comes, never what it is or whether it succeeds. */
#ifndef CS_EMIT_CACHE_H
#define CS_EMIT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* bytes. Default bound of one emitter's cache: 16,000 lists of 2 KiB (22 frames of name, file and
 * line) in a dump that may run inside a program short of host memory. */
#define CS_EMIT_CACHE_LIMIT ((size_t)32 << 20)

typedef enum cs_emit_capture_state_e {
  CS_EMIT_CAPTURE_IDLE = 0,
  CS_EMIT_CAPTURE_ARMED,  /* a frames_ref missed; the list should open at `start` */
  CS_EMIT_CAPTURE_ON,     /* the list is open: flushes append its bytes */
  CS_EMIT_CAPTURE_CLOSED, /* the list ended: all its bytes are in the arena, waiting for done */
} cs_emit_capture_state_t;

typedef struct cs_emit_span_s {
  uint32_t offset; /* into arena */
  uint32_t len;    /* bytes; 0 = not cached (a list is at least "[]") */
} cs_emit_span_t;

typedef struct cs_emit_cache_s {
  unsigned char *arena;  /* cached lists back to back, then the one being captured */
  size_t used;           /* bytes of arena that belong to cached lists */
  size_t tail;           /* bytes captured so far, at arena + used */
  size_t arena_cap;      /* bytes allocated */
  cs_emit_span_t *spans; /* indexed by frame list id */
  size_t span_cap;       /* entries allocated */
  size_t limit;          /* bytes: arena_cap + spans never grow past it; <= UINT32_MAX */
  cs_emit_capture_state_t state;
  uint32_t id;           /* the list being captured */
  int depth;             /* emitter depth while that list is open */
  uint64_t start;        /* stream offset of its '[' (armed: where it must open) */
  uint64_t end;          /* stream offset just after its ']' (closed) */
} cs_emit_cache_t;

#endif

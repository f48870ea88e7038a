/* SPDX-License-Identifier: Apache-2.0 */
/* The frame list cache (emit_cache.h): capturing a list's bytes as the emitter writes them, and
 * looking them up again. emit.c calls in at the few points a capture cares about. */
#include <stdlib.h>
#include <string.h>

#include "memviz/emit_impl.h"

/* bytes: the arena's first allocation; it doubles from there up to the limit */
enum { CS_EMIT_ARENA_MIN = 64 * 1024 };

static size_t cs_emit_cache_bytes(const cs_emit_cache_t *c) {
  return c->arena_cap + c->span_cap * sizeof *c->spans;
}

/* Forget the list being captured; its bytes past c->used are simply overwritten later. */
static void cs_emit_capture_drop(cs_emit_cache_t *c) {
  c->state = CS_EMIT_CAPTURE_IDLE;
  c->tail = 0;
}

/* Make room for `need` bytes in all in the arena. False when that would pass the limit or realloc
 * fails; after a failed realloc the limit drops to what is held, so no later list tries again. */
static bool cs_emit_arena_reserve(cs_emit_cache_t *c, size_t need) {
  if (need <= c->arena_cap) return true;
  size_t spans = c->span_cap * sizeof *c->spans;
  size_t room = c->limit > spans ? c->limit - spans : 0; /* most the arena may hold */
  if (need > room) return false;
  size_t cap = c->arena_cap > 0 ? c->arena_cap : CS_EMIT_ARENA_MIN;
  while (cap < need) cap *= 2;
  if (cap > room) cap = room;
  unsigned char *arena = realloc(c->arena, cap);
  if (arena == NULL) {
    c->limit = cs_emit_cache_bytes(c);
    return false;
  }
  c->arena = arena;
  c->arena_cap = cap;
  return true;
}

/* Room for spans[id], same rules. Ids are dense (intern.h hands them out from 1): an array. */
static bool cs_emit_spans_reserve(cs_emit_cache_t *c, uint32_t id) {
  if (id < c->span_cap) return true;
  size_t cap = c->span_cap > 0 ? c->span_cap : 1024;
  while (cap <= id) cap *= 2;
  size_t held = cs_emit_cache_bytes(c);
  if (held > c->limit || (cap - c->span_cap) * sizeof *c->spans > c->limit - held) return false;
  cs_emit_span_t *spans = realloc(c->spans, cap * sizeof *spans);
  if (spans == NULL) {
    c->limit = cs_emit_cache_bytes(c);
    return false;
  }
  memset(spans + c->span_cap, 0, (cap - c->span_cap) * sizeof *spans);
  c->spans = spans;
  c->span_cap = cap;
  return true;
}

/* Add bytes to the list being captured, or drop the capture when they do not fit. */
static void cs_emit_capture_append(cs_emit_cache_t *c, const unsigned char *data, size_t len) {
  if (!cs_emit_arena_reserve(c, c->used + c->tail + len)) {
    cs_emit_capture_drop(c);
    return;
  }
  memcpy(c->arena + c->used + c->tail, data, len);
  c->tail += len;
}

/* The list's bytes still in the emitter's buffer: from its '[' or the buffer's start. */
static void cs_emit_capture_buffered(cs_emitter_t *e) {
  cs_emit_cache_t *c = &e->cache;
  size_t from = c->start > e->flushed ? (size_t)(c->start - e->flushed) : 0;
  if (from < e->len) cs_emit_capture_append(c, e->buf + from, e->len - from);
}

/* ------------------------------------------------------------------------------------------------
 * Called by emit.c (declared in emit_impl.h)
 * ---------------------------------------------------------------------------------------------- */

void cs_emit_cache_init(cs_emit_cache_t *c) {
  *c = (cs_emit_cache_t){.limit = CS_EMIT_CACHE_LIMIT};
}

void cs_emit_cache_free(cs_emit_cache_t *c) {
  free(c->arena);
  free(c->spans);
  cs_emit_cache_init(c);
}

void cs_emit_cache_set_limit(cs_emit_cache_t *c, size_t limit) {
  /* spans hold 32-bit offsets and lengths */
  c->limit = limit < UINT32_MAX ? limit : UINT32_MAX;
}

const unsigned char *cs_emit_cache_get(const cs_emit_cache_t *c, uint32_t id, size_t *len) {
  /* While a list is captured the arena may move under a copy out of it. */
  if (c->state == CS_EMIT_CAPTURE_ON) return NULL;
  if (id >= c->span_cap || c->spans[id].len == 0) return NULL;
  *len = c->spans[id].len;
  return c->arena + c->spans[id].offset;
}

void cs_emit_capture_arm(cs_emitter_t *e, uint32_t id) {
  cs_emit_cache_t *c = &e->cache;
  /* Inside the list being captured: leave that capture alone. A closed one that saw no done
   * (the caller wrote no list to share, snapshot.c for a stack it could not find) is given up. */
  if (c->state == CS_EMIT_CAPTURE_ON) return;
  cs_emit_capture_drop(c);
  /* The id's slot first: an arena that took all the room would leave none for it. */
  if (!cs_emit_spans_reserve(c, id)) return;
  c->state = CS_EMIT_CAPTURE_ARMED;
  c->id = id;
  c->start = cs_emit_pos(e);
}

void cs_emit_capture_open(cs_emitter_t *e, uint64_t value_pos, cs_emit_kind_t kind) {
  cs_emit_cache_t *c = &e->cache;
  /* Only the value that directly follows the frames_ref is the frame list. */
  if (value_pos != c->start || kind != CS_EMIT_KIND_LIST) {
    cs_emit_capture_drop(c);
    return;
  }
  c->state = CS_EMIT_CAPTURE_ON;
  c->depth = e->depth;
  c->start = cs_emit_pos(e); /* after the separator, which depends on where the list goes */
}

void cs_emit_capture_flush(cs_emitter_t *e) { cs_emit_capture_buffered(e); }

void cs_emit_capture_list_end(cs_emitter_t *e) {
  cs_emit_cache_t *c = &e->cache;
  if (e->depth != c->depth - 1) return; /* a list inside the frame list */
  cs_emit_capture_buffered(e);
  if (c->state != CS_EMIT_CAPTURE_ON) return; /* the append dropped it */
  c->state = CS_EMIT_CAPTURE_CLOSED;
  c->end = cs_emit_pos(e);
}

void cs_emit_capture_done(cs_emitter_t *e, uint32_t id) {
  cs_emit_cache_t *c = &e->cache;
  /* The captured list is the one just written under this id, and nothing came after it. */
  if (c->state == CS_EMIT_CAPTURE_CLOSED && c->id == id && cs_emit_pos(e) == c->end &&
      id < c->span_cap) {
    c->spans[id] = (cs_emit_span_t){.offset = (uint32_t)c->used, .len = (uint32_t)c->tail};
    c->used += c->tail;
  }
  cs_emit_capture_drop(c);
}

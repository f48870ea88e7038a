/* SPDX-License-Identifier: Apache-2.0 */
/* The format-independent half of the emitter: nesting, the sticky error, the output buffer, the
 * byte count and the frame-list memo table. The bytes come from emit_json.c or emit_pickle.c. */
#include "memviz/emit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_assert.h"
#include "memviz/emit_impl.h"

/* ------------------------------------------------------------------------------------------------
 * Output buffer and errors
 * ---------------------------------------------------------------------------------------------- */

void cs_emit_fail(cs_emitter_t *e, int error) {
  if (e->error == 0) e->error = error;
}

void cs_emit_flush(cs_emitter_t *e) {
  if (CS_UNLIKELY(e->cache.state == CS_EMIT_CAPTURE_ON)) cs_emit_capture_flush(e);
  if (e->len > 0 && e->error == 0) {
    int rc = e->sink.write(e->sink.ctx, e->buf, e->len);
    if (rc != 0)
      e->error = rc;
    else
      e->flushed += e->len;
  }
  e->len = 0;
}

void cs_emit_write(cs_emitter_t *e, const void *data, size_t len) {
  const unsigned char *p = data;
  while (len > 0) {
    if (e->len == CS_EMIT_BUFSIZE) cs_emit_flush(e);
    size_t n = CS_EMIT_BUFSIZE - e->len;
    if (n > len) n = len;
    memcpy(e->buf + e->len, p, n);
    e->len += n;
    p += n;
    len -= n;
  }
}

/* A call out of order (emit.h: calls must be well nested). A debug build stops here; a release
 * build fails the output (EINVAL) rather than write a file the viewer cannot read, or overrun the
 * nesting stack. Returns false. */
#define CS_EMIT_REQUIRE(e, cond) (CS_LIKELY(cond) ? true : cs_emit_misuse((e), #cond, __LINE__))

static CS_COLD bool cs_emit_misuse(cs_emitter_t *e, const char *expr, int line) {
#if CS_DEBUG >= 1
  (void)e;
  cs_assert_fail(expr, __FILE__, line);
#else
  (void)expr;
  (void)line;
  cs_emit_fail(e, EINVAL);
  return false;
#endif
}

/* ------------------------------------------------------------------------------------------------
 * UTF-8 replacement (declared in emit_impl.h; the rule is common/cs_utf8.h)
 * ---------------------------------------------------------------------------------------------- */

void cs_emit_keep_surrogates(cs_emitter_t *e) {
  e->keep_surrogates = true;
}

void cs_emit_utf8_fixed(cs_emitter_t *e, const unsigned char *s, size_t n) {
  size_t run = 0; /* start of the bytes not yet written */
  for (size_t i = 0; i < n;) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t len;
    if (cs_utf8_seq(s + i, n - i, &len)) {
      i += len;
      continue;
    }
    if (e->keep_surrogates && cs_utf8_surrogate(s + i, n - i)) {
      i += 3; /* written with the run (JSON escapes them before: cs_json_quoted_slow) */
      continue;
    }
    cs_emit_write(e, s + run, i - run);
    cs_emit_write(e, CS_UTF8_REPLACEMENT, sizeof CS_UTF8_REPLACEMENT - 1);
    i += len;
    run = i;
  }
  cs_emit_write(e, s + run, n - run);
}

/* ------------------------------------------------------------------------------------------------
 * Nesting
 * ---------------------------------------------------------------------------------------------- */

static inline cs_emit_level_t *cs_emit_top(cs_emitter_t *e) {
  return e->depth > 0 ? &e->stack[e->depth - 1] : NULL;
}

/* Before any value: checks where it goes and writes its container's separator or MARK. False:
 * write nothing (an error, now or earlier). */
static inline bool cs_emit_value_begin(cs_emitter_t *e) {
  if (CS_UNLIKELY(e->error != 0)) return false;
  cs_emit_level_t *lvl = cs_emit_top(e);
  if (lvl == NULL) return CS_EMIT_REQUIRE(e, !e->root_done);
  if (lvl->kind == CS_EMIT_KIND_DICT) return CS_EMIT_REQUIRE(e, lvl->want_value);
  e->ops->item_begin(e, lvl);
  lvl->items++;
  return true;
}

static inline void cs_emit_value_end(cs_emitter_t *e) {
  cs_emit_level_t *lvl = cs_emit_top(e);
  if (lvl == NULL)
    e->root_done = true;
  else
    lvl->want_value = false;
}

static void cs_emit_open(cs_emitter_t *e, cs_emit_kind_t kind) {
  uint64_t value_pos = cs_emit_pos(e); /* before the separator */
  if (!cs_emit_value_begin(e) || !CS_EMIT_REQUIRE(e, e->depth < CS_EMIT_MAX_DEPTH)) return;
  cs_emit_level_t *lvl = &e->stack[e->depth++];
  *lvl = (cs_emit_level_t){.kind = kind};
  if (CS_UNLIKELY(e->cache.state == CS_EMIT_CAPTURE_ARMED)) cs_emit_capture_open(e, value_pos, kind);
  e->ops->open(e, lvl);
}

static void cs_emit_close(cs_emitter_t *e, cs_emit_kind_t kind) {
  if (e->error != 0) return;
  cs_emit_level_t *lvl = cs_emit_top(e);
  if (!CS_EMIT_REQUIRE(e, lvl != NULL && lvl->kind == kind && !lvl->want_value)) return;
  e->ops->close(e, lvl);
  e->depth--;
  cs_emit_value_end(e);
}

/* ------------------------------------------------------------------------------------------------
 * The API (emit.h)
 * ---------------------------------------------------------------------------------------------- */

cs_emitter_t *cs_emitter_create(cs_emit_format_t format, cs_sink_t sink, int pickle_protocol) {
  if (format == CS_EMIT_PICKLE && (pickle_protocol < 2 || pickle_protocol > 4)) return NULL;
  cs_emitter_t *e = calloc(1, sizeof *e);
  if (e == NULL) return NULL;
  e->ops = format == CS_EMIT_PICKLE ? &cs_emit_pickle_ops : &cs_emit_json_ops;
  e->sink = sink;
  e->pickle_protocol = pickle_protocol;
  cs_emit_cache_init(&e->cache);
  e->ops->start(e);
  return e;
}

int cs_emit_finish(cs_emitter_t *e) {
  if (e->error == 0 && CS_EMIT_REQUIRE(e, e->depth == 0 && e->root_done)) {
    e->ops->finish(e);
    cs_emit_flush(e);
  }
  int error = e->error;
  cs_emit_cache_free(&e->cache);
  free(e->memo);
  free(e);
  return error;
}

void cs_emit_dict_begin(cs_emitter_t *e) { cs_emit_open(e, CS_EMIT_KIND_DICT); }
void cs_emit_dict_end(cs_emitter_t *e) { cs_emit_close(e, CS_EMIT_KIND_DICT); }
void cs_emit_list_begin(cs_emitter_t *e) { cs_emit_open(e, CS_EMIT_KIND_LIST); }
void cs_emit_tuple_begin(cs_emitter_t *e) { cs_emit_open(e, CS_EMIT_KIND_TUPLE); }
void cs_emit_tuple_end(cs_emitter_t *e) { cs_emit_close(e, CS_EMIT_KIND_TUPLE); }

void cs_emit_list_end(cs_emitter_t *e) {
  cs_emit_close(e, CS_EMIT_KIND_LIST);
  e->list_end_pos = cs_emit_pos(e);
  if (CS_UNLIKELY(e->cache.state == CS_EMIT_CAPTURE_ON)) cs_emit_capture_list_end(e);
}

void cs_emit_batch_break(cs_emitter_t *e) {
  cs_emit_level_t *lvl = cs_emit_top(e);
  if (e->error == 0 && lvl != NULL) lvl->batch_break = true;
}

void cs_emit_key_n(cs_emitter_t *e, const char *key, size_t len) {
  if (e->error != 0) return;
  cs_emit_level_t *lvl = cs_emit_top(e);
  if (!CS_EMIT_REQUIRE(e, lvl != NULL && lvl->kind == CS_EMIT_KIND_DICT && !lvl->want_value)) return;
  e->ops->item_begin(e, lvl);
  lvl->items++;
  e->ops->key(e, key, len);
  lvl->want_value = true;
}

void cs_emit_int(cs_emitter_t *e, int64_t value) {
  if (!cs_emit_value_begin(e)) return;
  e->ops->int64(e, value);
  cs_emit_value_end(e);
}

void cs_emit_float(cs_emitter_t *e, double value) {
  if (!cs_emit_value_begin(e)) return;
  /* Both formats, not only JSON: snapshot-format.md section 8 wants no NaN/Infinity anywhere, and
   * the two files of one snapshot should hold the same values. */
  if (!isfinite(value)) {
    e->nonfinite++;
    value = 0.0;
  }
  e->ops->float64(e, value);
  cs_emit_value_end(e);
}

void cs_emit_float_keep_infinity(cs_emitter_t *e, double value) {
  if (!isinf(value)) {
    cs_emit_float(e, value);
    return;
  }
  if (!cs_emit_value_begin(e)) return;
  e->ops->float64(e, value);
  cs_emit_value_end(e);
}

void cs_emit_str_n(cs_emitter_t *e, const char *value, size_t len) {
  if (!cs_emit_value_begin(e)) return;
  e->ops->str(e, value, len);
  cs_emit_value_end(e);
}

void cs_emit_bool(cs_emitter_t *e, bool value) {
  if (!cs_emit_value_begin(e)) return;
  e->ops->boolean(e, value);
  cs_emit_value_end(e);
}

void cs_emit_none(cs_emitter_t *e) {
  if (!cs_emit_value_begin(e)) return;
  e->ops->none(e);
  cs_emit_value_end(e);
}

/* ------------------------------------------------------------------------------------------------
 * Shared frame lists
 * ---------------------------------------------------------------------------------------------- */

/* A format without a memo copies the list's bytes written the first time, if they were kept. */
static bool cs_emit_frames_copy(cs_emitter_t *e, uint32_t id) {
  size_t len = 0;
  const unsigned char *bytes = cs_emit_cache_get(&e->cache, id, &len);
  if (bytes == NULL) {
    cs_emit_capture_arm(e, id);
    return false;
  }
  if (!cs_emit_value_begin(e)) return false;
  cs_emit_write(e, bytes, len);
  cs_emit_value_end(e);
  e->list_end_pos = cs_emit_pos(e);
  return true;
}

bool cs_emit_frames_ref(cs_emitter_t *e, uint32_t id) {
  cs_assert(id > 0);
  if (e->error != 0) return false;
  if (e->ops->memo_get == NULL) return cs_emit_frames_copy(e, id);
  if (id >= e->memo_cap || e->memo[id] == 0) return false;
  if (!cs_emit_value_begin(e)) return false;
  e->ops->memo_get(e, e->memo[id] - 1);
  cs_emit_value_end(e);
  return true;
}

/* Ids are dense (intern.h hands them out from 1), so the table is an array indexed by id. */
static bool cs_emit_memo_grow(cs_emitter_t *e, uint32_t id) {
  size_t cap = e->memo_cap > 0 ? e->memo_cap : 1024;
  while (cap <= id) cap *= 2;
  uint32_t *memo = realloc(e->memo, cap * sizeof *memo);
  if (memo == NULL) {
    cs_emit_fail(e, ENOMEM);
    return false;
  }
  memset(memo + e->memo_cap, 0, (cap - e->memo_cap) * sizeof *memo);
  e->memo = memo;
  e->memo_cap = cap;
  return true;
}

void cs_emit_frames_done(cs_emitter_t *e, uint32_t id) {
  cs_assert(id > 0);
  if (e->error != 0) return;
  if (e->ops->memo_put == NULL) {
    cs_emit_capture_done(e, id);
    return;
  }
  /* The memo stores the top of the unpickler's stack: that must be the list that just ended. */
  if (!CS_EMIT_REQUIRE(e, cs_emit_pos(e) == e->list_end_pos)) return;
  if (e->memo_count == UINT32_MAX) return; /* no index left: the list simply stays unshared */
  if (id >= e->memo_cap && !cs_emit_memo_grow(e, id)) return;
  e->ops->memo_put(e, e->memo_count);
  e->memo[id] = ++e->memo_count;
}

/* ------------------------------------------------------------------------------------------------
 * Counters
 * ---------------------------------------------------------------------------------------------- */

uint64_t cs_emit_bytes(const cs_emitter_t *e) { return e->error != 0 ? e->flushed : cs_emit_pos(e); }

uint64_t cs_emit_nonfinite(const cs_emitter_t *e) { return e->nonfinite; }

void cs_emit_set_cache_limit(cs_emitter_t *e, size_t bytes) { cs_emit_cache_set_limit(&e->cache, bytes); }

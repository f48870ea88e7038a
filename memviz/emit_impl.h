/* SPDX-License-Identifier: Apache-2.0 */
/* The inside of cs_emitter_t, shared by emit.c (nesting, sticky error, byte count, memo table) and
 * the two formats (emit_json.c, emit_pickle.c). Not part of the emit.h contract: include it only
 * from those three files.
 *
 * emit.c checks the nesting and the sticky error, then calls the format's ops. The ops write into
 * the emitter's own buffer (cs_emit_reserve/cs_emit_commit for short tokens, cs_emit_write for
 * runs of any length), which goes to the sink in CS_EMIT_BUFSIZE chunks. After a sink failure the
 * buffer keeps being filled and dropped, so no later byte reaches the sink. */
#ifndef CS_EMIT_IMPL_H
#define CS_EMIT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cs_compiler.h"
#include "common/cs_utf8.h"
#include "memviz/emit.h"
#include "memviz/emit_cache.h"

enum {
  /* bytes. The same in every build: where a pickle tuple can drop its MARK depends on it
   * (emit_pickle.c), and golden files must not change with CS_DEBUG. Small enough that a huge
   * snapshot still streams; the fd sink behind it batches further. */
  CS_EMIT_BUFSIZE = 4096,
  /* bytes; a token reserves at most this many more than it writes (emit_pickle.c counts on it
   * to keep a short tuple's MARK in the buffer) */
  CS_EMIT_RESERVE_MAX = 64,
};

typedef enum cs_emit_kind_e {
  CS_EMIT_KIND_DICT = 0,
  CS_EMIT_KIND_LIST = 1,
  CS_EMIT_KIND_TUPLE = 2,
} cs_emit_kind_t;

/* One open container. */
typedef struct cs_emit_level_s {
  cs_emit_kind_t kind;
  bool want_value;   /* dict: a key was written, its value comes next */
  uint64_t items;    /* items (dict: pairs) begun so far */
  uint64_t mark_pos; /* pickle tuple: stream offset of its MARK */
  bool batch_break;  /* pickle: the next item begins a new batch (cs_emit_batch_break) */
} cs_emit_level_t;

/* What a format writes. emit.c has already checked nesting and the sticky error. */
typedef struct cs_emit_ops_s {
  void (*start)(cs_emitter_t *e);  /* at create: the header, if any */
  void (*finish)(cs_emitter_t *e); /* after the root value: the trailer */
  void (*open)(cs_emitter_t *e, cs_emit_level_t *lvl);  /* lvl is already pushed */
  void (*close)(cs_emitter_t *e, cs_emit_level_t *lvl); /* lvl is still pushed */
  /* Before each list/tuple item and before each dict key. lvl->items counts the items before this
   * one. Nothing is written after an item: pickle's frames_done must find the frame list on top of
   * the stack right after it ends, so a full batch is closed when the next item begins. */
  void (*item_begin)(cs_emitter_t *e, cs_emit_level_t *lvl);
  void (*key)(cs_emitter_t *e, const char *key, size_t len);
  void (*int64)(cs_emitter_t *e, int64_t value);
  void (*float64)(cs_emitter_t *e, double value); /* pre: not NaN */
  void (*str)(cs_emitter_t *e, const char *value, size_t len);
  void (*boolean)(cs_emitter_t *e, bool value);
  void (*none)(cs_emitter_t *e);
  /* Memo of frame lists; NULL for formats that write every list out (JSON). */
  void (*memo_put)(cs_emitter_t *e, uint32_t index); /* memoize the value just written */
  void (*memo_get)(cs_emitter_t *e, uint32_t index); /* write a reference to it */
} cs_emit_ops_t;

extern const cs_emit_ops_t cs_emit_json_ops;
extern const cs_emit_ops_t cs_emit_pickle_ops;

struct cs_emitter_s {
  const cs_emit_ops_t *ops;
  cs_sink_t sink;
  int error;             /* first failure (an errno value), sticky; 0 = none */
  int pickle_protocol;   /* the PROTO byte (2..4) */
  int depth;             /* open containers, 0..CS_EMIT_MAX_DEPTH */
  bool root_done;        /* the one top-level value has been written */
  uint64_t flushed;      /* bytes accepted by the sink */
  uint64_t nonfinite;    /* non-finite doubles written as 0 */
  bool keep_surrogates;  /* cs_emit_keep_surrogates */
  uint64_t list_end_pos; /* stream offset just after the last list ended (frames_done check) */
  uint32_t *memo;        /* frame list id -> memo index + 1, 0 = not memoized */
  size_t memo_cap;       /* entries in memo */
  uint32_t memo_count;   /* memo indexes handed out */
  size_t len;            /* bytes waiting in buf */
  cs_emit_cache_t cache; /* frame list bytes, for formats without a memo (emit_cache.h) */
  cs_emit_level_t stack[CS_EMIT_MAX_DEPTH];
  unsigned char buf[CS_EMIT_BUFSIZE];
};

/* ------------------------------------------------------------------------------------------------
 * The output buffer
 * ---------------------------------------------------------------------------------------------- */

/* Hand what is buffered to the sink (dropped once there was an error). */
void cs_emit_flush(cs_emitter_t *e);

/* Record a failure (an errno value); the first one sticks. */
void cs_emit_fail(cs_emitter_t *e, int error);

/* Append len bytes, any length: fills the buffer up before each flush. */
void cs_emit_write(cs_emitter_t *e, const void *data, size_t len);

/* Room for n <= CS_EMIT_BUFSIZE bytes at the returned pointer; cs_emit_commit what was used. */
static inline unsigned char *cs_emit_reserve(cs_emitter_t *e, size_t n) {
  if (CS_UNLIKELY(CS_EMIT_BUFSIZE - e->len < n)) cs_emit_flush(e);
  return e->buf + e->len;
}

static inline void cs_emit_commit(cs_emitter_t *e, size_t n) { e->len += n; }

static inline void cs_emit_byte(cs_emitter_t *e, unsigned char c) {
  *cs_emit_reserve(e, 1) = c;
  e->len++;
}

/* Stream offset of the next byte. */
static inline uint64_t cs_emit_pos(const cs_emitter_t *e) { return e->flushed + e->len; }

/* ------------------------------------------------------------------------------------------------
 * The frame list cache (emit_cache.c; formats without a memo)
 * ---------------------------------------------------------------------------------------------- */

void cs_emit_cache_init(cs_emit_cache_t *c);
void cs_emit_cache_free(cs_emit_cache_t *c);
void cs_emit_cache_set_limit(cs_emit_cache_t *c, size_t limit);

/* The bytes of frame list id and their length, or NULL: not cached, or a capture is under way. */
const unsigned char *cs_emit_cache_get(const cs_emit_cache_t *c, uint32_t id, size_t *len);

/* A frames_ref of id missed: capture the list that is about to open at the current position. */
void cs_emit_capture_arm(cs_emitter_t *e, uint32_t id);

/* A container opened while armed, as the value that began at stream offset value_pos. lvl is
 * pushed, its separator written, its opening byte not yet. */
void cs_emit_capture_open(cs_emitter_t *e, uint64_t value_pos, cs_emit_kind_t kind);

/* The buffer is about to go to the sink while a list is captured. */
void cs_emit_capture_flush(cs_emitter_t *e);

/* A list ended (and was popped) while a list is captured. */
void cs_emit_capture_list_end(cs_emitter_t *e);

/* frames_done(id): keep the captured list if it is id's and nothing followed it; stop capturing. */
void cs_emit_capture_done(cs_emitter_t *e, uint32_t id);

/* ------------------------------------------------------------------------------------------------
 * UTF-8 (both formats replace invalid input the same way, so their strings stay equal)
 * ---------------------------------------------------------------------------------------------- */

/* Write s[0..n) with every invalid subpart replaced by U+FFFD. */
void cs_emit_utf8_fixed(cs_emitter_t *e, const unsigned char *s, size_t n);

#endif

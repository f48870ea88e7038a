/* SPDX-License-Identifier: Apache-2.0 */
/* Pickle bytes for the emitter: only opcodes of the viewer's unpickler (snapshot-format.md section
 * 3.3), which Python's pickle.loads reads too.
 *
 * Containers start empty (EMPTY_DICT, EMPTY_LIST) and are filled in MARK ... SETITEMS/APPENDS
 * batches of at most CS_EMIT_BATCH items (dict: pairs), as CPython's pickler does: the viewer
 * spreads a batch into one push(...) call, which overflows the JS stack at around 180,000 items.
 * Integers take the smallest exact opcode. Frame lists are shared through the memo. No FRAME
 * opcode: it only helps readers that prefetch, and the stream is valid without it. */
#include <errno.h>
#include <string.h>

#include "memviz/emit_impl.h"
#include "memviz/pickle_ops.h"

/* bytes; a tuple whose items take at most this many bytes drops its MARK (see cs_pickle_close) */
enum { CS_PK_TUPLE_INLINE = 256 };

static void cs_pickle_put_le32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

/* ------------------------------------------------------------------------------------------------
 * Scalars
 * ---------------------------------------------------------------------------------------------- */

static void cs_pickle_int(cs_emitter_t *e, int64_t value) {
  unsigned char *p = cs_emit_reserve(e, 10);
  if (value >= 0 && value <= UINT8_MAX) {
    p[0] = CS_OP_BININT1;
    p[1] = (unsigned char)value;
    cs_emit_commit(e, 2);
  } else if (value >= 0 && value <= UINT16_MAX) {
    p[0] = CS_OP_BININT2;
    p[1] = (unsigned char)value;
    p[2] = (unsigned char)(value >> 8);
    cs_emit_commit(e, 3);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    p[0] = CS_OP_BININT; /* signed: covers the negatives down to INT32_MIN */
    cs_pickle_put_le32(p + 1, (uint32_t)value);
    cs_emit_commit(e, 5);
  } else {
    /* LONG1: two's complement, little-endian, as few bytes as keep the sign (Python's
     * encode_long). Outside int32 that is 5 to 8 bytes. */
    size_t n = 5;
    while (n < 8 && (value < -(INT64_C(1) << (8 * n - 1)) || value >= (INT64_C(1) << (8 * n - 1)))) n++;
    p[0] = CS_OP_LONG1;
    p[1] = (unsigned char)n;
    uint64_t bits = (uint64_t)value;
    for (size_t i = 0; i < n; i++) p[2 + i] = (unsigned char)(bits >> (8 * i));
    cs_emit_commit(e, 2 + n);
  }
}

static void cs_pickle_float(cs_emitter_t *e, double value) {
  uint64_t bits;
  memcpy(&bits, &value, sizeof bits);
  unsigned char *p = cs_emit_reserve(e, 9);
  p[0] = CS_OP_BINFLOAT; /* big-endian */
  for (size_t i = 0; i < 8; i++) p[1 + i] = (unsigned char)(bits >> (56 - 8 * i));
  cs_emit_commit(e, 9);
}

/* The length prefix counts the bytes after U+FFFD replacement, so invalid UTF-8 costs a first
 * pass; valid strings (all of them, in practice) are copied as they are. */
static void cs_pickle_str(cs_emitter_t *e, const char *value, size_t len) {
  const unsigned char *s = (const unsigned char *)value;
  bool valid;
  size_t out = cs_utf8_fixed_len(s, len, e->keep_surrogates, &valid);
  if (out > UINT32_MAX) { /* would need BINUNICODE8, which the viewer lacks */
    cs_emit_fail(e, EOVERFLOW);
    return;
  }
  if (valid && len <= UINT8_MAX) { /* the usual case: one copy */
    unsigned char *p = cs_emit_reserve(e, 2 + len);
    p[0] = CS_OP_SHORT_BINUNICODE;
    p[1] = (unsigned char)len;
    memcpy(p + 2, s, len);
    cs_emit_commit(e, 2 + len);
    return;
  }
  unsigned char *p = cs_emit_reserve(e, 5);
  if (out <= UINT8_MAX) {
    p[0] = CS_OP_SHORT_BINUNICODE;
    p[1] = (unsigned char)out;
    cs_emit_commit(e, 2);
  } else {
    p[0] = CS_OP_BINUNICODE;
    cs_pickle_put_le32(p + 1, (uint32_t)out);
    cs_emit_commit(e, 5);
  }
  if (valid)
    cs_emit_write(e, s, len);
  else
    cs_emit_utf8_fixed(e, s, len);
}

static void cs_pickle_bool(cs_emitter_t *e, bool value) {
  cs_emit_byte(e, value ? CS_OP_NEWTRUE : CS_OP_NEWFALSE);
}

static void cs_pickle_none(cs_emitter_t *e) { cs_emit_byte(e, CS_OP_NONE); }

/* ------------------------------------------------------------------------------------------------
 * Containers
 * ---------------------------------------------------------------------------------------------- */

static unsigned char cs_pickle_batch_end(const cs_emit_level_t *lvl) {
  return lvl->kind == CS_EMIT_KIND_DICT ? CS_OP_SETITEMS : CS_OP_APPENDS;
}

static void cs_pickle_open(cs_emitter_t *e, cs_emit_level_t *lvl) {
  switch (lvl->kind) {
  case CS_EMIT_KIND_DICT: cs_emit_byte(e, CS_OP_EMPTY_DICT); break;
  case CS_EMIT_KIND_LIST: cs_emit_byte(e, CS_OP_EMPTY_LIST); break;
  case CS_EMIT_KIND_TUPLE:
    /* Room for the MARK and items of up to CS_PK_TUPLE_INLINE bytes, so a short tuple's MARK is
     * still in the buffer at its end wherever the tuple falls in the stream. */
    cs_emit_reserve(e, 1 + CS_PK_TUPLE_INLINE + CS_EMIT_RESERVE_MAX);
    lvl->mark_pos = cs_emit_pos(e);
    cs_emit_byte(e, CS_OP_MARK);
    break;
  }
}

/* Batches close lazily, when the next one begins or at the end: nothing may follow an item,
 * because frames_done memoizes the top of the stack right after a frame list ends. */
static void cs_pickle_item_begin(cs_emitter_t *e, cs_emit_level_t *lvl) {
  bool broken = lvl->batch_break && lvl->items > 0;
  lvl->batch_break = false;
  if (lvl->kind == CS_EMIT_KIND_TUPLE || (lvl->items % CS_EMIT_BATCH != 0 && !broken)) return;
  unsigned char *p = cs_emit_reserve(e, 2);
  size_t n = 0;
  if (lvl->items > 0) p[n++] = cs_pickle_batch_end(lvl);
  p[n++] = CS_OP_MARK;
  cs_emit_commit(e, n);
}

/* A tuple is MARK items TUPLE, unless it has at most 3 items and its MARK is still buffered: then
 * the MARK is taken out again and EMPTY_TUPLE/TUPLE1/2/3 ends it, as CPython writes short tuples
 * (pool ids are TUPLE2). The buffer size is the same in every build, so the bytes are too. */
static void cs_pickle_close(cs_emitter_t *e, cs_emit_level_t *lvl) {
  if (lvl->kind != CS_EMIT_KIND_TUPLE) {
    if (lvl->items > 0) cs_emit_byte(e, cs_pickle_batch_end(lvl));
    return;
  }
  uint64_t items_len = cs_emit_pos(e) - lvl->mark_pos - 1;
  if (lvl->items <= 3 && items_len <= CS_PK_TUPLE_INLINE && lvl->mark_pos >= e->flushed &&
      lvl->mark_pos - e->flushed < e->len) {
    size_t at = (size_t)(lvl->mark_pos - e->flushed);
    memmove(e->buf + at, e->buf + at + 1, e->len - at - 1);
    e->len--;
    cs_emit_byte(e, lvl->items == 0 ? CS_OP_EMPTY_TUPLE
                                    : (unsigned char)(CS_OP_TUPLE1 + lvl->items - 1));
  } else {
    cs_emit_byte(e, CS_OP_TUPLE);
  }
}

static void cs_pickle_memo_op(cs_emitter_t *e, uint32_t index, unsigned char short_op,
                              unsigned char long_op) {
  unsigned char *p = cs_emit_reserve(e, 5);
  if (index <= UINT8_MAX) {
    p[0] = short_op;
    p[1] = (unsigned char)index;
    cs_emit_commit(e, 2);
  } else {
    p[0] = long_op;
    cs_pickle_put_le32(p + 1, index);
    cs_emit_commit(e, 5);
  }
}

static void cs_pickle_memo_put(cs_emitter_t *e, uint32_t index) {
  cs_pickle_memo_op(e, index, CS_OP_BINPUT, CS_OP_LONG_BINPUT);
}

static void cs_pickle_memo_get(cs_emitter_t *e, uint32_t index) {
  cs_pickle_memo_op(e, index, CS_OP_BINGET, CS_OP_LONG_BINGET);
}

/* ------------------------------------------------------------------------------------------------
 * The ops
 * ---------------------------------------------------------------------------------------------- */

/* Protocols 2 to 4 only: the viewer refuses 5 (and Python's default is 5 from 3.14 on). The
 * opcodes used exist in protocol 2, and neither reader checks them against the PROTO byte. */
static void cs_pickle_start(cs_emitter_t *e) {
  unsigned char *p = cs_emit_reserve(e, 2);
  p[0] = CS_OP_PROTO;
  p[1] = (unsigned char)e->pickle_protocol;
  cs_emit_commit(e, 2);
}

static void cs_pickle_finish(cs_emitter_t *e) { cs_emit_byte(e, CS_OP_STOP); }

const cs_emit_ops_t cs_emit_pickle_ops = {
    .start = cs_pickle_start,
    .finish = cs_pickle_finish,
    .open = cs_pickle_open,
    .close = cs_pickle_close,
    .item_begin = cs_pickle_item_begin,
    .key = cs_pickle_str,
    .int64 = cs_pickle_int,
    .float64 = cs_pickle_float,
    .str = cs_pickle_str,
    .boolean = cs_pickle_bool,
    .none = cs_pickle_none,
    .memo_put = cs_pickle_memo_put,
    .memo_get = cs_pickle_memo_get,
};

/* SPDX-License-Identifier: Apache-2.0 */
/* The pickle opcodes cudasnap writes and reads (protocols 2 to 5, the subset PyTorch's snapshots
 * and cudasnap's own writer use): for the writer (memviz/emit_pickle.c), the unpickler and the memo
 * scan that runs before it (reader/unpickle.c, reader/memo_refs.c), and the little-endian read of
 * their arguments. */
#ifndef CS_PICKLE_OPS_H
#define CS_PICKLE_OPS_H

#include <stdint.h>

enum {
  CS_OP_MARK = '(',
  CS_OP_STOP = '.',
  CS_OP_BINFLOAT = 'G',
  CS_OP_BININT = 'J',
  CS_OP_BININT1 = 'K',
  CS_OP_BININT2 = 'M',
  CS_OP_NONE = 'N',
  CS_OP_BINUNICODE = 'X',
  CS_OP_APPEND = 'a',
  CS_OP_DICT = 'd',
  CS_OP_APPENDS = 'e',
  CS_OP_BINGET = 'h',
  CS_OP_LONG_BINGET = 'j',
  CS_OP_LIST = 'l',
  CS_OP_BINPUT = 'q',
  CS_OP_LONG_BINPUT = 'r',
  CS_OP_SETITEM = 's',
  CS_OP_TUPLE = 't',
  CS_OP_SETITEMS = 'u',
  CS_OP_EMPTY_DICT = '}',
  CS_OP_EMPTY_LIST = ']',
  CS_OP_EMPTY_TUPLE = ')',
  CS_OP_PROTO = 0x80,
  CS_OP_TUPLE1 = 0x85,
  CS_OP_TUPLE2 = 0x86,
  CS_OP_TUPLE3 = 0x87,
  CS_OP_NEWTRUE = 0x88,
  CS_OP_NEWFALSE = 0x89,
  CS_OP_LONG1 = 0x8a,
  CS_OP_SHORT_BINUNICODE = 0x8c,
  CS_OP_MEMOIZE = 0x94,
  CS_OP_FRAME = 0x95,
};

static inline uint32_t cs_pickle_read_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif

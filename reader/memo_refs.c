/* SPDX-License-Identifier: Apache-2.0 */
/* The memo indices a pickle reads back (contract in reader/memo_refs.h). */
#include "reader/memo_refs.h"

#include <stdlib.h>
#include <string.h>

#include "model/region.h"
#include "memviz/pickle_ops.h"

/* Sets bit idx, growing the words to hold it. False without host memory. */
static bool cs_memo_refs_mark(cs_memo_refs_t *r, size_t idx) {
  size_t w = idx / 64;
  if (w >= r->capwords) {
    size_t ncap = r->capwords ? r->capwords : 64;
    while (ncap <= w) ncap *= 2;
    uint64_t *bits = cs_region_resize(r->bits, r->capwords * sizeof *bits, ncap * sizeof *bits);
    if (bits == NULL) return false;
    memset(bits + r->capwords, 0, (ncap - r->capwords) * sizeof *bits);
    r->bits = bits;
    r->capwords = ncap;
  }
  if (w >= r->nwords) r->nwords = w + 1;
  r->bits[w] |= (uint64_t)1 << (idx % 64);
  return true;
}

bool cs_memo_refs_scan(cs_memo_refs_t *r, const uint8_t *data, size_t len, size_t slack) {
  memset(r, 0, sizeof *r);
  size_t puts = 0, pos = 0;
  bool ok = true;
  while (ok && pos < len) {
    uint8_t op = data[pos++];
    size_t arg = 0; /* argument bytes after the opcode */
    size_t get = SIZE_MAX;
    switch (op) {
    case '(': case 'a': case 'd': case '}': case 'e': case 'l': case ']': case ')': case 's': case 't':
    case 'u': case 'N': case 0x85: case 0x86: case 0x87: case 0x88: case 0x89:
      break;
    case CS_OP_STOP:
      pos = len;
      continue;
    case CS_OP_MEMOIZE:
      puts++;
      break;
    case CS_OP_PROTO: case CS_OP_BININT1:
      arg = 1;
      break;
    case CS_OP_BININT2:
      arg = 2;
      break;
    case CS_OP_BININT:
      arg = 4;
      break;
    case CS_OP_FRAME: case CS_OP_BINFLOAT:
      arg = 8;
      break;
    case CS_OP_LONG1: case CS_OP_SHORT_BINUNICODE:
      arg = pos < len ? 1 + (size_t)data[pos] : 1;
      break;
    case CS_OP_BINUNICODE:
      arg = len - pos >= 4 ? 4 + (size_t)cs_pickle_read_le32(data + pos) : 4;
      break;
    case CS_OP_BINPUT:
      arg = 1;
      puts++;
      break;
    case CS_OP_LONG_BINPUT:
      arg = 4;
      puts++;
      break;
    case CS_OP_BINGET:
      if (pos < len) get = data[pos];
      arg = 1;
      break;
    case CS_OP_LONG_BINGET:
      if (len - pos >= 4) get = cs_pickle_read_le32(data + pos);
      arg = 4;
      break;
    default:
      pos = len; /* the unpickler refuses this opcode: nothing after it is read */
      continue;
    }
    if (len - pos < arg) break; /* truncated: the unpickler stops here too */
    pos += arg;
    /* Puts before this GET could have stored at most index puts + slack (the unpickler's bound). */
    if (get != SIZE_MAX && get <= puts + slack) ok = cs_memo_refs_mark(r, get);
  }
  if (ok && r->nwords > 0) {
    r->before = cs_region_resize(NULL, 0, r->nwords * sizeof *r->before);
    ok = r->before != NULL;
  }
  if (!ok) {
    cs_memo_refs_free(r);
    return false;
  }
  size_t count = 0;
  for (size_t w = 0; w < r->nwords; w++) {
    r->before[w] = count;
    count += (size_t)__builtin_popcountll(r->bits[w]);
  }
  r->count = count;
  return true;
}

void cs_memo_refs_free(cs_memo_refs_t *r) {
  cs_region_free(r->bits, r->capwords * sizeof *r->bits);
  cs_region_free(r->before, r->nwords * sizeof *r->before);
  memset(r, 0, sizeof *r);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to reader/: which memo indices of a pickle are ever read back, found by a scan of its
 * opcodes before the unpickler runs, so that the unpickler keeps only those.
 *
 * Python's pickler memoizes every string, dict, list and tuple it writes, and a snapshot reads back
 * few of them (the shared frame lists, the strings of interned keys): the 1,000,000-event pickle in
 * PyTorch's shape of bench/read.sh memoizes 7,729,156 values and reads back 400 distinct ones. A
 * memo of every index cost 60 MB of fresh pages there, and a link per event dict memoized while
 * open. With the scan, the memo holds
 * one word per index some GET names, in index order (cs_memo_refs_slot), and a put of any other
 * index is only counted.
 *
 * The scan reads what the unpickler will: opcodes and the lengths of their arguments, up to STOP,
 * the end of the data or the first opcode the unpickler refuses (it stops there too, so nothing
 * after it is ever read back). A GET of an index no put could have stored by then (above the puts
 * before it plus the unpickler's slack) is left out: the unpickler refuses it as never stored, as it
 * would anyway. So the table is at most one bit per put, plus the slack. */
#ifndef CS_READER_MEMO_REFS_H
#define CS_READER_MEMO_REFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cs_memo_refs_s {
  uint64_t *bits;   /* bit i of word i / 64: a GET names index i */
  size_t *before;   /* per word: the bits set in the words before it (NULL until the scan ends) */
  size_t nwords;    /* words of bits in use (and of before) */
  size_t capwords;  /* words of bits allocated */
  size_t count;     /* bits set: the memo's size */
} cs_memo_refs_t;

/* Scan data[0..len). slack: how far a put's index may run ahead of the puts before it (the
 * unpickler's CS_UNPICKLE_MEMO_SLACK). False without host memory (*refs then holds nothing). */
bool cs_memo_refs_scan(cs_memo_refs_t *refs, const uint8_t *data, size_t len, size_t slack);

void cs_memo_refs_free(cs_memo_refs_t *refs);

/* The memo slot of index idx (0 .. count - 1, in index order), or SIZE_MAX when no GET names it. */
static inline size_t cs_memo_refs_slot(const cs_memo_refs_t *refs, size_t idx) {
  size_t w = idx / 64;
  if (w >= refs->nwords) return SIZE_MAX;
  uint64_t bit = (uint64_t)1 << (idx % 64);
  if ((refs->bits[w] & bit) == 0) return SIZE_MAX;
  return refs->before[w] + (size_t)__builtin_popcountll(refs->bits[w] & (bit - 1));
}

#endif

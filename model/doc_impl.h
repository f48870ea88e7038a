/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to model/: the doc's storage, shared by its readers (doc.c) and its builder (build.c).
 *
 * A container at arena offset o is a header word, its items, then (dicts only) its keys packed two
 * string ids to a word:
 *   words[o]           count | depth << 32 | tag << 48
 *   words[o+1 .. +n]   the items (dict: the members' values)
 *   then ceil(n/2)     words of 32-bit key ids (dicts)
 * Offset 0 is never a container. Containers are unique by content: `cons` is an open-addressing set
 * of their offsets (with their hashes), hashed over their words (keyed: model/hash.h), so an equal container is found
 * before a second copy is kept. Strings are unique too: `strs` maps their bytes to ids. */
#ifndef CS_MODEL_DOC_IMPL_H
#define CS_MODEL_DOC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"
#include "model/hash.h"

struct cs_doc_s {
  uint64_t *words; /* the container arena */
  size_t nwords, capwords;
  int64_t *ints; /* integers beyond the 61 bits a value holds */
  size_t nints, capints;
  double *floats;
  size_t nfloats, capfloats;

  char *chars; /* every string's bytes, each followed by a NUL */
  size_t nchars, capchars;
  uint64_t *str_off; /* per string id: offset in chars */
  uint32_t *str_len;
  size_t nstrs, capstrs, capstr_len; /* capstr_len: str_len's, equal to capstrs but while growing */
  uint32_t *str_slots; /* id + 1, 0 = empty; a power of two, kept above twice nstrs */
  size_t nstr_slots;

  /* Containers by content: hash >> 32 in the high half, the offset in the low half; 0 = empty. A
   * power of two, above twice ncons. Keeping the hash here lets a probe and a rehash skip the
   * arena (a cache miss each) for every container but an equal one. */
  uint64_t *cons_slots;
  size_t ncons_slots, ncons;

  cs_val_t root;
  cs_hash_key_t hash_key; /* every table above is keyed with it (model/hash.h) */

  _Atomic(void *) kept;         /* cs_doc_keep's value, NULL until set */
  void (*kept_free)(void *);    /* written once, by the cs_doc_keep that set `kept` */
};

static inline uint64_t cs_doc_header(const cs_doc_t *d, cs_val_t v) {
  return d->words[cs_val_offset(v)];
}
static inline size_t cs_doc_header_count(uint64_t h) { return (size_t)(h & 0xffffffffu); }
static inline unsigned cs_doc_header_depth(uint64_t h) { return (unsigned)((h >> 32) & 0xffffu); }
static inline unsigned cs_doc_header_tag(uint64_t h) { return (unsigned)(h >> 48); }
static inline uint64_t cs_doc_make_header(size_t count, unsigned depth, unsigned tag) {
  return (uint64_t)count | (uint64_t)depth << 32 | (uint64_t)tag << 48;
}
/* Words a container of n items takes, header included. */
static inline size_t cs_doc_container_words(size_t n, unsigned tag) {
  return 1 + n + (tag == CS_TAG_DICT ? (n + 1) / 2 : 0);
}

/* 64-bit mixing for tables keyed by the model's own numbers (a multiply-xorshift finalizer over
 * h and a word of the doc's key, so that a file cannot aim at a slot: model/hash.h). */
static inline uint64_t cs_doc_mix(uint64_t h, const cs_doc_t *d) {
  h ^= d->hash_key.k0;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

/* A string's hash in this doc's tables. */
static inline uint64_t cs_doc_hash_str(const cs_doc_t *d, const void *p, size_t n) {
  return cs_hash_bytes(&d->hash_key, p, n);
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Keyed hashing for the model's tables (strings by content, containers by content, key ids).
 *
 * The snapshot files the tool reads are untrusted, and an unkeyed hash lets a file choose strings or
 * containers that all land in one slot of an open-addressing table, turning every insertion into a
 * scan of the others (quadratic time: issue 33). These are SipHash-1-3 (Aumasson and Bernstein's
 * SipHash with one compression and three finalization rounds, the variant CPython and Rust use for
 * their hash tables), keyed per model with 128 random bits from the kernel: without the key, which
 * never leaves the process, no file can aim at a slot. */
#ifndef CS_MODEL_HASH_H
#define CS_MODEL_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct cs_hash_key_s {
  uint64_t k0, k1;
} cs_hash_key_t;

/* A fresh key: getrandom(2), else /dev/urandom, else the clock, the pid and an address (a key the
 * file cannot know in advance all the same). Never fails. */
void cs_hash_key_random(cs_hash_key_t *key);

/* SipHash-1-3 of n bytes. */
uint64_t cs_hash_bytes(const cs_hash_key_t *key, const void *p, size_t n);

/* SipHash-1-3 of n 64-bit words: the same value as cs_hash_bytes over their bytes on a
 * little-endian machine, without the tail handling. */
uint64_t cs_hash_words(const cs_hash_key_t *key, const uint64_t *w, size_t n);

#endif

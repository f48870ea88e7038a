/* SPDX-License-Identifier: Apache-2.0 */
/* Shell globs over function names (CUDASNAP_ALLOCATOR_FRAMES, --allocator-frames, a snapshot's
 * cudasnap.allocator_frames): `*` any run of bytes, `?` one byte, `[...]` one byte of a set
 * (`a-z` ranges, `!` or `^` first to negate, `]` first taken literally), `\` makes the next byte
 * literal; everything else stands for itself. As fnmatch(3) with no flags in the C locale matches
 * (tests/unit/test_glob.c holds the two to the same answers), but in time linear in the name:
 * fnmatch backtracks once per `*`, so a glob like `*a*a*a*b` takes a power of the name's length,
 * and a snapshot's globs are the input of whoever wrote the file. A glob is compiled once into
 * a bit-parallel automaton (one bit per position, two words) and then costs two words of work per
 * byte of the name.
 *
 * Accepted: 1 to CS_GLOB_MAX_BYTES bytes, at most CS_GLOB_MAX_POSITIONS bytes or sets besides the
 * `*`s, no control characters, every `[` closed, no trailing `\`, no character classes
 * (`[:alpha:]`, `[=a=]`, `[.a.]`). */
#ifndef CS_GLOB_H
#define CS_GLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
  CS_GLOB_MAX_BYTES = 255,
  CS_GLOB_MAX_POSITIONS = 127, /* its states, one more, fit two 64-bit words */
};

typedef struct cs_glob_s {
  uint32_t positions; /* bytes and sets the name must match, in order */
  uint64_t loops[2];  /* bit j: a `*` stands before position j (j == positions: at the end) */
  uint64_t bytes[256][2]; /* bit j of bytes[c]: position j matches the byte c */
} cs_glob_t;

/* NULL when glob[0..len) is a glob this file accepts, else why not ("is empty", ...), for a
 * one-line error. */
const char *cs_glob_check(const char *glob, size_t len);

/* Compile glob[0..len) into g. False (g unchanged) when cs_glob_check refuses it. */
bool cs_glob_compile(cs_glob_t *g, const char *glob, size_t len);

/* Whether the whole of name[0..len) matches. */
bool cs_glob_match(const cs_glob_t *g, const char *name, size_t len);

/* The items of a comma-separated list, spaces around each one trimmed: calls each(ctx, item,
 * len) in order and stops at the first that returns false. An empty item (",,", a trailing ",")
 * is passed as it is (len 0), for the caller to refuse. Returns false when `each` stopped it. */
bool cs_glob_list_each(const char *text, bool (*each)(void *ctx, const char *item, size_t len), void *ctx);

#endif

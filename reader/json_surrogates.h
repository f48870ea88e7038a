/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to reader/: JSON strings with lone surrogate escapes, kept exact.
 *
 * JSON.parse keeps "\ud800" as the lone UTF-16 unit it names; YAJL decodes a lone high surrogate to
 * "?" and a lone low one to its 3-byte form, and pairs a high one with whatever escape follows. The
 * JSON reader therefore scans every chunk before YAJL parses it, counts the string tokens (values
 * and keys alike, in file order, as YAJL hands them over) and decodes itself each one that holds a
 * lone surrogate escape, into generalized UTF-8 (a surrogate as the 3 bytes ED A0-BF 80-BF that
 * UTF-8 forbids, as CPython's "surrogatepass" writes it); the reader then takes those bytes instead
 * of YAJL's. The model keeps them as they are, JSON output writes them as the same \uXXXX escape
 * and pickle output writes the bytes (CPython's pickle does the same; docs/tool.md). A string
 * without a lone surrogate costs a scan for '"' and '\\' and nothing more. */
#ifndef CS_READER_JSON_SURROGATES_H
#define CS_READER_JSON_SURROGATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cs_json_sur_s {
  bool in_str, esc, has_u; /* inside a string; after a backslash; a \u escape seen in it */
  uint64_t scanned;        /* string tokens the scan has finished */
  uint64_t taken;          /* string tokens the parser has asked about */
  uint8_t *carry;          /* the current string's raw bytes from earlier chunks */
  size_t ncarry, capcarry;
  struct cs_json_sur_item_s {
    uint64_t token;
    size_t at, len; /* in bytes */
  } *items;         /* decoded strings waiting for their token, in order */
  size_t first, nitems, capitems;
  uint8_t *bytes;
  size_t nbytes, capbytes;
} cs_json_sur_t;

void cs_json_sur_free(cs_json_sur_t *s);

/* Scans the next n bytes of the file. False without host memory. */
bool cs_json_sur_scan(cs_json_sur_t *s, const uint8_t *p, size_t n);

/* For the next string token the parser hands over: true with the bytes to use instead of its own
 * (valid until the next call) when the token holds a lone surrogate escape. */
bool cs_json_sur_take(cs_json_sur_t *s, const char **bytes, size_t *len);

#endif

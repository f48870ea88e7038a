/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 as the viewer decodes it: well-formed sequences pass, every maximal invalid subpart
 * becomes one U+FFFD (what the WHATWG TextDecoder and Python's errors="replace" do). The snapshot
 * writers repair strings this way and the reader reads pickled strings this way, so both sides
 * agree with the viewer byte for byte. */
#ifndef CS_UTF8_H
#define CS_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The replacement character U+FFFD. */
#define CS_UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* Is there a well-formed UTF-8 sequence (RFC 3629: no overlongs, surrogates or code points above
 * U+10FFFF) at s, pre: n >= 1 and s[0] >= 0x80? Sets *len to its length, or when it is not, to
 * the length of the maximal subpart to replace by one U+FFFD (Unicode 15, section 3.9, "U+FFFD
 * Substitution of Maximal Subparts"; what Python's bytes.decode(errors="replace") and the WHATWG
 * decoder do), at least 1. */
static inline bool cs_utf8_seq(const unsigned char *s, size_t n, size_t *len) {
  unsigned char c = s[0], lo = 0x80, hi = 0xBF;
  size_t need;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0; /* overlong */
    if (c == 0xED) hi = 0x9F; /* surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90; /* overlong */
    if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
  } else {
    *len = 1;
    return false;
  }
  size_t i = 1;
  if (n > 1 && s[1] >= lo && s[1] <= hi) {
    i = 2;
    while (i < need && i < n && s[i] >= 0x80 && s[i] <= 0xBF) i++;
  }
  *len = i;
  return i == need;
}

/* A surrogate (U+D800..U+DFFF) in generalized UTF-8 at s: ED A0-BF 80-BF, which UTF-8 forbids but
 * CPython's pickle writes for a str with a lone surrogate ("surrogatepass"), and which the tool's
 * readers keep for a JSON "\ud800" (reader/json_surrogates.h, docs/tool.md). */
static inline bool cs_utf8_surrogate(const unsigned char *s, size_t n) {
  return n >= 3 && s[0] == 0xED && s[1] >= 0xA0 && s[1] <= 0xBF && s[2] >= 0x80 && s[2] <= 0xBF;
}

/* Writes code point cp (at most U+10FFFF; a surrogate too, in generalized UTF-8) at out (room for
 * 4 bytes); returns its length. */
static inline size_t cs_utf8_put(unsigned char *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (unsigned char)(0xC0 | cp >> 6);
    out[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (unsigned char)(0xE0 | cp >> 12);
    out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (unsigned char)(0xF0 | cp >> 18);
  out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The length of s[0..n) once every invalid subpart is replaced by U+FFFD, and whether s is valid
 * (the length alone cannot tell: a 3-byte invalid subpart becomes the 3 bytes of U+FFFD). With
 * keep_surrogates, a surrogate (cs_utf8_surrogate) is kept as its 3 bytes, though s is then not
 * valid. */
size_t cs_utf8_fixed_len(const unsigned char *s, size_t n, bool keep_surrogates, bool *valid);

/* Copy s[0..n) to out (room for cs_utf8_fixed_len(s, n, keep_surrogates) bytes) with every invalid
 * subpart replaced by U+FFFD, but for surrogates with keep_surrogates. */
void cs_utf8_fix(char *out, const unsigned char *s, size_t n, bool keep_surrogates);

/* Drops from the end of the string s what a cut by bytes (snprintf into a fixed field) leaves of
 * a character: the first bytes of a well-formed sequence whose last bytes are missing. What ends
 * s otherwise, valid or not, is kept (readers replace invalid sequences). Returns the new length. */
size_t cs_utf8_trim(char *s);

#endif

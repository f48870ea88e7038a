/* UTF-8 as the viewer decodes it: well-formed sequences pass, every maximal invalid subpart
 * becomes one U+FFFD (what the WHATWG TextDecoder and Python's errors="replace" do). The snapshot
 * writers repair strings this way and the reader reads pickled strings this way, so both sides
 * agree with the viewer byte for byte. */
#ifndef CS_UTF8_H
#define CS_UTF8_H

#include <stdbool.h>
#include <stddef.h>

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

/* The length of s[0..n) once every invalid subpart is replaced by U+FFFD, and whether s is valid
 * (the length alone cannot tell: a 3-byte invalid subpart becomes the 3 bytes of U+FFFD). */
size_t cs_utf8_fixed_len(const unsigned char *s, size_t n, bool *valid);

/* Copy s[0..n) to out (room for cs_utf8_fixed_len(s, n) bytes) with every invalid subpart replaced
 * by U+FFFD. */
void cs_utf8_fix(char *out, const unsigned char *s, size_t n);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#include "common/cs_utf8.h"

#include <stdint.h>
#include <string.h>

static inline bool cs_ascii8(const unsigned char *s) {
  uint64_t w;
  memcpy(&w, s, sizeof w);
  return (w & UINT64_C(0x8080808080808080)) == 0;
}

size_t cs_utf8_fixed_len(const unsigned char *s, size_t n, bool keep_surrogates, bool *valid) {
  size_t out = n;
  *valid = true;
  for (size_t i = 0; i < n;) {
    if (i + 8 <= n && cs_ascii8(s + i)) {
      i += 8;
      continue;
    }
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t len;
    if (!cs_utf8_seq(s + i, n - i, &len)) {
      *valid = false;
      if (keep_surrogates && cs_utf8_surrogate(s + i, n - i)) len = 3; /* kept: the same 3 bytes */
      else out = out - len + (sizeof CS_UTF8_REPLACEMENT - 1);
    }
    i += len;
  }
  return out;
}

void cs_utf8_fix(char *out, const unsigned char *s, size_t n, bool keep_surrogates) {
  for (size_t i = 0; i < n;) {
    size_t len = 1;
    bool keep = s[i] < 0x80 || cs_utf8_seq(s + i, n - i, &len);
    if (!keep && keep_surrogates && cs_utf8_surrogate(s + i, n - i)) {
      keep = true;
      len = 3;
    }
    if (keep) {
      memcpy(out, s + i, len);
      out += len;
    } else {
      memcpy(out, CS_UTF8_REPLACEMENT, sizeof CS_UTF8_REPLACEMENT - 1);
      out += sizeof CS_UTF8_REPLACEMENT - 1;
    }
    i += len;
  }
}

/* How long the sequence led by c is when well-formed: 1 for ASCII and for a byte that leads none. */
static size_t cs_utf8_lead_len(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 1;
}

size_t cs_utf8_trim(char *s) {
  size_t n = strlen(s);
  /* the lead of the last sequence is among the last 3 bytes, or the end is whole */
  for (size_t back = 1; back <= 3 && back <= n; back++) {
    const unsigned char *p = (const unsigned char *)s + n - back;
    if (*p >= 0x80 && *p <= 0xBF) continue; /* a continuation byte: its lead is further back */
    size_t len;
    /* cut short: fewer bytes than the lead needs, and every one of them fits the sequence */
    if (cs_utf8_lead_len(*p) > back && !cs_utf8_seq(p, back, &len) && len == back) {
      n -= back;
      s[n] = '\0';
    }
    break;
  }
  return n;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Text made safe (contract in common/cs_text.h). */
#include "common/cs_text.h"

#include <stdbool.h>
#include <string.h>
#include <stdio.h>

#include "common/cs_utf8.h"

/* The character at s[0..n) (n >= 1): its length in *len; false when it is replaced. *invalid
 * says which replacement: an invalid subpart's (U+FFFD) or a control character's ('?'). */
static bool cs_text_char(const unsigned char *s, size_t n, size_t *len, bool *invalid) {
  *len = 1;
  *invalid = false;
  if (s[0] < 0x20 || s[0] == 0x7F) return false;
  if (s[0] < 0x80) return true;
  if (!cs_utf8_seq(s, n, len)) {
    *invalid = true;
    return false;
  }
  return !(s[0] == 0xC2 && s[1] <= 0x9F); /* C1: U+0080..U+009F, C2 80..C2 9F */
}

size_t cs_text_safe(char *out, size_t size, const char *text, size_t n) {
  const unsigned char *s = (const unsigned char *)text;
  const void *nul = memchr(s, '\0', n);
  if (nul) n = (size_t)((const unsigned char *)nul - s);
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    size_t len;
    bool invalid;
    const char *put = (const char *)s + i;
    size_t put_len;
    if (cs_text_char(s + i, n - i, &len, &invalid)) {
      put_len = len;
    } else if (invalid) {
      put = CS_UTF8_REPLACEMENT;
      put_len = sizeof CS_UTF8_REPLACEMENT - 1;
    } else {
      put = "?";
      put_len = 1;
    }
    if (w + put_len > size - 1) break; /* a whole character or none */
    memcpy(out + w, put, put_len);
    w += put_len;
    i += len;
  }
  out[w] = '\0';
  return w;
}

size_t cs_text_safe_in_place(char *text, size_t n) {
  unsigned char *s = (unsigned char *)text;
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    size_t len;
    bool invalid;
    if (cs_text_char(s + i, n - i, &len, &invalid)) {
      memmove(s + w, s + i, len);
      w += len;
    } else {
      s[w++] = '?';
    }
    i += len;
  }
  return w;
}

/* The length of an incomplete character at the end of s[0..n): a lead byte among the last 3
 * bytes and fewer bytes after it than it needs, every one of them fitting (cs_utf8_trim's rule). */
static size_t cs_text_incomplete_tail(const unsigned char *s, size_t n) {
  for (size_t back = 1; back <= 3 && back <= n; back++) {
    const unsigned char *p = s + n - back;
    if (*p >= 0x80 && *p <= 0xBF) continue; /* a continuation byte: its lead is further back */
    size_t len;
    if (*p >= 0xC2 && *p <= 0xF4 && !cs_utf8_seq(p, back, &len) && len == back) return back;
    return 0;
  }
  return 0;
}

size_t cs_text_safe_lines(char *out, const char *text, size_t n, bool more, size_t *used) {
  const unsigned char *s = (const unsigned char *)text;
  if (more) n -= cs_text_incomplete_tail(s, n);
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    if (s[i] == '\n') { /* the tool's own line ends: a name's are in the text already made safe */
      out[w++] = '\n';
      i++;
      continue;
    }
    size_t len;
    bool invalid;
    if (cs_text_char(s + i, n - i, &len, &invalid)) {
      memcpy(out + w, s + i, len);
      w += len;
    } else if (invalid) {
      memcpy(out + w, CS_UTF8_REPLACEMENT, sizeof CS_UTF8_REPLACEMENT - 1);
      w += sizeof CS_UTF8_REPLACEMENT - 1;
    } else {
      out[w++] = '?';
    }
    i += len;
  }
  *used = n;
  return w;
}

void cs_text_fput(FILE *out, const char *s) {
  char safe[3 * 256 + 1];
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    size_t take = n - i < 256 ? n - i : 256, used;
    size_t w = cs_text_safe_lines(safe, s + i, take, i + take < n, &used);
    for (size_t k = 0; k < w; k++) if (safe[k] == '\n') safe[k] = '?'; /* a name's newline too */
    fwrite(safe, 1, w, out);
    i += used;
  }
}

void cs_text_label(char *s) {
  s[cs_text_safe_in_place(s, strlen(s))] = '\0';
}

/* SPDX-License-Identifier: Apache-2.0 */
/* JSON bytes for the emitter: compact (no spaces), RFC 8259 strings, a final newline.
 *
 * Integers are formatted by hand, two digits at a time: they are most of a snapshot (addresses,
 * sizes, times, line numbers) and snprintf would dominate the write time. Doubles are rare (one
 * allocator setting) and go through snprintf. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memviz/emit_impl.h"

/* ------------------------------------------------------------------------------------------------
 * Numbers
 * ---------------------------------------------------------------------------------------------- */

static const char cs_json_digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* How many decimal digits v has. Addresses and times have 15 or 16, so no loop over the powers:
 * bits * 1233 / 4096 is floor(log10(2^bits)) for bits <= 64 (1233 / 4096 ~ log10(2)), which is
 * the digit count or one less. */
static inline size_t cs_json_digits(uint64_t v) {
  static const uint64_t powers[20] = {
      UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000),
      UINT64_C(100000), UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000),
      UINT64_C(1000000000), UINT64_C(10000000000), UINT64_C(100000000000),
      UINT64_C(1000000000000), UINT64_C(10000000000000), UINT64_C(100000000000000),
      UINT64_C(1000000000000000), UINT64_C(10000000000000000), UINT64_C(100000000000000000),
      UINT64_C(1000000000000000000), UINT64_C(10000000000000000000),
  };
  if (v < 10) return 1;
  size_t t = ((size_t)(64 - __builtin_clzll(v)) * 1233) >> 12; /* 1..19 */
  return t + (v >= powers[t]);
}

/* The decimal digits of v at out (at most 20), written from the last; returns how many. */
static size_t cs_json_u64(unsigned char *out, uint64_t v) {
  size_t n = cs_json_digits(v);
  size_t at = n;
  while (v >= 100) {
    size_t pair = (size_t)(v % 100) * 2;
    v /= 100;
    at -= 2;
    memcpy(out + at, cs_json_digit_pairs + pair, 2);
  }
  if (v >= 10)
    memcpy(out, cs_json_digit_pairs + v * 2, 2);
  else
    out[0] = (unsigned char)('0' + v);
  return n;
}

static void cs_json_int(cs_emitter_t *e, int64_t value) {
  unsigned char *p = cs_emit_reserve(e, 20); /* "-9223372036854775808" */
  size_t n = 0;
  uint64_t magnitude = (uint64_t)value;
  if (value < 0) {
    p[n++] = '-';
    magnitude = 0 - magnitude; /* exact for INT64_MIN too */
  }
  n += cs_json_u64(p + n, magnitude);
  cs_emit_commit(e, n);
}

/* The shortest %.Ng that reads back as the same double (0.1, not 0.10000000000000001; %.17g
 * always does), as Python's repr does. Two traps: the program may have set LC_NUMERIC to a locale
 * with another radix character (cudasnap runs inside any program), so whatever sits between the
 * digits and is not an exponent becomes '.' (the round-trip check reads the text back in the same
 * locale); and an integral value ("2") would read back as an int, so it gets ".0" (Python's
 * json.dumps writes 2.0 too). */
static void cs_json_float(cs_emitter_t *e, double value) {
  if (isinf(value)) { /* a number no double holds: JSON.parse reads it back as +-Infinity */
    const char *text = value > 0 ? "1e999" : "-1e999";
    size_t n = strlen(text);
    memcpy(cs_emit_reserve(e, n), text, n);
    cs_emit_commit(e, n);
    return;
  }
  char text[40];
  int len = 0;
  for (int digits = 1; digits <= 17; digits++) {
    len = snprintf(text, sizeof text, "%.*g", digits, value);
    if (digits == 17 || strtod(text, NULL) == value) break;
  }
  unsigned char *p = cs_emit_reserve(e, sizeof text);
  size_t n = 0;
  bool fraction = false; /* a radix point or an exponent was written */
  for (int i = 0; i < len; i++) {
    char c = text[i];
    if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e') {
      fraction |= c == 'e';
      p[n++] = (unsigned char)c;
    } else if (n == 0 || p[n - 1] != '.') {
      fraction = true;
      p[n++] = '.';
    }
  }
  if (!fraction) {
    p[n++] = '.';
    p[n++] = '0';
  }
  cs_emit_commit(e, n);
}

/* ------------------------------------------------------------------------------------------------
 * Strings
 * ---------------------------------------------------------------------------------------------- */

/* For ASCII bytes: 0 = copied as is, otherwise the character after the backslash ('u': \u00XX). */
static const unsigned char cs_json_escape[128] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    ['"'] = '"', ['\\'] = '\\',
};

static const char cs_json_hex[] = "0123456789abcdef";

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "cs_json_copy_plain reads the first byte of a word from its low end"
#endif

/* Flags the bytes of w that are not copied as they are: non-ASCII (0x80 in the byte), a control
 * character, '"' or '\\'. Only the lowest flag is exact (a borrow can set flags above it), so
 * "w is all plain" is exactly flags == 0, and the first byte to handle is the lowest flag. */
static inline uint64_t cs_json_word_flags(uint64_t w) {
  const uint64_t ones = UINT64_C(0x0101010101010101), high = UINT64_C(0x8080808080808080);
  uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
  return (((w - ones * 0x20) | (quote - ones) | (backslash - ones)) & ~w & high) | (w & high);
}

/* Copy s[0..len) to out if every byte is copied as it is; otherwise return false, out holding some
 * of it. Keys and most values are short plain strings,
 * so scanning and copying go together, a word at a time, with no loop below 8 bytes: a short
 * string (or a long one's tail) is read as two overlapping pieces, each padded to a word with a
 * plain byte ('a'). */
static inline bool cs_json_copy_plain(unsigned char *out, const unsigned char *s, size_t len) {
  uint64_t w, bad = 0;
  if (len >= 8) {
    for (size_t i = 0; i + 8 < len; i += 8) {
      memcpy(&w, s + i, sizeof w);
      bad |= cs_json_word_flags(w);
      memcpy(out + i, &w, sizeof w);
    }
    memcpy(&w, s + len - 8, sizeof w);
    memcpy(out + len - 8, &w, sizeof w);
    return (bad | cs_json_word_flags(w)) == 0;
  }
  if (len >= 4) {
    uint32_t a, b;
    memcpy(&a, s, sizeof a);
    memcpy(&b, s + len - 4, sizeof b);
    memcpy(out, &a, sizeof a);
    memcpy(out + len - 4, &b, sizeof b);
    const uint64_t pad = UINT64_C(0x61616161) << 32;
    return (cs_json_word_flags(a | pad) | cs_json_word_flags(b | pad)) == 0;
  }
  if (len >= 2) {
    uint16_t a, b;
    memcpy(&a, s, sizeof a);
    memcpy(&b, s + len - 2, sizeof b);
    memcpy(out, &a, sizeof a);
    memcpy(out + len - 2, &b, sizeof b);
    const uint64_t pad = UINT64_C(0x616161616161) << 16;
    return (cs_json_word_flags(a | pad) | cs_json_word_flags(b | pad)) == 0;
  }
  if (len == 1) {
    out[0] = s[0];
    return cs_json_word_flags(s[0] | UINT64_C(0x61616161616161) << 8) == 0;
  }
  return true;
}

/* cs_json_quoted for a string with escapes or non-ASCII bytes, or too long for the buffer. Out of
 * line, so that the plain case saves no registers for it. */
static CS_NOINLINE void cs_json_quoted_slow(cs_emitter_t *e, const unsigned char *s, size_t len,
                                            bool colon) {
  cs_emit_byte(e, '"');
  /* The runs between escapes go through the emitter's UTF-8 repair: a byte that needs an escape is
   * ASCII or the lead of a kept surrogate (ED), and no valid sequence or invalid subpart contains
   * one, so splitting there changes nothing. */
  size_t run = 0; /* start of the bytes not yet written */
  for (size_t i = 0; i < len; i++) {
    unsigned char escape = 0;
    unsigned unit = s[i]; /* for \uXXXX */
    size_t width = 1;     /* the bytes the escape stands for */
    if (s[i] < 0x80) {
      escape = cs_json_escape[s[i]];
    } else if (e->keep_surrogates && cs_utf8_surrogate(s + i, len - i)) { /* cs_emit_keep_surrogates */
      escape = 'u';
      unit = 0xD000u | (unsigned)(s[i + 1] & 0x3F) << 6 | (unsigned)(s[i + 2] & 0x3F);
      width = 3;
    }
    if (escape == 0) continue;
    cs_emit_utf8_fixed(e, s + run, i - run);
    unsigned char *p = cs_emit_reserve(e, 6);
    p[0] = '\\';
    p[1] = escape;
    if (escape == 'u') {
      for (int k = 0; k < 4; k++) p[2 + k] = (unsigned char)cs_json_hex[unit >> (12 - 4 * k) & 15];
      cs_emit_commit(e, 6);
    } else {
      cs_emit_commit(e, 2);
    }
    run = i + width;
    i = run - 1;
  }
  cs_emit_utf8_fixed(e, s + run, len - run);
  cs_emit_byte(e, '"');
  if (colon) cs_emit_byte(e, ':');
}

/* A quoted string, then `colon` (a key). Valid UTF-8 is copied as is; each invalid subpart
 * becomes U+FFFD. */
static void cs_json_quoted(cs_emitter_t *e, const char *value, size_t len, bool colon) {
  const unsigned char *s = (const unsigned char *)value;
  if (CS_LIKELY(len <= CS_EMIT_BUFSIZE - 3)) { /* the usual case: one pass, one copy */
    unsigned char *p = cs_emit_reserve(e, len + 3);
    if (CS_LIKELY(cs_json_copy_plain(p + 1, s, len))) {
      p[0] = '"';
      p[len + 1] = '"';
      p[len + 2] = ':';
      cs_emit_commit(e, len + 2 + colon);
      return;
    }
  }
  cs_json_quoted_slow(e, s, len, colon); /* overwrites what was copied above */
}

static void cs_json_string(cs_emitter_t *e, const char *value, size_t len) {
  cs_json_quoted(e, value, len, false);
}

/* ------------------------------------------------------------------------------------------------
 * The ops
 * ---------------------------------------------------------------------------------------------- */

static void cs_json_start(cs_emitter_t *e) { (void)e; }

/* The newline ends the file as a text file; JSON allows trailing whitespace (section 3.2). */
static void cs_json_finish(cs_emitter_t *e) { cs_emit_byte(e, '\n'); }

static void cs_json_open(cs_emitter_t *e, cs_emit_level_t *lvl) {
  cs_emit_byte(e, lvl->kind == CS_EMIT_KIND_DICT ? '{' : '[');
}

static void cs_json_close(cs_emitter_t *e, cs_emit_level_t *lvl) {
  cs_emit_byte(e, lvl->kind == CS_EMIT_KIND_DICT ? '}' : ']');
}

static void cs_json_item_begin(cs_emitter_t *e, cs_emit_level_t *lvl) {
  if (lvl->items > 0) cs_emit_byte(e, ',');
}

static void cs_json_key(cs_emitter_t *e, const char *key, size_t len) {
  cs_json_quoted(e, key, len, true);
}

static void cs_json_bool(cs_emitter_t *e, bool value) {
  if (value)
    cs_emit_write(e, "true", 4);
  else
    cs_emit_write(e, "false", 5);
}

static void cs_json_none(cs_emitter_t *e) { cs_emit_write(e, "null", 4); }

const cs_emit_ops_t cs_emit_json_ops = {
    .start = cs_json_start,
    .finish = cs_json_finish,
    .open = cs_json_open,
    .close = cs_json_close,
    .item_begin = cs_json_item_begin,
    .key = cs_json_key,
    .int64 = cs_json_int,
    .float64 = cs_json_float,
    .str = cs_json_string,
    .boolean = cs_json_bool,
    .none = cs_json_none,
    .memo_put = NULL, /* JSON cannot share: every frame list is written out (section 3.2) */
    .memo_get = NULL,
};

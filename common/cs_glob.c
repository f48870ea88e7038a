/* SPDX-License-Identifier: Apache-2.0 */
/* Shell globs, compiled to a bit-parallel automaton (contract in common/cs_glob.h).
 *
 * The automaton has one state per number of positions matched so far, 0 to `positions`; a byte
 * moves state j to j + 1 when position j matches it, and a `*` before position j keeps state j
 * where it is on any byte. All states are tracked at once as the bits of two words (Shift-And):
 * next = ((now & bytes[c]) << 1) | (now & loops). The name matches when the last state is set
 * after its last byte. */
#include "common/cs_glob.h"

#include <string.h>

/* The end of the set that starts at glob[i] == '[' (the index of its ']'), or len when it is not
 * closed. Sets a message in *why for what this file does not take. */
static size_t cs_glob_set_end(const char *glob, size_t len, size_t i, const char **why) {
  size_t j = i + 1;
  if (j < len && (glob[j] == '!' || glob[j] == '^')) j++;
  if (j < len && glob[j] == ']') j++; /* a ']' first is one of the set */
  for (; j < len && glob[j] != ']'; j++) {
    if (glob[j] == '[' && j + 1 < len && (glob[j + 1] == ':' || glob[j + 1] == '=' || glob[j + 1] == '.')) {
      *why = "holds a character class ([:...:], [=...=], [....]), which is not taken";
      return len;
    }
    if (glob[j] == '\\' && j + 1 < len) j++;
  }
  return j;
}

const char *cs_glob_check(const char *glob, size_t len) {
  if (len == 0) return "is empty";
  if (len > CS_GLOB_MAX_BYTES) return "is longer than 255 bytes";
  size_t positions = 0;
  for (size_t i = 0; i < len; i++) {
    const unsigned char c = (unsigned char)glob[i];
    if (c < 0x20 || c == 0x7f) return "holds a control character";
    if (c == '*') continue;
    if (c == '\\') {
      if (i + 1 == len) return "ends in a lone \\";
      if ((unsigned char)glob[i + 1] < 0x20 || glob[i + 1] == 0x7f) return "holds a control character";
      i++;
    } else if (c == '[') {
      const char *why = NULL;
      const size_t end = cs_glob_set_end(glob, len, i, &why);
      if (why) return why;
      if (end == len) return "has a [ that is not closed";
      for (size_t k = i + 1; k < end; k++)
        if ((unsigned char)glob[k] < 0x20 || glob[k] == 0x7f) return "holds a control character";
      i = end;
    }
    if (++positions > CS_GLOB_MAX_POSITIONS) return "has more than 127 characters besides its *s";
  }
  return NULL;
}

/* Mark position p as matching every byte of the set glob[i + 1 .. end). */
static void cs_glob_set(cs_glob_t *g, uint32_t p, const char *glob, size_t i, size_t end) {
  bool in[256] = {false};
  size_t j = i + 1;
  const bool negate = j < end && (glob[j] == '!' || glob[j] == '^');
  if (negate) j++;
  for (bool first = true; j < end; first = false) {
    unsigned char lo = (unsigned char)glob[j];
    if (lo == '\\' && j + 1 < end) lo = (unsigned char)glob[++j];
    else if (lo == ']' && !first) break; /* not reached: end is the closing ']' */
    j++;
    unsigned char hi = lo;
    /* a range "a-z"; a '-' first, last or after a range is itself */
    if (j + 1 < end && glob[j] == '-') {
      size_t k = j + 1;
      unsigned char to = (unsigned char)glob[k];
      if (to == '\\' && k + 1 < end) to = (unsigned char)glob[++k];
      hi = to;
      j = k + 1;
    }
    for (unsigned c = lo; c <= hi; c++) in[c] = true; /* hi < lo: an empty range, as fnmatch's */
  }
  for (unsigned c = 1; c < 256; c++) /* a name never holds NUL */
    if (in[c] != negate) g->bytes[c][p / 64] |= UINT64_C(1) << (p % 64);
}

bool cs_glob_compile(cs_glob_t *g, const char *glob, size_t len) {
  if (cs_glob_check(glob, len) != NULL) return false;
  memset(g, 0, sizeof *g);
  uint32_t p = 0;
  for (size_t i = 0; i < len; i++) {
    const unsigned char c = (unsigned char)glob[i];
    if (c == '*') {
      g->loops[p / 64] |= UINT64_C(1) << (p % 64);
      continue;
    }
    if (c == '?') {
      for (unsigned b = 1; b < 256; b++) g->bytes[b][p / 64] |= UINT64_C(1) << (p % 64);
    } else if (c == '[') {
      const char *why = NULL;
      const size_t end = cs_glob_set_end(glob, len, i, &why);
      cs_glob_set(g, p, glob, i, end);
      i = end;
    } else {
      const unsigned char literal = c == '\\' ? (unsigned char)glob[++i] : c;
      g->bytes[literal][p / 64] |= UINT64_C(1) << (p % 64);
    }
    p++;
  }
  g->positions = p;
  return true;
}

bool cs_glob_match(const cs_glob_t *g, const char *name, size_t len) {
  uint64_t now0 = 1, now1 = 0; /* state 0: nothing matched yet */
  for (size_t i = 0; i < len; i++) {
    const uint64_t *b = g->bytes[(unsigned char)name[i]];
    const uint64_t step0 = now0 & b[0], step1 = now1 & b[1];
    now1 = (step1 << 1 | step0 >> 63) | (now1 & g->loops[1]);
    now0 = step0 << 1 | (now0 & g->loops[0]);
    if ((now0 | now1) == 0) return false;
  }
  const uint32_t last = g->positions;
  return ((last < 64 ? now0 : now1) >> (last % 64)) & 1;
}

bool cs_glob_list_each(const char *text, bool (*each)(void *ctx, const char *item, size_t len), void *ctx) {
  for (const char *p = text;;) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    const char *a = p, *b = end;
    while (a < b && *a == ' ') a++;
    while (b > a && b[-1] == ' ') b--;
    if (!each(ctx, a, (size_t)(b - a))) return false;
    if (!comma) return true;
    p = comma + 1;
  }
}

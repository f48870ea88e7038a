/* Snapshot files into a cJSON tree (contract in reader/reader.h).
 *
 * Format: like the viewer, which tries JSON.parse and falls back to its unpickler. A file whose
 * first byte is 0x80 (PROTO) cannot be JSON and goes straight to the unpickler. Anything else is
 * parsed as JSON; if that fails, the unpickler gets a try too (a protocol-1 pickle without PROTO
 * loads in the viewer), and if it fails as well the more telling of the two errors is reported.
 *
 * JSON: cJSON is lenient where JSON.parse is not. It treats every byte up to 0x20 (NUL included)
 * as whitespace, accepts raw control characters in strings, leading zeros ("01") and "1.", and its
 * require_null_terminated mode counts trailing NULs as whitespace. So the bytes are first checked
 * against the RFC 8259 grammar here (what JSON.parse accepts, after the viewer's TextDecoder has
 * dropped a UTF-8 BOM), and only then handed to cJSON_ParseWithLengthOpts. The same pass records
 * every number token whose value is 2^53 or more in magnitude; after the parse, number items are
 * matched to those tokens in document order, and plain integers that fit int64 get their exact
 * digits in valuestring. A JSON integer beyond int64 is not an error (JSON.parse takes it): it keeps
 * only its double, and cs_reader_int_exact refuses it. Only a pickle LONG1 of more than 8 bytes is
 * "integer too large". Known gaps against JSON.parse: a number token longer than 63 characters and
 * a lone UTF-16 surrogate escape ("\ud800") are rejected (cJSON cannot read them), and invalid UTF-8
 * inside strings is kept as is (the viewer shows U+FFFD). Duplicate keys keep their first position
 * and their last value, as with JSON.parse. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/cs_compiler.h"
#include "reader/reader.h"
#include "reader/unpickle.h"

#define CS_TWO_POW_53 9007199254740992.0
/* cJSON copies a number into a 64-byte buffer before strtod; longer tokens fail there. */
#define CS_JSON_MAX_NUMBER 63

CS_PRINTF(3, 4) static void cs_reader_set_error(cs_read_error_t *err, size_t offset, const char *fmt, ...) {
  err->offset = offset;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
}

/* ---------------------------------------------------------------------------------------------
 * RFC 8259 check, iterative, with the positions of numbers that need exact digits
 * ------------------------------------------------------------------------------------------- */

typedef struct cs_json_big_s {
  size_t offset, len;
  bool plain_int; /* no fraction, no exponent */
} cs_json_big_t;

typedef struct cs_json_scan_s {
  const uint8_t *p;
  size_t len, pos;
  cs_json_big_t *bigs;
  size_t nbigs, capbigs;
  size_t numbers;  /* number tokens so far */
  size_t *floats;  /* the ordinals (among number tokens) of those with a fraction or an exponent */
  size_t nfloats, capfloats;
  cs_read_error_t *err;
} cs_json_scan_t;

static bool cs_json_is_ws(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void cs_json_skip_ws(cs_json_scan_t *s) {
  while (s->pos < s->len && cs_json_is_ws(s->p[s->pos])) s->pos++;
}

static bool cs_json_fail_at(cs_json_scan_t *s, size_t at, const char *what) {
  if (at >= s->len) {
    cs_reader_set_error(s->err, at, "invalid JSON: the file ends %s", what);
    return false;
  }
  uint8_t c = s->p[at];
  if (c == 'N' || c == 'I' || (c == '-' && at + 1 < s->len && s->p[at + 1] == 'I')) {
    cs_reader_set_error(s->err, at,
                        "invalid JSON: NaN/Infinity is not JSON (JSON.parse fails and the viewer's pickle "
                        "fallback throws 'UNKNOWN OPCODE')");
  } else if (c >= 0x20 && c < 0x7f) {
    cs_reader_set_error(s->err, at, "invalid JSON: unexpected '%c' %s", c, what);
  } else {
    cs_reader_set_error(s->err, at, "invalid JSON: unexpected byte 0x%02x %s", c, what);
  }
  return false;
}

static bool cs_json_scan_string(cs_json_scan_t *s) {
  size_t start = s->pos;
  s->pos++; /* the opening quote */
  for (;;) {
    if (s->pos >= s->len) {
      cs_reader_set_error(s->err, start, "invalid JSON: unterminated string");
      return false;
    }
    uint8_t c = s->p[s->pos];
    if (c == '"') {
      s->pos++;
      return true;
    }
    if (c < 0x20) {
      cs_reader_set_error(s->err, s->pos, "invalid JSON: raw control character 0x%02x in a string", c);
      return false;
    }
    if (c == '\\') {
      if (s->pos + 1 >= s->len) return cs_json_fail_at(s, s->len, "inside an escape");
      uint8_t e = s->p[s->pos + 1];
      if (e == 'u') {
        for (size_t i = 0; i < 4; i++) {
          size_t at = s->pos + 2 + i;
          if (at >= s->len || !((s->p[at] >= '0' && s->p[at] <= '9') || (s->p[at] >= 'a' && s->p[at] <= 'f') ||
                                (s->p[at] >= 'A' && s->p[at] <= 'F'))) {
            cs_reader_set_error(s->err, s->pos, "invalid JSON: bad \\u escape");
            return false;
          }
        }
        s->pos += 6;
      } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
        s->pos += 2;
      } else {
        cs_reader_set_error(s->err, s->pos, "invalid JSON: bad escape '\\%c'", e >= 0x20 && e < 0x7f ? e : '?');
        return false;
      }
      continue;
    }
    s->pos++;
  }
}

static bool cs_json_digit(const cs_json_scan_t *s, size_t at) {
  return at < s->len && s->p[at] >= '0' && s->p[at] <= '9';
}

static bool cs_json_scan_number(cs_json_scan_t *s) {
  size_t start = s->pos;
  if (s->p[s->pos] == '-') s->pos++;
  if (!cs_json_digit(s, s->pos)) return cs_json_fail_at(s, s->pos, "in a number");
  size_t int_digits = 0;
  if (s->p[s->pos] == '0') {
    s->pos++;
    int_digits = 1;
    if (cs_json_digit(s, s->pos)) {
      cs_reader_set_error(s->err, start, "invalid JSON: number with a leading zero");
      return false;
    }
  } else {
    while (cs_json_digit(s, s->pos)) {
      s->pos++;
      int_digits++;
    }
  }
  bool frac = false, exp = false;
  if (s->pos < s->len && s->p[s->pos] == '.') {
    frac = true;
    s->pos++;
    if (!cs_json_digit(s, s->pos)) return cs_json_fail_at(s, s->pos, "after a decimal point");
    while (cs_json_digit(s, s->pos)) s->pos++;
  }
  if (s->pos < s->len && (s->p[s->pos] == 'e' || s->p[s->pos] == 'E')) {
    exp = true;
    s->pos++;
    if (s->pos < s->len && (s->p[s->pos] == '+' || s->p[s->pos] == '-')) s->pos++;
    if (!cs_json_digit(s, s->pos)) return cs_json_fail_at(s, s->pos, "in an exponent");
    while (cs_json_digit(s, s->pos)) s->pos++;
  }
  size_t n = s->pos - start;
  if (n > CS_JSON_MAX_NUMBER) {
    cs_reader_set_error(s->err, start, "number token of %zu characters (at most %d are supported)", n,
                        CS_JSON_MAX_NUMBER);
    return false;
  }
  size_t ordinal = s->numbers++;
  if (frac || exp) { /* a float to Python's json and to the writers (cs_reader_is_float) */
    if (s->nfloats == s->capfloats) {
      size_t ncap = s->capfloats ? s->capfloats * 2 : 64;
      size_t *f = realloc(s->floats, ncap * sizeof *f);
      if (f == NULL) {
        cs_reader_set_error(s->err, start, "out of host memory");
        return false;
      }
      s->floats = f;
      s->capfloats = ncap;
    }
    s->floats[s->nfloats++] = ordinal;
  }
  /* Below 10^15 without an exponent it is below 2^53: no exact digits needed. */
  if (!exp && int_digits < 16) return true;
  char buf[CS_JSON_MAX_NUMBER + 1];
  memcpy(buf, s->p + start, n);
  buf[n] = '\0';
  double d = strtod(buf, NULL);
  if (!(fabs(d) >= CS_TWO_POW_53)) return true;
  if (s->nbigs == s->capbigs) {
    size_t ncap = s->capbigs ? s->capbigs * 2 : 64;
    cs_json_big_t *b = realloc(s->bigs, ncap * sizeof *b);
    if (b == NULL) {
      cs_reader_set_error(s->err, start, "out of host memory");
      return false;
    }
    s->bigs = b;
    s->capbigs = ncap;
  }
  s->bigs[s->nbigs++] = (cs_json_big_t){start, n, !frac && !exp};
  return true;
}

static bool cs_json_scan_literal(cs_json_scan_t *s, const char *lit) {
  size_t n = strlen(lit);
  if (s->len - s->pos < n || memcmp(s->p + s->pos, lit, n) != 0) return cs_json_fail_at(s, s->pos, "(not a value)");
  s->pos += n;
  return true;
}

/* The grammar, with an explicit stack of open containers ('{' or '['). */
static bool cs_json_scan(cs_json_scan_t *s) {
  uint8_t open[CS_READER_MAX_DEPTH];
  size_t depth = 0;
  cs_json_skip_ws(s);
  if (s->pos >= s->len) {
    cs_reader_set_error(s->err, s->pos, "invalid JSON: no value (empty file)");
    return false;
  }
  for (;;) {
    /* A value starts here. */
    cs_json_skip_ws(s);
    if (s->pos >= s->len) return cs_json_fail_at(s, s->pos, "where a value was expected");
    uint8_t c = s->p[s->pos];
    if (c == '{' || c == '[') {
      if (depth == CS_READER_MAX_DEPTH) {
        cs_reader_set_error(s->err, s->pos, "JSON nested more than %d deep", CS_READER_MAX_DEPTH);
        return false;
      }
      open[depth++] = c;
      s->pos++;
      cs_json_skip_ws(s);
      if (s->pos < s->len && s->p[s->pos] == (c == '{' ? '}' : ']')) {
        s->pos++;
        depth--;
      } else if (c == '{') {
        if (s->pos >= s->len || s->p[s->pos] != '"') return cs_json_fail_at(s, s->pos, "where a key was expected");
        if (!cs_json_scan_string(s)) return false;
        cs_json_skip_ws(s);
        if (s->pos >= s->len || s->p[s->pos] != ':') return cs_json_fail_at(s, s->pos, "where ':' was expected");
        s->pos++;
        continue; /* the member's value */
      } else {
        continue; /* the first element */
      }
    } else if (c == '"') {
      if (!cs_json_scan_string(s)) return false;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      if (!cs_json_scan_number(s)) return false;
    } else if (c == 't') {
      if (!cs_json_scan_literal(s, "true")) return false;
    } else if (c == 'f') {
      if (!cs_json_scan_literal(s, "false")) return false;
    } else if (c == 'n') {
      if (!cs_json_scan_literal(s, "null")) return false;
    } else {
      return cs_json_fail_at(s, s->pos, "where a value was expected");
    }
    /* After a value: close containers or move to the next element. */
    for (;;) {
      cs_json_skip_ws(s);
      if (depth == 0) {
        if (s->pos < s->len) {
          uint8_t t = s->p[s->pos];
          cs_reader_set_error(s->err, s->pos,
                              "invalid JSON: trailing byte 0x%02x after the value (JSON.parse fails; the viewer's "
                              "pickle fallback then fails too)",
                              t);
          return false;
        }
        return true;
      }
      if (s->pos >= s->len) return cs_json_fail_at(s, s->pos, "inside an unclosed container");
      uint8_t t = s->p[s->pos];
      uint8_t top = open[depth - 1];
      if (t == (top == '{' ? '}' : ']')) {
        s->pos++;
        depth--;
        continue;
      }
      if (t != ',') return cs_json_fail_at(s, s->pos, top == '{' ? "where ',' or '}' was expected"
                                                                  : "where ',' or ']' was expected");
      s->pos++;
      if (top == '{') {
        cs_json_skip_ws(s);
        if (s->pos >= s->len || s->p[s->pos] != '"') return cs_json_fail_at(s, s->pos, "where a key was expected");
        if (!cs_json_scan_string(s)) return false;
        cs_json_skip_ws(s);
        if (s->pos >= s->len || s->p[s->pos] != ':') return cs_json_fail_at(s, s->pos, "where ':' was expected");
        s->pos++;
      }
      break; /* the next value */
    }
  }
}

/* Exact digits for big integers, and the float mark: walk number items in document order (cJSON
 * keeps members in order, duplicates included), pairing those of magnitude >= 2^53 with the
 * recorded big tokens, and counting them to find the float tokens' ordinals. */
typedef struct cs_json_fix_s {
  const uint8_t *p;
  const cs_json_big_t *bigs;
  size_t nbigs, next;
  const size_t *floats;
  size_t nfloats, next_float;
  size_t number; /* ordinal of the next number item */
  bool oom;
} cs_json_fix_t;

static void cs_json_fix_item(cs_json_fix_t *f, cJSON *item) {
  for (cJSON *c = item; c != NULL; c = c->next) {
    if (cJSON_IsNumber(c)) {
      size_t ordinal = f->number++;
      if (f->next_float < f->nfloats && f->floats[f->next_float] == ordinal) {
        f->next_float++;
        c->type |= CS_READER_FLOAT;
      }
    }
    if (cJSON_IsNumber(c) && fabs(c->valuedouble) >= CS_TWO_POW_53) {
      if (f->next >= f->nbigs) continue; /* cannot happen: same strtod on the same token */
      const cs_json_big_t *b = &f->bigs[f->next++];
      if (!b->plain_int) continue;
      char buf[CS_JSON_MAX_NUMBER + 1];
      memcpy(buf, f->p + b->offset, b->len);
      buf[b->len] = '\0';
      errno = 0;
      long long x = strtoll(buf, NULL, 10);
      if (errno == ERANGE) continue; /* beyond int64: only the double is kept */
      if (x >= -(long long)((int64_t)1 << 53) && x <= (long long)((int64_t)1 << 53)) continue;
      char out[24];
      int n = snprintf(out, sizeof out, "%lld", x);
      c->valuestring = cJSON_malloc((size_t)n + 1);
      if (c->valuestring == NULL) {
        f->oom = true;
        return;
      }
      memcpy(c->valuestring, out, (size_t)n + 1);
    } else if (c->child != NULL) {
      cs_json_fix_item(f, c->child);
      if (f->oom) return;
    }
  }
}

/* JSON has no tuples; PyTorch's one tuple is the segment pool id (cs_reader_is_tuple). */
static void cs_json_mark_tuples(cJSON *item) {
  for (cJSON *c = item->child; c != NULL; c = c->next) {
    if (cJSON_IsArray(c) && cJSON_IsObject(item) && c->string != NULL && strcmp(c->string, "segment_pool_id") == 0)
      c->type |= CS_READER_TUPLE;
    if (c->child != NULL) cs_json_mark_tuples(c);
  }
}

static cJSON *cs_read_json(const uint8_t *data, size_t len, cs_read_error_t *err) {
  size_t start = 0;
  if (len >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF) start = 3; /* TextDecoder drops it */
  cs_json_scan_t s = {.p = data, .len = len, .pos = start, .err = err};
  if (!cs_json_scan(&s)) {
    free(s.bigs);
    free(s.floats);
    return NULL;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts((const char *)data + start, len - start, &end, 0);
  if (root == NULL) {
    size_t at = end != NULL ? (size_t)(end - (const char *)data) : start;
    cs_reader_set_error(err, at, "JSON that cJSON cannot read (a lone UTF-16 surrogate escape?)");
    free(s.bigs);
    free(s.floats);
    return NULL;
  }
  cs_json_fix_t f = {.p = data, .bigs = s.bigs, .nbigs = s.nbigs, .floats = s.floats, .nfloats = s.nfloats};
  if (s.nbigs > 0 || s.nfloats > 0) cs_json_fix_item(&f, root);
  free(s.bigs);
  free(s.floats);
  if (f.oom) {
    cJSON_Delete(root);
    cs_reader_set_error(err, 0, "out of host memory");
    return NULL;
  }
  cs_reader_dedupe_keys(root);
  cs_json_mark_tuples(root);
  return root;
}

/* ---------------------------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------------------------- */

cJSON *cs_read_snapshot_ex(const void *data, size_t len, cs_snapshot_format_t *format, cs_read_error_t *err,
                           cs_unpickle_stats_t *stats) {
  cs_read_error_t local_err;
  cs_unpickle_stats_t local_stats;
  if (err == NULL) err = &local_err;
  if (stats == NULL) stats = &local_stats;
  memset(stats, 0, sizeof *stats);
  stats->protocol = -2;
  err->offset = 0;
  err->message[0] = '\0';
  const uint8_t *p = data;
  if (len == 0 || p == NULL) {
    cs_reader_set_error(err, 0, "empty file");
    return NULL;
  }
  if (p[0] == 0x80) {
    if (format != NULL) *format = CS_SNAPSHOT_PICKLE;
    return cs_unpickle(p, len, stats, err);
  }
  if (format != NULL) *format = CS_SNAPSHOT_JSON;
  cJSON *root = cs_read_json(p, len, err);
  if (root != NULL) {
    stats->protocol = -2;
    return root;
  }
  /* The viewer's fallback: its unpickler on the same bytes. */
  cs_read_error_t perr;
  root = cs_unpickle(p, len, stats, &perr);
  if (root != NULL) {
    if (format != NULL) *format = CS_SNAPSHOT_PICKLE;
    return root;
  }
  if (perr.offset > 0) {
    /* It got somewhere as a pickle (a protocol 0/1 pickle, not JSON): report that. */
    if (format != NULL) *format = CS_SNAPSHOT_PICKLE;
    cs_reader_set_error(err, perr.offset, "not JSON, and as a pickle: %.200s", perr.message);
  }
  memset(stats, 0, sizeof *stats);
  stats->protocol = -2;
  return NULL;
}

cJSON *cs_read_snapshot(const void *data, size_t len, cs_snapshot_format_t *format, cs_read_error_t *err) {
  return cs_read_snapshot_ex(data, len, format, err, NULL);
}

cJSON *cs_read_snapshot_file(const char *path, cs_snapshot_format_t *format, cs_read_error_t *err) {
  cs_read_error_t local_err;
  if (err == NULL) err = &local_err;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    cs_reader_set_error(err, 0, "cannot open: %s", strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  struct stat sb;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) cap = (size_t)sb.st_size + 1;
  uint8_t *buf = malloc(cap);
  if (buf == NULL) {
    close(fd);
    cs_reader_set_error(err, 0, "out of host memory for %zu bytes", cap);
    return NULL;
  }
  for (;;) {
    if (len == cap) {
      uint8_t *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (nb == NULL) {
        free(buf);
        close(fd);
        cs_reader_set_error(err, len, "out of host memory");
        return NULL;
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      free(buf);
      close(fd);
      cs_reader_set_error(err, len, "read error: %s", strerror(e));
      return NULL;
    }
    if (n == 0) break;
    len += (size_t)n;
  }
  close(fd);
  cJSON *root = cs_read_snapshot(buf, len, format, err);
  free(buf);
  return root;
}

int cs_reader_is_float(const cJSON *item) {
  return item != NULL && cJSON_IsNumber(item) && (item->type & CS_READER_FLOAT) != 0;
}

int cs_reader_is_tuple(const cJSON *item) {
  return item != NULL && cJSON_IsArray(item) && (item->type & CS_READER_TUPLE) != 0;
}

int cs_reader_int_exact(const cJSON *item, int64_t *out) {
  if (item == NULL || !cJSON_IsNumber(item)) return 0;
  if (item->valuestring != NULL) {
    errno = 0;
    char *end = NULL;
    long long x = strtoll(item->valuestring, &end, 10);
    if (errno != 0 || end == item->valuestring || *end != '\0') return 0;
    if (out != NULL) *out = (int64_t)x;
    return 1;
  }
  double d = item->valuedouble;
  if (!isfinite(d) || d != floor(d)) return 0;
  if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return 0;
  if (out != NULL) *out = (int64_t)d;
  return 1;
}

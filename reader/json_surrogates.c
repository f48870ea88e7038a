/* SPDX-License-Identifier: Apache-2.0 */
/* JSON strings with lone surrogate escapes, kept exact (contract in reader/json_surrogates.h). */
#include "reader/json_surrogates.h"

#include <stdlib.h>
#include <string.h>

#include "common/cs_utf8.h"

void cs_json_sur_free(cs_json_sur_t *s) {
  free(s->carry);
  free(s->items);
  free(s->bytes);
  memset(s, 0, sizeof *s);
}

static bool cs_json_sur_room(void **arr, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t ncap = *cap ? *cap : 64;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / size) return false;
    ncap *= 2;
  }
  void *p = realloc(*arr, ncap * size);
  if (p == NULL) return false;
  *arr = p;
  *cap = ncap;
  return true;
}

static int cs_json_sur_hex(const uint8_t *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    uint8_t c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v << 4 | d;
  }
  return v;
}

/* Decodes the raw string r[0..n) (between its quotes) into s->bytes when it holds a lone surrogate
 * escape, and queues it for token `token`. An escape YAJL would refuse leaves it to YAJL. */
static bool cs_json_sur_decode(cs_json_sur_t *s, const uint8_t *r, size_t n, uint64_t token) {
  /* the decoded string is never longer than the raw one */
  if (!cs_json_sur_room((void **)&s->bytes, &s->capbytes, s->nbytes + n, 1)) return false;
  uint8_t *out = s->bytes + s->nbytes;
  size_t len = 0;
  bool lone = false;
  for (size_t i = 0; i < n;) {
    if (r[i] != '\\') {
      out[len++] = r[i++];
      continue;
    }
    if (i + 1 >= n) return true;
    uint8_t c = r[i + 1];
    const char *simple = strchr("\"\\/bfnrt", c);
    if (c != 'u') {
      if (c == 0 || simple == NULL) return true;
      out[len++] = (uint8_t)"\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      i += 2;
      continue;
    }
    int cp = i + 6 <= n ? cs_json_sur_hex(r + i + 2) : -1;
    if (cp < 0) return true;
    i += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= n && r[i] == '\\' && r[i + 1] == 'u') {
      int lo = cs_json_sur_hex(r + i + 2);
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        len += cs_utf8_put(out + len, 0x10000u + (((unsigned)cp - 0xD800u) << 10) + ((unsigned)lo - 0xDC00u));
        i += 6;
        continue;
      }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) lone = true;
    len += cs_utf8_put(out + len, (unsigned)cp);
  }
  if (!lone) return true;
  if (!cs_json_sur_room((void **)&s->items, &s->capitems, s->first + s->nitems + 1, sizeof *s->items)) return false;
  s->items[s->first + s->nitems++] = (struct cs_json_sur_item_s){token, s->nbytes, len};
  s->nbytes += len;
  return true;
}

/* The string ended at p + end (its closing quote); it began at p + start in this chunk, after the
 * carried bytes. */
static bool cs_json_sur_close(cs_json_sur_t *s, const uint8_t *p, size_t start, size_t end) {
  uint64_t token = s->scanned++;
  s->in_str = false;
  if (!s->has_u) return true;
  if (s->ncarry == 0) return cs_json_sur_decode(s, p + start, end - start, token);
  if (!cs_json_sur_room((void **)&s->carry, &s->capcarry, s->ncarry + (end - start), 1)) return false;
  memcpy(s->carry + s->ncarry, p + start, end - start);
  s->ncarry += end - start;
  bool ok = cs_json_sur_decode(s, s->carry, s->ncarry, token);
  s->ncarry = 0;
  return ok;
}

bool cs_json_sur_scan(cs_json_sur_t *s, const uint8_t *p, size_t n) {
  size_t i = 0, start = 0;
  while (i < n) {
    if (!s->in_str) {
      const uint8_t *q = memchr(p + i, '"', n - i);
      if (q == NULL) return true;
      i = (size_t)(q - p) + 1;
      start = i;
      s->in_str = true;
      s->esc = s->has_u = false;
      s->ncarry = 0;
      continue;
    }
    if (s->esc) { /* the byte after a backslash */
      s->esc = false;
      s->has_u |= p[i] == 'u';
      i++;
      continue;
    }
    const uint8_t *q = memchr(p + i, '"', n - i);
    size_t stop = q ? (size_t)(q - p) : n;
    const uint8_t *bs = memchr(p + i, '\\', stop - i);
    if (bs != NULL) {
      i = (size_t)(bs - p) + 1;
      s->esc = true;
      continue;
    }
    if (q == NULL) break;
    if (!cs_json_sur_close(s, p, start, stop)) return false;
    i = stop + 1;
  }
  if (s->in_str && start < n) { /* carried into the next chunk */
    size_t from = start;
    if (!cs_json_sur_room((void **)&s->carry, &s->capcarry, s->ncarry + (n - from), 1)) return false;
    memcpy(s->carry + s->ncarry, p + from, n - from);
    s->ncarry += n - from;
  }
  return true;
}

bool cs_json_sur_take(cs_json_sur_t *s, const char **bytes, size_t *len) {
  uint64_t token = s->taken++;
  if (s->nitems == 0 || s->items[s->first].token != token) return false;
  const struct cs_json_sur_item_s *it = &s->items[s->first];
  *bytes = (const char *)s->bytes + it->at;
  *len = it->len;
  s->first++;
  if (--s->nitems == 0) s->first = s->nbytes = 0; /* the bytes stay valid until the next call */
  return true;
}

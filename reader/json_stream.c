/* SPDX-License-Identifier: Apache-2.0 */
/* JSON into the snapshot model, streamed through YAJL (contract in reader/json_stream.h). */
#include "reader/json_stream.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yajl/yajl_parse.h>

#include "model/build.h"
#include "reader/json_surrogates.h"

/* One read of a streamed file. */
#define CS_JSON_CHUNK ((size_t)1 << 20)

/* An open container and, in a dict, the key its next value goes under. */
typedef struct cs_json_level_s {
  cs_val_t open;
  uint32_t key;
  bool tuple_key; /* the key is segment_pool_id: a list there is a tuple */
} cs_json_level_t;

typedef struct cs_json_s {
  cs_build_t *b;
  cs_json_level_t levels[CS_DOC_MAX_DEPTH];
  size_t depth;
  cs_val_t root;
  bool done;           /* the top-level value is complete */
  const char *problem; /* set by a callback that stops the parse */
  const char *head;    /* cs_json_read_head_fd: the root dict's first key wanted (NULL: whole) */
  bool head_done;      /* the root dict's first pair is set: the parse stopped there */
  bool head_absent;    /* the root's first key is not `head`: the parse stopped before it */
  char numbuf[128];
  cs_json_sur_t sur; /* strings with lone surrogate escapes, decoded here rather than by YAJL */
} cs_json_t;

/* Puts a finished value into the innermost open container, or makes it the root. */
static int cs_json_put(cs_json_t *j, cs_val_t v) {
  if (cs_val_absent(v)) {
    j->problem = cs_build_error(j->b);
    return 0;
  }
  if (j->depth == 0) {
    j->root = v;
    j->done = true;
    return 1;
  }
  cs_json_level_t *l = &j->levels[j->depth - 1];
  bool ok = cs_build_open_tag(j->b, l->open) == CS_TAG_DICT ? cs_build_set(j->b, l->open, l->key, v)
                                                            : cs_build_append(j->b, l->open, v);
  if (!ok) j->problem = cs_build_error(j->b);
  if (ok && j->head && j->depth == 1) {
    j->head_done = true;
    return 0; /* stops YAJL: the rest of the file is not read */
  }
  return ok;
}

static int cs_json_null(void *ctx) {
  return cs_json_put(ctx, CS_VAL_NULL);
}

static int cs_json_boolean(void *ctx, int b) {
  return cs_json_put(ctx, b ? CS_VAL_TRUE : CS_VAL_FALSE);
}

/* A number from its token: an integer when it has neither fraction nor exponent. */
static int cs_json_number(void *ctx, const char *s, size_t len) {
  cs_json_t *j = ctx;
  char *buf = j->numbuf, *heap = NULL;
  if (len >= sizeof j->numbuf) {
    heap = malloc(len + 1);
    if (heap == NULL) {
      j->problem = "out of host memory";
      return 0;
    }
    buf = heap;
  }
  memcpy(buf, s, len);
  buf[len] = '\0';
  bool is_float = memchr(s, '.', len) || memchr(s, 'e', len) || memchr(s, 'E', len);
  cs_val_t v;
  if (!is_float) {
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    v = errno == ERANGE ? cs_build_float(j->b, strtod(buf, NULL), true) : cs_build_int(j->b, (int64_t)x);
  } else {
    v = cs_build_float(j->b, strtod(buf, NULL), false);
  }
  free(heap);
  return cs_json_put(j, v);
}

static int cs_json_string(void *ctx, const unsigned char *s, size_t len) {
  cs_json_t *j = ctx;
  const char *exact;
  size_t exact_len;
  if (cs_json_sur_take(&j->sur, &exact, &exact_len)) return cs_json_put(j, cs_build_str(j->b, exact, exact_len));
  return cs_json_put(j, cs_build_str(j->b, s, len));
}

static int cs_json_open(cs_json_t *j, unsigned tag) {
  if (j->depth == CS_DOC_MAX_DEPTH) {
    j->problem = "JSON nested more than 1000 deep";
    return 0;
  }
  if (j->head && j->depth == 0 && tag != CS_TAG_DICT) {
    j->head_absent = true; /* no dict, no first key: read it whole */
    return 0;
  }
  if (tag == CS_TAG_LIST && j->depth > 0 && j->levels[j->depth - 1].tuple_key) tag = CS_TAG_TUPLE;
  cs_val_t open = cs_build_open(j->b, tag);
  if (cs_val_absent(open)) {
    j->problem = cs_build_error(j->b);
    return 0;
  }
  j->levels[j->depth++] = (cs_json_level_t){.open = open};
  return 1;
}

static int cs_json_start_map(void *ctx) {
  return cs_json_open(ctx, CS_TAG_DICT);
}

static int cs_json_start_array(void *ctx) {
  return cs_json_open(ctx, CS_TAG_LIST);
}

static int cs_json_map_key(void *ctx, const unsigned char *s, size_t len) {
  cs_json_t *j = ctx;
  const char *exact;
  size_t exact_len;
  if (cs_json_sur_take(&j->sur, &exact, &exact_len)) {
    s = (const unsigned char *)exact;
    len = exact_len;
  }
  if (j->head && j->depth == 1 && (len != strlen(j->head) || memcmp(s, j->head, len) != 0)) {
    j->head_absent = true;
    return 0;
  }
  cs_json_level_t *l = &j->levels[j->depth - 1];
  l->key = cs_build_key(j->b, s, len);
  if (l->key == UINT32_MAX) {
    j->problem = cs_build_error(j->b);
    return 0;
  }
  l->tuple_key = l->key == CS_KEY_SEGMENT_POOL_ID;
  return 1;
}

static int cs_json_end(void *ctx) {
  cs_json_t *j = ctx;
  cs_val_t v = cs_build_close(j->b, j->levels[--j->depth].open);
  return cs_json_put(j, v);
}

static const yajl_callbacks cs_json_callbacks = {
    .yajl_null = cs_json_null,
    .yajl_boolean = cs_json_boolean,
    .yajl_number = cs_json_number,
    .yajl_string = cs_json_string,
    .yajl_start_map = cs_json_start_map,
    .yajl_map_key = cs_json_map_key,
    .yajl_end_map = cs_json_end,
    .yajl_start_array = cs_json_start_array,
    .yajl_end_array = cs_json_end,
};

/* ---- one parse over chunks -------------------------------------------------------------------- */

typedef struct cs_json_feed_s {
  cs_json_t j;
  yajl_handle h;
  size_t offset;   /* bytes fed before the current chunk */
  bool started;    /* the first bytes (a BOM) have been looked at */
  bool empty;      /* only whitespace so far */
  cs_read_error_t *err;
  bool failed;
} cs_json_feed_t;

static bool cs_json_is_ws(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The error at byte `at` of chunk p[0..n) (the chunk that failed), worded as JSON.parse users
 * expect it. */
static void cs_json_explain(cs_json_feed_t *f, const uint8_t *p, size_t n, size_t at) {
  cs_json_t *j = &f->j;
  size_t where = f->offset + at;
  if (j->problem != NULL) {
    cs_read_error_set(f->err, where, "%s", j->problem);
    return;
  }
  unsigned char *msg = yajl_get_error(f->h, 0, p, n);
  const char *text = msg ? (const char *)msg : "parse error";
  uint8_t c = at < n ? p[at] : 0;
  if (j->done && strstr(text, "trailing garbage") != NULL) {
    cs_read_error_set(f->err, where,
                      "invalid JSON: trailing byte 0x%02x after the value (JSON.parse fails; the viewer's pickle "
                      "fallback then fails too)",
                      c);
  } else if (at < n && (c == 'N' || c == 'I' || (c == '-' && at + 1 < n && p[at + 1] == 'I'))) {
    cs_read_error_set(f->err, where,
                      "invalid JSON: NaN/Infinity is not JSON (JSON.parse fails and the viewer's pickle fallback "
                      "throws 'UNKNOWN OPCODE')");
  } else if (at < n && c < 0x20 && !cs_json_is_ws(c) && strstr(text, "inside string") != NULL) {
    cs_read_error_set(f->err, where, "invalid JSON: raw control character 0x%02x in a string", c);
  } else {
    size_t len = strcspn(text, "\n");
    cs_read_error_set(f->err, where, "invalid JSON: %.*s", (int)(len < 200 ? len : 200), text);
  }
  if (msg) yajl_free_error(f->h, msg);
}

static bool cs_json_feed_init(cs_json_feed_t *f, cs_read_error_t *err) {
  memset(f, 0, sizeof *f);
  f->err = err;
  f->empty = true;
  f->j.b = cs_build_new();
  if (f->j.b == NULL) {
    cs_read_error_set(err, 0, "out of host memory");
    return false;
  }
  f->h = yajl_alloc(&cs_json_callbacks, NULL, &f->j);
  if (f->h == NULL) {
    cs_build_abort(f->j.b);
    cs_read_error_set(err, 0, "out of host memory");
    return false;
  }
  yajl_config(f->h, yajl_dont_validate_strings, 1); /* JSON.parse takes any bytes in strings */
  return true;
}

static void cs_json_feed_free(cs_json_feed_t *f) {
  if (f->h) yajl_free(f->h);
  cs_json_sur_free(&f->j.sur);
  cs_build_abort(f->j.b);
}

/* Where in p[0..n) the parse stopped: the byte it could not take. YAJL counts that byte as consumed
 * (a letter where a value was expected, trailing garbage), except for a control character inside a
 * string, which it stops before. */
static size_t cs_json_fail_at(cs_json_feed_t *f, const uint8_t *p, size_t n) {
  size_t consumed = yajl_get_bytes_consumed(f->h);
  if (consumed > n) consumed = n;
  if (consumed < n && p[consumed] < 0x20 && !cs_json_is_ws(p[consumed])) return consumed;
  return consumed > 0 ? consumed - 1 : 0;
}

static bool cs_json_feed(cs_json_feed_t *f, const uint8_t *p, size_t n) {
  if (f->failed) return false;
  if (!f->started && n > 0) {
    f->started = true;
    if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) { /* TextDecoder drops it */
      p += 3;
      n -= 3;
      f->offset += 3;
    }
  }
  /* YAJL takes vertical tab and form feed for whitespace; JSON.parse does not. Either byte is an
   * error wherever it stands (inside a string it is a raw control character, which YAJL refuses):
   * parse up to it, then let YAJL see it alone, to tell the two apart. */
  size_t upto = n;
  const uint8_t *vt = memchr(p, 0x0b, n), *ff = memchr(p, 0x0c, n);
  if (vt != NULL) upto = (size_t)(vt - p);
  if (ff != NULL && (size_t)(ff - p) < upto) upto = (size_t)(ff - p);
  for (size_t i = 0; f->empty && i < upto; i++)
    if (!cs_json_is_ws(p[i])) f->empty = false;
  if (!cs_json_sur_scan(&f->j.sur, p, n)) {
    cs_read_error_set(f->err, f->offset, "out of host memory");
    f->failed = true;
    return false;
  }
  if (yajl_parse(f->h, p, upto) != yajl_status_ok) {
    f->failed = true;
    if (f->j.head_done || f->j.head_absent) return false; /* stopped on purpose */
    cs_json_explain(f, p, upto, cs_json_fail_at(f, p, upto));
    f->failed = true;
    return false;
  }
  f->offset += upto;
  if (upto == n) return true;
  if (yajl_parse(f->h, p + upto, 1) != yajl_status_ok) {
    cs_json_explain(f, p + upto, 1, 0);
  } else {
    cs_read_error_set(f->err, f->offset,
                      "invalid JSON: unexpected byte 0x%02x (between values JSON allows only space, tab, LF "
                      "and CR)",
                      p[upto]);
  }
  f->failed = true;
  return false;
}

static cs_doc_t *cs_json_feed_finish(cs_json_feed_t *f) {
  if (f->failed) {
    cs_json_feed_free(f);
    return NULL;
  }
  if (f->empty) {
    cs_read_error_set(f->err, f->offset, "invalid JSON: no value (empty file)");
    cs_json_feed_free(f);
    return NULL;
  }
  if (yajl_complete_parse(f->h) != yajl_status_ok || !f->j.done) {
    if (f->j.problem != NULL)
      cs_read_error_set(f->err, f->offset, "%s", f->j.problem);
    else
      cs_read_error_set(f->err, f->offset, "invalid JSON: the file ends %s",
                        f->j.depth > 0 ? "inside an unclosed container" : "inside a value");
    cs_json_feed_free(f);
    return NULL;
  }
  cs_doc_t *doc = cs_build_finish(f->j.b, f->j.root);
  f->j.b = NULL;
  cs_json_feed_free(f);
  if (doc == NULL) cs_read_error_set(f->err, 0, "out of host memory");
  return doc;
}

cs_doc_t *cs_json_read_bytes(const uint8_t *data, size_t len, cs_read_error_t *err) {
  cs_json_feed_t f;
  if (!cs_json_feed_init(&f, err)) return NULL;
  /* Fed in chunks all the same: YAJL's error offsets are per call. */
  for (size_t at = 0; at < len && !f.failed; at += CS_JSON_CHUNK) {
    size_t n = len - at < CS_JSON_CHUNK ? len - at : CS_JSON_CHUNK;
    cs_json_feed(&f, data + at, n);
  }
  return cs_json_feed_finish(&f);
}

cs_doc_t *cs_json_read_fd(int fd, const uint8_t *head, size_t nhead, cs_read_error_t *err) {
  cs_json_feed_t f;
  if (!cs_json_feed_init(&f, err)) return NULL;
  uint8_t *buf = malloc(CS_JSON_CHUNK);
  if (buf == NULL) {
    cs_read_error_set(err, 0, "out of host memory");
    cs_json_feed_free(&f);
    return NULL;
  }
  if (nhead > 0) cs_json_feed(&f, head, nhead);
  while (!f.failed) {
    ssize_t n = read(fd, buf, CS_JSON_CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err->io_errno = errno;
      cs_read_error_set(err, f.offset, "%s", strerror(errno));
      f.failed = true;
      break;
    }
    if (n == 0) break;
    cs_json_feed(&f, buf, (size_t)n);
  }
  free(buf);
  return cs_json_feed_finish(&f);
}

/* How many bytes a head read asks for at a time: a head is a few KB. */
#define CS_JSON_HEAD_CHUNK ((size_t)64 << 10)

cs_head_status_t cs_json_read_head_fd(int fd, const char *key, cs_doc_t **out, cs_read_error_t *err) {
  *out = NULL;
  cs_json_feed_t f;
  if (!cs_json_feed_init(&f, err)) return CS_HEAD_ERROR;
  f.j.head = key;
  uint8_t *buf = malloc(CS_JSON_HEAD_CHUNK);
  if (buf == NULL) {
    cs_read_error_set(err, 0, "out of host memory");
    cs_json_feed_free(&f);
    return CS_HEAD_ERROR;
  }
  bool at_end = false;
  while (!f.failed && !at_end) {
    ssize_t n = read(fd, buf, CS_JSON_HEAD_CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err->io_errno = errno;
      cs_read_error_set(err, f.offset, "%s", strerror(errno));
      break;
    }
    at_end = n == 0;
    if (n > 0) cs_json_feed(&f, buf, (size_t)n);
  }
  free(buf);
  cs_head_status_t status = CS_HEAD_ERROR;
  if (f.j.head_absent || (at_end && !f.failed)) {
    status = CS_HEAD_ABSENT; /* another first key, or not a dict: read it whole */
  } else if (f.j.head_done) {
    cs_val_t root = cs_build_close(f.j.b, f.j.levels[0].open);
    *out = cs_val_absent(root) ? NULL : cs_build_finish(f.j.b, root);
    f.j.b = NULL;
    if (*out != NULL) status = CS_HEAD_FOUND;
    else cs_read_error_set(err, 0, "out of host memory");
  }
  cs_json_feed_free(&f);
  return status;
}

/* The viewer's pickle subset, read into a cJSON tree (contract in reader/unpickle.h).
 *
 * Ownership rule: a value is owned by exactly one place at a time: a non-NULL stack slot, its parent
 * container, or the graveyard. The memo only points at values. A memoized value is marked with
 * CS_UNPICKLE_MEMO_FLAG and is never freed before the end of the call (a memoized string used as a
 * dict key goes to the graveyard instead of being freed), so a later BINGET can always copy it.
 * All marks are cleared before anything is freed or returned.
 *
 * Two economies: BINGET of a string pushes a "borrowed" slot (the memoized original itself), copied
 * only if it becomes a value, since most such strings are dict keys; and while parsing, a
 * container's valueint holds the size of its subtree, so a BINGET that would cross the value limit
 * is refused before it copies anything (cleared before the tree is returned). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "common/cs_utf8.h"
#include "reader/unpickle.h"

/* A type bit cJSON does not use (it masks types with 0xFF and uses only 256 and 512 above). */
#define CS_UNPICKLE_MEMO_FLAG (1 << 14)

/* Memo indices may run ahead of the number of values stored so far by at most this much. Real
 * picklers number their memo entries 0, 1, 2, ...; the bound keeps the memo table proportional to
 * the input, whatever index a hostile LONG_BINPUT names. */
#define CS_UNPICKLE_MEMO_SLACK ((size_t)1024)

#define CS_TWO_POW_53 9007199254740992.0

enum {
  CS_OP_MARK = '(',
  CS_OP_STOP = '.',
  CS_OP_BINFLOAT = 'G',
  CS_OP_BININT = 'J',
  CS_OP_BININT1 = 'K',
  CS_OP_BININT2 = 'M',
  CS_OP_NONE = 'N',
  CS_OP_BINUNICODE = 'X',
  CS_OP_APPEND = 'a',
  CS_OP_DICT = 'd',
  CS_OP_APPENDS = 'e',
  CS_OP_BINGET = 'h',
  CS_OP_LONG_BINGET = 'j',
  CS_OP_LIST = 'l',
  CS_OP_BINPUT = 'q',
  CS_OP_LONG_BINPUT = 'r',
  CS_OP_SETITEM = 's',
  CS_OP_TUPLE = 't',
  CS_OP_SETITEMS = 'u',
  CS_OP_EMPTY_DICT = '}',
  CS_OP_EMPTY_LIST = ']',
  CS_OP_EMPTY_TUPLE = ')',
  CS_OP_PROTO = 0x80,
  CS_OP_TUPLE1 = 0x85,
  CS_OP_TUPLE2 = 0x86,
  CS_OP_TUPLE3 = 0x87,
  CS_OP_NEWTRUE = 0x88,
  CS_OP_NEWFALSE = 0x89,
  CS_OP_LONG1 = 0x8a,
  CS_OP_SHORT_BINUNICODE = 0x8c,
  CS_OP_MEMOIZE = 0x94,
  CS_OP_FRAME = 0x95,
};

typedef struct cs_unpickle_slot_s {
  cJSON *v;        /* NULL once moved into a container */
  uint32_t height; /* 0 for scalars, 1 + the deepest child for containers */
  bool borrowed;   /* v is a memoized string itself, not a copy: copied when it becomes a value,
                      read in place when it becomes a dict key (most BINGETs of strings) */
} cs_unpickle_slot_t;

typedef struct cs_unpickle_s {
  const uint8_t *data;
  size_t len;
  size_t pos;       /* next byte to read */
  size_t op_offset; /* offset of the opcode being executed */
  uint8_t op;

  cs_unpickle_slot_t *stack;
  size_t nstack, capstack;
  size_t *marks; /* stack lengths at each open MARK */
  size_t nmarks, capmarks;
  cJSON **memo; /* memo[i] == NULL: never stored */
  size_t nmemo, capmemo;
  size_t memo_puts;    /* MEMOIZE/BINPUT/LONG_BINPUT executed */
  size_t memoize_next; /* MEMOIZE's own counter, like the viewer's memo_id */
  cJSON **flagged;     /* every value ever marked memoized, to unmark at the end */
  size_t nflagged, capflagged;
  cJSON **grave; /* values out of the tree that a memo entry may still point at */
  size_t ngrave, capgrave;

  size_t max_values; /* see CS_UNPICKLE_MAX_VALUES */
  cs_unpickle_stats_t *st;
  cs_read_error_t *err;
  bool failed;
} cs_unpickle_t;

/* ---------------------------------------------------------------------------------------------
 * Errors and growable arrays
 * ------------------------------------------------------------------------------------------- */

static const char *cs_unpickle_opname(uint8_t op) {
  switch (op) {
  case '(': return "MARK";
  case '.': return "STOP";
  case '0': return "POP";
  case '1': return "POP_MARK";
  case '2': return "DUP";
  case 'F': return "FLOAT";
  case 'I': return "INT";
  case 'J': return "BININT";
  case 'K': return "BININT1";
  case 'L': return "LONG";
  case 'M': return "BININT2";
  case 'N': return "NONE";
  case 'P': return "PERSID";
  case 'Q': return "BINPERSID";
  case 'R': return "REDUCE";
  case 'S': return "STRING";
  case 'T': return "BINSTRING";
  case 'U': return "SHORT_BINSTRING";
  case 'V': return "UNICODE";
  case 'X': return "BINUNICODE";
  case 'a': return "APPEND";
  case 'b': return "BUILD";
  case 'c': return "GLOBAL";
  case 'd': return "DICT";
  case '}': return "EMPTY_DICT";
  case 'e': return "APPENDS";
  case 'g': return "GET";
  case 'h': return "BINGET";
  case 'i': return "INST";
  case 'j': return "LONG_BINGET";
  case 'l': return "LIST";
  case ']': return "EMPTY_LIST";
  case 'o': return "OBJ";
  case 'p': return "PUT";
  case 'q': return "BINPUT";
  case 'r': return "LONG_BINPUT";
  case 's': return "SETITEM";
  case 't': return "TUPLE";
  case ')': return "EMPTY_TUPLE";
  case 'u': return "SETITEMS";
  case 'G': return "BINFLOAT";
  case 'B': return "BINBYTES";
  case 'C': return "SHORT_BINBYTES";
  case 0x80: return "PROTO";
  case 0x81: return "NEWOBJ";
  case 0x82: return "EXT1";
  case 0x83: return "EXT2";
  case 0x84: return "EXT4";
  case 0x85: return "TUPLE1";
  case 0x86: return "TUPLE2";
  case 0x87: return "TUPLE3";
  case 0x88: return "NEWTRUE";
  case 0x89: return "NEWFALSE";
  case 0x8a: return "LONG1";
  case 0x8b: return "LONG4";
  case 0x8c: return "SHORT_BINUNICODE";
  case 0x8d: return "BINUNICODE8";
  case 0x8e: return "BINBYTES8";
  case 0x8f: return "EMPTY_SET";
  case 0x90: return "ADDITEMS";
  case 0x91: return "FROZENSET";
  case 0x92: return "NEWOBJ_EX";
  case 0x93: return "STACK_GLOBAL";
  case 0x94: return "MEMOIZE";
  case 0x95: return "FRAME";
  case 0x96: return "BYTEARRAY8";
  case 0x97: return "NEXT_BUFFER";
  case 0x98: return "READONLY_BUFFER";
  default: return NULL;
  }
}

/* Records the first error (at the current opcode) and returns false. */
CS_PRINTF(2, 3) static bool cs_unpickle_fail(cs_unpickle_t *u, const char *fmt, ...) {
  if (u->failed) return false;
  u->failed = true;
  u->err->offset = u->op_offset;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(u->err->message, sizeof u->err->message, fmt, ap);
  va_end(ap);
  return false;
}

static bool cs_unpickle_oom(cs_unpickle_t *u) {
  return cs_unpickle_fail(u, "out of host memory");
}

/* Makes room for one more element of size `size` in *arr (capacity *cap, count n). */
static bool cs_unpickle_reserve(cs_unpickle_t *u, void **arr, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return true;
  size_t ncap = *cap ? *cap * 2 : 64;
  if (ncap > SIZE_MAX / size) return cs_unpickle_oom(u);
  void *p = realloc(*arr, ncap * size);
  if (p == NULL) return cs_unpickle_oom(u);
  *arr = p;
  *cap = ncap;
  return true;
}

static bool cs_unpickle_push_ptr(cs_unpickle_t *u, cJSON ***arr, size_t *n, size_t *cap, cJSON *v) {
  void *a = *arr;
  if (!cs_unpickle_reserve(u, &a, cap, *n, sizeof(cJSON *))) return false;
  *arr = a;
  (*arr)[(*n)++] = v;
  return true;
}

/* ---------------------------------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------------------------------- */

static bool cs_unpickle_too_many(cs_unpickle_t *u) {
  return cs_unpickle_fail(u, "a %zu-byte pickle that expands to more than %zu values (memo references are copied)",
                          u->len, u->max_values);
}

/* Counts new values against the limit. */
static bool cs_unpickle_count(cs_unpickle_t *u, size_t n) {
  u->st->values += n;
  if (u->st->values > u->max_values) return cs_unpickle_too_many(u);
  return true;
}

/* While parsing, a container's valueint (unused by cJSON for arrays and objects) holds the number
 * of values in its subtree, so that a BINGET can be refused before it copies. Cleared at the end. */
static size_t cs_unpickle_nodes(const cJSON *v) {
  return (cJSON_IsArray(v) || cJSON_IsObject(v)) ? (size_t)v->valueint : 1;
}

static cJSON *cs_unpickle_new_container(bool dict) {
  cJSON *v = dict ? cJSON_CreateObject() : cJSON_CreateArray();
  if (v != NULL) v->valueint = 1;
  return v;
}

/* Takes ownership of v unless borrowed: on failure an owned v is freed. */
static bool cs_unpickle_push_slot(cs_unpickle_t *u, cJSON *v, uint32_t height, bool borrowed) {
  if (v == NULL) return cs_unpickle_oom(u);
  void *a = u->stack;
  if (!cs_unpickle_reserve(u, &a, &u->capstack, u->nstack, sizeof(cs_unpickle_slot_t))) {
    if (!borrowed) cJSON_Delete(v);
    return false;
  }
  u->stack = a;
  u->stack[u->nstack++] = (cs_unpickle_slot_t){v, height, borrowed};
  return true;
}

static bool cs_unpickle_push(cs_unpickle_t *u, cJSON *v, uint32_t height) {
  return cs_unpickle_push_slot(u, v, height, false);
}

static bool cs_unpickle_push_new(cs_unpickle_t *u, cJSON *v, uint32_t height) {
  if (v == NULL) return cs_unpickle_oom(u);
  if (!cs_unpickle_count(u, 1)) {
    cJSON_Delete(v);
    return false;
  }
  return cs_unpickle_push(u, v, height);
}

/* An integer: a Number (rounded to the nearest double, as the viewer's Number(BigInt) does), with the
 * exact digits in valuestring when it is above 2^53 in magnitude. */
static bool cs_unpickle_push_int(cs_unpickle_t *u, int64_t x) {
  cJSON *v = cJSON_CreateNumber((double)x);
  if (v == NULL) return cs_unpickle_oom(u);
  if (x > ((int64_t)1 << 53) || x < -((int64_t)1 << 53)) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%" PRId64, x);
    v->valuestring = cJSON_malloc((size_t)n + 1);
    if (v->valuestring == NULL) {
      cJSON_Delete(v);
      return cs_unpickle_oom(u);
    }
    memcpy(v->valuestring, buf, (size_t)n + 1);
  }
  return cs_unpickle_push_new(u, v, 0);
}

/* A string from n UTF-8 bytes; invalid sequences become U+FFFD, as the viewer's TextDecoder does. */
static bool cs_unpickle_push_str(cs_unpickle_t *u, const uint8_t *s, size_t n) {
  bool valid;
  size_t out_len = cs_utf8_fixed_len(s, n, &valid);
  char *buf = cJSON_malloc(out_len + 1);
  if (buf == NULL) return cs_unpickle_oom(u);
  if (valid) memcpy(buf, s, n);
  else cs_utf8_fix(buf, s, n);
  buf[out_len] = '\0';
  cJSON *v = cJSON_CreateNull();
  if (v == NULL) {
    cJSON_free(buf);
    return cs_unpickle_oom(u);
  }
  v->type = cJSON_String;
  v->valuestring = buf;
  return cs_unpickle_push_new(u, v, 0);
}

/* Dict keys that occur in snapshots are shared constant strings (cJSON_StringIsConst): millions of
 * frame and trace-entry dicts then need no key allocation. Sorted for bsearch. */
static const char *const cs_unpickle_known_keys[] = {
    "PYTORCH_CUDA_ALLOC_CONF",
    "action",
    "active_size",
    "addr",
    "address",
    "allocated_size",
    "allocator_settings",
    "blocks",
    "category",
    "compile_context",
    "device",
    "device_free",
    "device_traces",
    "external_annotations",
    "filename",
    "forward_frames",
    "frames",
    "history",
    "is_expandable",
    "line",
    "name",
    "real_size",
    "requested_size",
    "segment_pool_id",
    "segment_type",
    "segments",
    "size",
    "state",
    "stream",
    "time_us",
    "total_size",
    "user_metadata",
};

static int cs_unpickle_keycmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *cs_unpickle_known_key(const char *s) {
  const char *const *hit = bsearch(&s, cs_unpickle_known_keys, CS_ARRAY_SIZE(cs_unpickle_known_keys),
                                   sizeof cs_unpickle_known_keys[0], cs_unpickle_keycmp);
  return hit ? *hit : NULL;
}

/* Gives up a value taken off the stack. A memoized one may still be copied: keep it until the end. */
static bool cs_unpickle_discard(cs_unpickle_t *u, cJSON *v) {
  if (v->type & CS_UNPICKLE_MEMO_FLAG) {
    if (!cs_unpickle_push_ptr(u, &u->grave, &u->ngrave, &u->capgrave, v)) return false;
    return true;
  }
  cJSON_Delete(v);
  return true;
}

/* Turns the key value k into item->string. JavaScript property names are strings; an integer key
 * becomes its decimal digits (what `d[5] = v` does); every other key type is an error. On success k
 * has been consumed (a borrowed k, the memoized original, is only read). */
static bool cs_unpickle_set_key(cs_unpickle_t *u, cJSON *item, cJSON *k, bool borrowed) {
  char numbuf[32];
  const char *text;
  if (cJSON_IsString(k) && k->valuestring != NULL) {
    text = k->valuestring;
  } else if (cJSON_IsNumber(k) && k->valuestring != NULL) {
    text = k->valuestring; /* an exact integer above 2^53 */
  } else if (cJSON_IsNumber(k) && isfinite(k->valuedouble) && k->valuedouble == floor(k->valuedouble) &&
             fabs(k->valuedouble) <= CS_TWO_POW_53) {
    snprintf(numbuf, sizeof numbuf, "%" PRId64, (int64_t)k->valuedouble);
    text = numbuf;
  } else {
    const char *what = cJSON_IsNumber(k) ? "a float"
                       : cJSON_IsBool(k) ? "a bool"
                       : cJSON_IsNull(k) ? "None"
                       : cJSON_IsArray(k) ? "a list or tuple"
                                          : "a dict";
    return cs_unpickle_fail(u, "dict key is %s (keys must be strings or integers)", what);
  }
  const char *known = cs_unpickle_known_key(text);
  if (known != NULL) {
    item->string = (char *)(uintptr_t)known;
    item->type |= cJSON_StringIsConst;
  } else if (text == k->valuestring && !borrowed && !(k->type & CS_UNPICKLE_MEMO_FLAG)) {
    item->string = k->valuestring; /* steal it */
    k->valuestring = NULL;
    item->type &= ~cJSON_StringIsConst;
  } else {
    size_t n = strlen(text);
    char *dup = cJSON_malloc(n + 1);
    if (dup == NULL) return cs_unpickle_oom(u);
    memcpy(dup, text, n + 1);
    item->string = dup;
    item->type &= ~cJSON_StringIsConst;
  }
  return borrowed ? true : cs_unpickle_discard(u, k);
}

/* Deep copy for BINGET. Copies are never memoized themselves. *height receives the copy's height.
 * Recursion is bounded: originals were built within CS_READER_MAX_DEPTH. */
static cJSON *cs_unpickle_copy(cs_unpickle_t *u, const cJSON *src, uint32_t *height) {
  if (!cs_unpickle_count(u, 1)) return NULL;
  cJSON *c = cJSON_CreateNull();
  if (c == NULL) {
    cs_unpickle_oom(u);
    return NULL;
  }
  c->type = src->type & ~(CS_UNPICKLE_MEMO_FLAG | cJSON_IsReference | cJSON_StringIsConst);
  c->valueint = src->valueint;
  c->valuedouble = src->valuedouble;
  if (src->valuestring != NULL) {
    size_t n = strlen(src->valuestring);
    c->valuestring = cJSON_malloc(n + 1);
    if (c->valuestring == NULL) {
      cJSON_Delete(c);
      cs_unpickle_oom(u);
      return NULL;
    }
    memcpy(c->valuestring, src->valuestring, n + 1);
  }
  uint32_t h = (cJSON_IsArray(src) || cJSON_IsObject(src)) ? 1 : 0;
  cJSON *tail = NULL;
  for (const cJSON *s = src->child; s != NULL; s = s->next) {
    uint32_t ch = 0;
    cJSON *cc = cs_unpickle_copy(u, s, &ch);
    if (cc == NULL) {
      cJSON_Delete(c);
      return NULL;
    }
    if (s->string != NULL) {
      if (s->type & cJSON_StringIsConst) {
        cc->string = s->string;
        cc->type |= cJSON_StringIsConst;
      } else {
        size_t n = strlen(s->string);
        cc->string = cJSON_malloc(n + 1);
        if (cc->string == NULL) {
          cJSON_Delete(cc);
          cJSON_Delete(c);
          cs_unpickle_oom(u);
          return NULL;
        }
        memcpy(cc->string, s->string, n + 1);
      }
    }
    if (tail == NULL) {
      c->child = cc;
    } else {
      tail->next = cc;
      cc->prev = tail;
    }
    tail = cc;
    c->child->prev = tail; /* cJSON keeps the last child in child->prev */
    if (ch + 1 > h) h = ch + 1;
  }
  *height = h;
  return c;
}

/* ---------------------------------------------------------------------------------------------
 * Stack discipline: values below the innermost open MARK are out of reach, as in Python
 * ------------------------------------------------------------------------------------------- */

static size_t cs_unpickle_base(const cs_unpickle_t *u) {
  return u->nmarks ? u->marks[u->nmarks - 1] : 0;
}

static bool cs_unpickle_need(cs_unpickle_t *u, size_t k) {
  if (u->nstack - cs_unpickle_base(u) >= k) return true;
  return cs_unpickle_fail(u, "%s needs %zu value%s on the stack, found %zu", cs_unpickle_opname(u->op), k,
                          k == 1 ? "" : "s", u->nstack - cs_unpickle_base(u));
}

/* Pops the innermost MARK; *container receives the index of the value just below it (or SIZE_MAX
 * if want_container is false). */
static bool cs_unpickle_pop_mark(cs_unpickle_t *u, bool want_container, size_t *mark, size_t *container) {
  if (u->nmarks == 0) return cs_unpickle_fail(u, "%s without a MARK", cs_unpickle_opname(u->op));
  *mark = u->marks[--u->nmarks];
  if (!want_container) return true;
  if (*mark == 0 || *mark - 1 < cs_unpickle_base(u))
    return cs_unpickle_fail(u, "%s has no container below its MARK", cs_unpickle_opname(u->op));
  *container = *mark - 1;
  return true;
}

/* Moves stack slot `from` into the container in slot `to` (under `key` for dicts). */
static bool cs_unpickle_attach(cs_unpickle_t *u, size_t to, size_t from) {
  cs_unpickle_slot_t *c = &u->stack[to], *s = &u->stack[from];
  if (s->borrowed) {
    uint32_t ch = 0;
    cJSON *copy = cs_unpickle_copy(u, s->v, &ch);
    if (copy == NULL) return false;
    s->v = copy;
    s->height = ch;
    s->borrowed = false;
  }
  uint32_t h = s->height + 1;
  if (h > CS_READER_MAX_DEPTH)
    return cs_unpickle_fail(u, "containers nested more than %d deep", CS_READER_MAX_DEPTH);
  cJSON_AddItemToArray(c->v, s->v); /* O(1): cJSON appends after child->prev */
  s->v = NULL;
  if (h > c->height) c->height = h;
  c->v->valueint += (int)cs_unpickle_nodes(s->v); /* bounded by max_values < INT_MAX */
  return true;
}

static bool cs_unpickle_attach_pair(cs_unpickle_t *u, size_t to, size_t kslot, size_t vslot) {
  cs_unpickle_slot_t *ks = &u->stack[kslot];
  if (u->stack[vslot].borrowed) {
    /* the value must be a copy before it gets a key */
    uint32_t ch = 0;
    cJSON *copy = cs_unpickle_copy(u, u->stack[vslot].v, &ch);
    if (copy == NULL) return false;
    u->stack[vslot] = (cs_unpickle_slot_t){copy, ch, false};
  }
  if (!cs_unpickle_set_key(u, u->stack[vslot].v, ks->v, ks->borrowed)) return false;
  ks->v = NULL;
  ks->borrowed = false;
  return cs_unpickle_attach(u, to, vslot);
}

static bool cs_unpickle_is_list(const cJSON *v) {
  return cJSON_IsArray(v);
}

static bool cs_unpickle_is_dict(const cJSON *v) {
  return cJSON_IsObject(v);
}

/* Drops slots [from, nstack): they have all been moved (NULL) on success; on failure the caller's
 * cleanup frees what is left. */
static void cs_unpickle_truncate(cs_unpickle_t *u, size_t from) {
  for (size_t i = from; i < u->nstack; i++)
    if (u->stack[i].v != NULL) return; /* leave them for the cleanup */
  u->nstack = from;
}

static bool cs_unpickle_appends(cs_unpickle_t *u) {
  size_t mark, cont;
  if (!cs_unpickle_pop_mark(u, true, &mark, &cont)) return false;
  if (!cs_unpickle_is_list(u->stack[cont].v)) return cs_unpickle_fail(u, "APPENDS to a value that is not a list");
  size_t n = u->nstack - mark;
  cs_unpickle_stats_t *st = u->st;
  if (n > st->appends_max) {
    st->appends_max = n;
    st->appends_max_offset = u->op_offset;
  }
  if (n > CS_UNPICKLE_BATCH_WARN && st->appends_over_warn++ == 0) st->appends_first_over_offset = u->op_offset;
  for (size_t i = mark; i < u->nstack; i++)
    if (!cs_unpickle_attach(u, cont, i)) return false;
  cs_unpickle_truncate(u, mark);
  return true;
}

/* SETITEMS (container below the mark) or DICT (a new dict). */
static bool cs_unpickle_setitems(cs_unpickle_t *u, bool new_dict) {
  size_t mark, cont = 0;
  if (!cs_unpickle_pop_mark(u, !new_dict, &mark, &cont)) return false;
  size_t n = u->nstack - mark;
  if (n % 2 != 0) return cs_unpickle_fail(u, "%s with an odd number of values (%zu)", cs_unpickle_opname(u->op), n);
  if (new_dict) {
    cJSON *d = cs_unpickle_new_container(true);
    if (d == NULL) return cs_unpickle_oom(u);
    if (!cs_unpickle_count(u, 1)) {
      cJSON_Delete(d);
      return false;
    }
    /* The new dict takes the slot below the pairs: shift them up by one. */
    if (!cs_unpickle_push(u, d, 1)) return false;
    memmove(&u->stack[mark + 1], &u->stack[mark], n * sizeof u->stack[0]);
    u->stack[mark] = (cs_unpickle_slot_t){d, 1, false};
    cont = mark;
    mark++;
  } else {
    if (!cs_unpickle_is_dict(u->stack[cont].v)) return cs_unpickle_fail(u, "SETITEMS on a value that is not a dict");
    cs_unpickle_stats_t *st = u->st;
    if (n / 2 > st->setitems_max) {
      st->setitems_max = n / 2;
      st->setitems_max_offset = u->op_offset;
    }
    if (n / 2 > CS_UNPICKLE_BATCH_WARN && st->setitems_over_warn++ == 0)
      st->setitems_first_over_offset = u->op_offset;
  }
  for (size_t i = mark; i < u->nstack; i += 2)
    if (!cs_unpickle_attach_pair(u, cont, i, i + 1)) return false;
  cs_unpickle_truncate(u, mark);
  return true;
}

/* LIST/TUPLE (all values above the mark) or TUPLE1/2/3 (the top k). */
static bool cs_unpickle_make_list(cs_unpickle_t *u, bool from_mark, size_t k, bool tuple) {
  size_t first;
  if (from_mark) {
    size_t cont;
    if (!cs_unpickle_pop_mark(u, false, &first, &cont)) return false;
  } else {
    if (!cs_unpickle_need(u, k)) return false;
    first = u->nstack - k;
  }
  size_t n = u->nstack - first;
  cJSON *a = cs_unpickle_new_container(false);
  if (a == NULL) return cs_unpickle_oom(u);
  if (tuple) a->type |= CS_READER_TUPLE;
  if (!cs_unpickle_count(u, 1)) {
    cJSON_Delete(a);
    return false;
  }
  if (!cs_unpickle_push(u, a, 1)) return false;
  memmove(&u->stack[first + 1], &u->stack[first], n * sizeof u->stack[0]);
  u->stack[first] = (cs_unpickle_slot_t){a, 1, false};
  for (size_t i = first + 1; i < u->nstack; i++)
    if (!cs_unpickle_attach(u, first, i)) return false;
  cs_unpickle_truncate(u, first + 1);
  return true;
}

static bool cs_unpickle_memo_put(cs_unpickle_t *u, size_t idx) {
  if (!cs_unpickle_need(u, 1)) return false;
  if (idx > u->memo_puts + CS_UNPICKLE_MEMO_SLACK)
    return cs_unpickle_fail(u, "memo index %zu is out of range (only %zu values were memoized before)", idx,
                            u->memo_puts);
  while (u->nmemo <= idx) {
    void *a = u->memo;
    if (!cs_unpickle_reserve(u, &a, &u->capmemo, u->nmemo, sizeof(cJSON *))) return false;
    u->memo = a;
    u->memo[u->nmemo++] = NULL;
  }
  cJSON *v = u->stack[u->nstack - 1].v;
  if (!(v->type & CS_UNPICKLE_MEMO_FLAG)) {
    if (!cs_unpickle_push_ptr(u, &u->flagged, &u->nflagged, &u->capflagged, v)) return false;
    v->type |= CS_UNPICKLE_MEMO_FLAG;
  }
  u->memo[idx] = v;
  u->memo_puts++;
  return true;
}

static bool cs_unpickle_memo_get(cs_unpickle_t *u, size_t idx) {
  if (idx >= u->nmemo || u->memo[idx] == NULL)
    return cs_unpickle_fail(u, "memo index %zu was never stored", idx);
  u->st->memo_copies++;
  if (u->st->values + cs_unpickle_nodes(u->memo[idx]) > u->max_values) return cs_unpickle_too_many(u);
  if (cJSON_IsString(u->memo[idx])) return cs_unpickle_push_slot(u, u->memo[idx], 0, true);
  uint32_t h = 0;
  cJSON *c = cs_unpickle_copy(u, u->memo[idx], &h);
  if (c == NULL) return false;
  return cs_unpickle_push(u, c, h);
}

/* ---------------------------------------------------------------------------------------------
 * The opcode loop
 * ------------------------------------------------------------------------------------------- */

/* Takes n argument bytes; NULL (with the error set) if the file ends first. */
static const uint8_t *cs_unpickle_take(cs_unpickle_t *u, size_t n) {
  if (u->len - u->pos < n) {
    cs_unpickle_fail(u, "truncated: %s needs %zu more byte%s, %zu left", cs_unpickle_opname(u->op), n,
                     n == 1 ? "" : "s", u->len - u->pos);
    return NULL;
  }
  const uint8_t *p = u->data + u->pos;
  u->pos += n;
  return p;
}

static uint32_t cs_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One opcode. *done is set by STOP. */
static bool cs_unpickle_step(cs_unpickle_t *u, bool *done) {
  const uint8_t *p;
  switch (u->op) {
  case CS_OP_PROTO:
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    if (p[0] < 2 || p[0] > 4)
      return cs_unpickle_fail(u, "pickle protocol %u is not supported (the viewer reads protocols 2 to 4: "
                                 "'Unhandled version %u')",
                              p[0], p[0]);
    u->st->protocol = p[0];
    return true;
  case CS_OP_FRAME:
    return cs_unpickle_take(u, 8) != NULL; /* the viewer skips the length */
  case CS_OP_STOP:
    if (!cs_unpickle_need(u, 1)) return false;
    *done = true;
    return true;
  case CS_OP_MARK: {
    void *a = u->marks;
    if (!cs_unpickle_reserve(u, &a, &u->capmarks, u->nmarks, sizeof(size_t))) return false;
    u->marks = a;
    u->marks[u->nmarks++] = u->nstack;
    return true;
  }
  case CS_OP_EMPTY_DICT:
    return cs_unpickle_push_new(u, cs_unpickle_new_container(true), 1);
  case CS_OP_EMPTY_LIST:
    return cs_unpickle_push_new(u, cs_unpickle_new_container(false), 1);
  case CS_OP_EMPTY_TUPLE: {
    cJSON *t = cs_unpickle_new_container(false);
    if (t != NULL) t->type |= CS_READER_TUPLE;
    return cs_unpickle_push_new(u, t, 1);
  }
  case CS_OP_SETITEM: {
    if (!cs_unpickle_need(u, 3)) return false;
    size_t d = u->nstack - 3;
    if (!cs_unpickle_is_dict(u->stack[d].v)) return cs_unpickle_fail(u, "SETITEM on a value that is not a dict");
    if (!cs_unpickle_attach_pair(u, d, d + 1, d + 2)) return false;
    cs_unpickle_truncate(u, d + 1);
    return true;
  }
  case CS_OP_SETITEMS:
    return cs_unpickle_setitems(u, false);
  case CS_OP_DICT:
    return cs_unpickle_setitems(u, true);
  case CS_OP_APPEND: {
    if (!cs_unpickle_need(u, 2)) return false;
    size_t l = u->nstack - 2;
    if (!cs_unpickle_is_list(u->stack[l].v)) return cs_unpickle_fail(u, "APPEND to a value that is not a list");
    if (!cs_unpickle_attach(u, l, l + 1)) return false;
    cs_unpickle_truncate(u, l + 1);
    return true;
  }
  case CS_OP_APPENDS:
    return cs_unpickle_appends(u);
  case CS_OP_LIST:
    return cs_unpickle_make_list(u, true, 0, false);
  case CS_OP_TUPLE:
    return cs_unpickle_make_list(u, true, 0, true);
  case CS_OP_TUPLE1:
    return cs_unpickle_make_list(u, false, 1, true);
  case CS_OP_TUPLE2:
    return cs_unpickle_make_list(u, false, 2, true);
  case CS_OP_TUPLE3:
    return cs_unpickle_make_list(u, false, 3, true);
  case CS_OP_BININT:
    if ((p = cs_unpickle_take(u, 4)) == NULL) return false;
    return cs_unpickle_push_int(u, (int64_t)(int32_t)cs_le32(p));
  case CS_OP_BININT1:
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    return cs_unpickle_push_int(u, p[0]);
  case CS_OP_BININT2:
    if ((p = cs_unpickle_take(u, 2)) == NULL) return false;
    return cs_unpickle_push_int(u, (int64_t)p[0] | (int64_t)p[1] << 8);
  case CS_OP_LONG1: {
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    size_t n = p[0];
    if (n > 8)
      return cs_unpickle_fail(u, "integer too large (LONG1 of %zu bytes; at most 8 fit int64)", n);
    if ((p = cs_unpickle_take(u, n)) == NULL) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) x |= (uint64_t)p[i] << (8 * i);
    if (n > 0 && n < 8 && (p[n - 1] & 0x80)) x |= ~(((uint64_t)1 << (8 * n)) - 1); /* sign-extend */
    int64_t sx;
    memcpy(&sx, &x, sizeof sx);
    return cs_unpickle_push_int(u, sx);
  }
  case CS_OP_BINFLOAT: {
    if ((p = cs_unpickle_take(u, 8)) == NULL) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < 8; i++) x = x << 8 | p[i]; /* big-endian */
    double d;
    memcpy(&d, &x, sizeof d);
    cJSON *v = cJSON_CreateNumber(d);
    if (v != NULL) v->type |= CS_READER_FLOAT;
    return cs_unpickle_push_new(u, v, 0);
  }
  case CS_OP_NONE:
    return cs_unpickle_push_new(u, cJSON_CreateNull(), 0);
  case CS_OP_NEWTRUE:
    return cs_unpickle_push_new(u, cJSON_CreateTrue(), 0);
  case CS_OP_NEWFALSE:
    return cs_unpickle_push_new(u, cJSON_CreateFalse(), 0);
  case CS_OP_SHORT_BINUNICODE: {
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    size_t n = p[0];
    if ((p = cs_unpickle_take(u, n)) == NULL) return false;
    return cs_unpickle_push_str(u, p, n);
  }
  case CS_OP_BINUNICODE: {
    if ((p = cs_unpickle_take(u, 4)) == NULL) return false;
    size_t n = cs_le32(p);
    if ((p = cs_unpickle_take(u, n)) == NULL) return false;
    return cs_unpickle_push_str(u, p, n);
  }
  case CS_OP_MEMOIZE:
    if (!cs_unpickle_memo_put(u, u->memoize_next)) return false;
    u->memoize_next++;
    return true;
  case CS_OP_BINPUT:
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    return cs_unpickle_memo_put(u, p[0]);
  case CS_OP_LONG_BINPUT:
    if ((p = cs_unpickle_take(u, 4)) == NULL) return false;
    return cs_unpickle_memo_put(u, cs_le32(p));
  case CS_OP_BINGET:
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    return cs_unpickle_memo_get(u, p[0]);
  case CS_OP_LONG_BINGET:
    if ((p = cs_unpickle_take(u, 4)) == NULL) return false;
    return cs_unpickle_memo_get(u, cs_le32(p));
  default: {
    const char *name = cs_unpickle_opname(u->op);
    char shown[8] = "";
    if (u->op >= 0x20 && u->op < 0x7f) snprintf(shown, sizeof shown, " '%c'", u->op);
    if (name != NULL)
      return cs_unpickle_fail(u, "unsupported pickle opcode 0x%02x%s (%s): the viewer throws 'UNKNOWN OPCODE: %u'",
                              u->op, shown, name, u->op);
    return cs_unpickle_fail(u, "unknown pickle opcode 0x%02x%s: the viewer throws 'UNKNOWN OPCODE: %u'", u->op,
                            shown, u->op);
  }
  }
}

static void cs_unpickle_finish(cJSON *tree);

static void cs_unpickle_cleanup(cs_unpickle_t *u) {
  for (size_t i = 0; i < u->nflagged; i++) u->flagged[i]->type &= ~CS_UNPICKLE_MEMO_FLAG;
  for (size_t i = 0; i < u->nstack; i++)
    if (!u->stack[i].borrowed) cJSON_Delete(u->stack[i].v);
  for (size_t i = 0; i < u->ngrave; i++) cJSON_Delete(u->grave[i]);
  free(u->stack);
  free(u->marks);
  free(u->memo);
  free(u->flagged);
  free(u->grave);
}

cJSON *cs_unpickle(const uint8_t *data, size_t len, cs_unpickle_stats_t *stats, cs_read_error_t *err) {
  cs_unpickle_stats_t local_stats;
  cs_read_error_t local_err;
  if (stats == NULL) stats = &local_stats;
  if (err == NULL) err = &local_err;
  memset(stats, 0, sizeof *stats);
  stats->protocol = -1;
  err->offset = 0;
  err->message[0] = '\0';

  cs_unpickle_t u;
  memset(&u, 0, sizeof u);
  u.data = data;
  u.len = len;
  u.st = stats;
  u.err = err;
  u.max_values = len < CS_UNPICKLE_MAX_VALUES / CS_UNPICKLE_VALUES_PER_BYTE ? len * CS_UNPICKLE_VALUES_PER_BYTE
                                                                            : CS_UNPICKLE_MAX_VALUES;
  if (u.max_values < CS_UNPICKLE_MIN_VALUES) u.max_values = CS_UNPICKLE_MIN_VALUES;

  bool done = false;
  while (!done) {
    u.op_offset = u.pos;
    if (u.pos >= u.len) {
      cs_unpickle_fail(&u, "truncated: the pickle ends without STOP");
      break;
    }
    u.op = u.data[u.pos++];
    if (!cs_unpickle_step(&u, &done)) break;
  }
  cJSON *root = NULL;
  if (done && !u.failed) {
    cs_unpickle_slot_t *top = &u.stack[u.nstack - 1];
    if (top->borrowed) {
      uint32_t h = 0;
      root = cs_unpickle_copy(&u, top->v, &h);
    } else {
      root = top->v;
      top->v = NULL;
    }
    stats->end_offset = u.pos;
  }
  cs_unpickle_cleanup(&u); /* unmarks root too: it is in u.flagged if memoized */
  if (root != NULL) cs_unpickle_finish(root);
  return root;
}

/* ---------------------------------------------------------------------------------------------
 * Duplicate keys (shared with the JSON reader)
 * ------------------------------------------------------------------------------------------- */

typedef struct cs_dedupe_ent_s {
  cJSON *item;
  size_t pos;
} cs_dedupe_ent_t;

static const char *cs_dedupe_key(const cJSON *item) {
  return item->string ? item->string : "";
}

static int cs_dedupe_cmp(const void *a, const void *b) {
  const cs_dedupe_ent_t *x = a, *y = b;
  int c = strcmp(cs_dedupe_key(x->item), cs_dedupe_key(y->item));
  if (c != 0) return c;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static bool cs_dedupe_has_dups_small(const cJSON *obj, size_t n) {
  if (n > 16) return true; /* let the sort decide */
  for (const cJSON *a = obj->child; a != NULL; a = a->next)
    for (const cJSON *b = a->next; b != NULL; b = b->next)
      if (strcmp(cs_dedupe_key(a), cs_dedupe_key(b)) == 0) return true;
  return false;
}

static size_t cs_dedupe_object(cJSON *obj) {
  size_t n = 0;
  for (cJSON *c = obj->child; c != NULL; c = c->next) n++;
  if (n < 2 || !cs_dedupe_has_dups_small(obj, n)) return 0;
  cs_dedupe_ent_t *ents = malloc(n * sizeof *ents);
  if (ents == NULL) return 0; /* out of memory: leave duplicates (cJSON finds the first) */
  size_t i = 0;
  for (cJSON *c = obj->child; c != NULL; c = c->next, i++) {
    ents[i].item = c;
    ents[i].pos = i;
  }
  qsort(ents, n, sizeof *ents, cs_dedupe_cmp);
  size_t removed = 0;
  for (size_t g = 0; g < n;) {
    size_t e = g + 1;
    while (e < n && strcmp(cs_dedupe_key(ents[g].item), cs_dedupe_key(ents[e].item)) == 0) e++;
    if (e - g > 1) {
      cJSON *first = ents[g].item, *last = ents[e - 1].item;
      for (size_t k = g + 1; k + 1 < e; k++) cJSON_Delete(cJSON_DetachItemViaPointer(obj, ents[k].item));
      cJSON_DetachItemViaPointer(obj, last);
      cJSON_ReplaceItemViaPointer(obj, first, last); /* frees first */
      removed += e - g - 1;
    }
    g = e;
  }
  free(ents);
  return removed;
}

size_t cs_reader_dedupe_keys(cJSON *tree) {
  size_t removed = 0;
  if (tree == NULL) return 0;
  if (cJSON_IsObject(tree)) removed += cs_dedupe_object(tree);
  for (cJSON *c = tree->child; c != NULL; c = c->next)
    if (cJSON_IsObject(c) || cJSON_IsArray(c)) removed += cs_reader_dedupe_keys(c);
  return removed;
}

/* Clears the subtree counts kept in containers' valueint, and removes duplicate keys. */
static void cs_unpickle_finish(cJSON *tree) {
  if (cJSON_IsObject(tree)) cs_dedupe_object(tree);
  if (cJSON_IsArray(tree) || cJSON_IsObject(tree)) tree->valueint = 0;
  for (cJSON *c = tree->child; c != NULL; c = c->next)
    if (cJSON_IsObject(c) || cJSON_IsArray(c)) cs_unpickle_finish(c);
}

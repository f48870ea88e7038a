/* SPDX-License-Identifier: Apache-2.0 */
/* The viewer's pickle subset, read into the snapshot model (contract in reader/unpickle.h).
 *
 * The value stack holds model values: closed ones, and containers still open (model/build.h). A
 * container is closed when it is put into another one (APPEND(S), SETITEM(S), LIST, TUPLE*, DICT),
 * when the memo hands it out again (BINGET), or when STOP returns it: picklers write a container out
 * whole before they use it again, so what is closed is complete. (PyTorch's pickles BINGET the empty
 * `frames` list of a segment for its blocks while the segment's dict is still being filled.) A memo
 * entry is the value itself, shared, never copied: BINGET pushes the same word again. Only the
 * indices some GET names are kept (a scan of the opcodes first: reader/memo_refs.h); a put of any
 * other is counted and checked, nothing more. A memo entry made while its container was open is
 * updated when the container closes. A change to a container
 * already closed (APPENDS after a BINGET of it) is an error: only a recursive structure does that,
 * none occurs in a snapshot, and the model is immutable once built.
 *
 * Memory: every opcode adds at most a few words (the stack, the memo, the arena), so the model is
 * bounded by a constant times the pickle's size, whatever the pickle (bench/README.md, "Reading").
 * Every length is checked against the bytes that remain; nesting is bounded by the builder.
 *
 * Time: every opcode costs a constant plus its own bytes (hashed once by the model, with a keyed
 * hash: model/hash.h), so reading is linear in the pickle's size (docs/tool.md, "What a file can
 * cost"); the scan for the memo's GETs is one more pass over the opcodes. Nothing scans the memo:
 * a memo entry of an open container is linked from that container, and its close visits only its
 * own links. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "common/cs_utf8.h"
#include "model/build.h"
#include "model/region.h"
#include "reader/memo_refs.h"
#include "memviz/pickle_ops.h"
#include "reader/unpickle.h"

/* Memo indices may run ahead of the number of values stored so far by at most this much. Real
 * picklers number their memo entries 0, 1, 2, ...; the bound keeps the memo table proportional to
 * the input, whatever index a hostile LONG_BINPUT names. */
#define CS_UNPICKLE_MEMO_SLACK ((size_t)1024)

/* Slots of the cache of strings read before (a power of two). Python's pickler writes a string
 * again for every object that holds it (a million "size" keys in a trace whose dicts were built
 * apart); the cache finds such a string's id with one compare, where the model's table would check
 * its UTF-8, hash it with its keyed hash and probe. */
#define CS_UNPICKLE_RECENT_STRS 4096u


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

typedef struct cs_unpickle_s {
  const uint8_t *data;
  size_t len;
  size_t pos;       /* next byte to read */
  size_t op_offset; /* offset of the opcode being executed */
  uint8_t op;

  cs_build_t *b;
  cs_val_t *stack;
  size_t nstack, capstack;
  size_t *marks; /* stack lengths at each open MARK */
  size_t nmarks, capmarks;
  /* The memo: one value per index some GET names (reader/memo_refs.h), in index order; puts of
   * the other indices are only counted. CS_VAL_ABSENT: not stored yet. */
  cs_memo_refs_t refs;
  cs_val_t *memo;
  size_t memo_puts;    /* MEMOIZE/BINPUT/LONG_BINPUT executed */
  size_t memoize_next; /* MEMOIZE's own counter, like the viewer's memo_id */
  /* By open index (cs_build_open_index), what an open container needs: its stack slot, which
   * never moves, and the memo entries that name it, updated at its close. Those are a list
   * (memo: node + 1 in links, 0 for none) of memo indices, so that a close visits only its own
   * entries and a put costs O(1) whatever else is open. A link whose memo entry was replaced since
   * stays in its list and is skipped at the close (the entry no longer holds the handle). Drained
   * nodes go to a free list: the nodes in use are at most the puts of containers still open. */
  struct cs_unpickle_open_s {
    size_t slot;
    size_t memo;
  } *opens;
  size_t capopens;
  struct cs_unpickle_memo_link_s {
    size_t memo_slot; /* in memo[] */
    size_t next; /* node + 1, 0 at the end */
  } *links;
  size_t nlinks, caplinks;
  size_t free_link; /* node + 1 of the first free node, 0 for none */
  char *strbuf; /* UTF-8 repair of a string */
  size_t capstrbuf;
  /* Strings read before, by a cheap hash of their bytes: id + 1, 0 for none (see
   * cs_unpickle_recent_slot). */
  uint32_t recent_str[CS_UNPICKLE_RECENT_STRS];

  cs_unpickle_stats_t *st;
  cs_read_error_t *err;
  bool failed;
  bool ran_out; /* the data ended first (for the head: more bytes may help) */
} cs_unpickle_t;

/* ---------------------------------------------------------------------------------------------
 * Errors and growable arrays
 * ------------------------------------------------------------------------------------------- */

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

static bool cs_unpickle_build_failed(cs_unpickle_t *u) {
  return cs_unpickle_fail(u, "%s", cs_build_error(u->b));
}

/* Makes room for one more element of size `size` in *arr (capacity *cap, count n). */
static bool cs_unpickle_reserve(cs_unpickle_t *u, void **arr, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return true;
  size_t ncap = *cap ? *cap * 2 : 64;
  if (ncap > SIZE_MAX / size) return cs_unpickle_fail(u, "out of host memory");
  void *p = cs_region_resize(*arr, *cap * size, ncap * size);
  if (p == NULL) return cs_unpickle_fail(u, "out of host memory");
  *arr = p;
  *cap = ncap;
  return true;
}

/* ---------------------------------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------------------------------- */

static bool cs_unpickle_push(cs_unpickle_t *u, cs_val_t v) {
  if (cs_val_absent(v)) return cs_unpickle_build_failed(u);
  void *a = u->stack;
  if (!cs_unpickle_reserve(u, &a, &u->capstack, u->nstack, sizeof(cs_val_t))) return false;
  u->stack = a;
  size_t open = cs_build_open_index(u->b, v);
  if (open != SIZE_MAX) {
    while (open >= u->capopens) {
      size_t old = u->capopens;
      a = u->opens;
      if (!cs_unpickle_reserve(u, &a, &u->capopens, old, sizeof *u->opens)) return false;
      u->opens = a;
      memset(u->opens + old, 0, (u->capopens - old) * sizeof *u->opens); /* no memo links yet */
    }
    u->opens[open].slot = u->nstack;
  }
  u->stack[u->nstack++] = v;
  return true;
}

/* The cache slot of the string s[0..n): a hash of its length and its first and last 8 bytes. Not
 * keyed, and it need not be: a slot holds one string, so bytes that collide on purpose only miss
 * the cache (one compare of bytes just read) and take the model's keyed table, as without it. */
static size_t cs_unpickle_recent_slot(const uint8_t *s, size_t n) {
  uint64_t head = 0, tail = 0;
  if (n >= 8) {
    memcpy(&head, s, 8);
    memcpy(&tail, s + n - 8, 8);
  } else {
    memcpy(&head, s, n);
  }
  uint64_t h = (head * 0x9e3779b97f4a7c15ULL) ^ (tail * 0xc2b2ae3d27d4eb4fULL) ^ n;
  h *= 0xff51afd7ed558ccdULL;
  return (size_t)(h >> 40) & (CS_UNPICKLE_RECENT_STRS - 1);
}

/* A string from n UTF-8 bytes; invalid sequences become U+FFFD, as the viewer's TextDecoder does,
 * but for lone surrogates, which are kept as CPython's unpickler keeps them (docs/tool.md). */
static bool cs_unpickle_push_str(cs_unpickle_t *u, const uint8_t *s, size_t n) {
  uint32_t *recent = &u->recent_str[cs_unpickle_recent_slot(s, n)];
  if (*recent != 0) {
    size_t len;
    const char *known = cs_doc_string(cs_build_doc(u->b), *recent - 1, &len);
    if (len == n && memcmp(known, s, n) == 0) return cs_unpickle_push(u, CS_VAL_MAKE(CS_TAG_STRING, *recent - 1));
  }
  bool valid;
  size_t out_len = cs_utf8_fixed_len(s, n, true, &valid);
  if (valid) {
    cs_val_t v = cs_build_str(u->b, s, n);
    /* Only a string stored as its bytes were read: a hit must mean the same bytes, valid UTF-8. */
    if (cs_val_is_string(v)) *recent = (uint32_t)cs_val_payload(v) + 1;
    return cs_unpickle_push(u, v);
  }
  if (out_len + 1 > u->capstrbuf) {
    char *nb = realloc(u->strbuf, out_len + 1);
    if (nb == NULL) return cs_unpickle_fail(u, "out of host memory");
    u->strbuf = nb;
    u->capstrbuf = out_len + 1;
  }
  cs_utf8_fix(u->strbuf, s, n, true);
  return cs_unpickle_push(u, cs_build_str(u->b, u->strbuf, out_len));
}

/* Closes v if it is an open container (it is about to be put into another one, or returned), and
 * points the memo entries made while it was open at the closed value. */
static bool cs_unpickle_close(cs_unpickle_t *u, cs_val_t *v) {
  if (!cs_build_is_open(u->b, *v)) return true;
  cs_val_t open = *v;
  size_t k = cs_build_open_index(u->b, open); /* the handle names nothing once closed */
  cs_val_t closed = cs_build_close(u->b, open);
  if (cs_val_absent(closed)) return cs_unpickle_build_failed(u);
  *v = closed;
  if (k < u->capopens) { /* else never pushed (a tuple, closed when made): no links */
    size_t node = u->opens[k].memo;
    u->opens[k].memo = 0;
    while (node != 0) {
      struct cs_unpickle_memo_link_s *l = &u->links[node - 1];
      if (u->memo[l->memo_slot] == open) u->memo[l->memo_slot] = closed;
      size_t next = l->next;
      l->next = u->free_link;
      u->free_link = node;
      node = next;
    }
  }
  return true;
}

/* The key value k as a string id. JavaScript property names are strings; an integer key becomes its
 * decimal digits (what `d[5] = v` does); every other key type is an error. */
static bool cs_unpickle_key(cs_unpickle_t *u, cs_val_t k, uint32_t *id) {
  const cs_doc_t *d = cs_build_doc(u->b);
  if (cs_val_is_string(k)) {
    *id = (uint32_t)cs_val_payload(k);
    return true;
  }
  int64_t x;
  if (cs_val_tag(k) != CS_TAG_FLOAT && cs_doc_int(d, k, &x)) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%" PRId64, x);
    *id = cs_build_key(u->b, buf, (size_t)n);
    return *id != UINT32_MAX || cs_unpickle_build_failed(u);
  }
  const char *what = cs_val_is_number(k) ? "a float"
                     : cs_val_is_bool(k) ? "a bool"
                     : cs_val_is_null(k) ? "None"
                     : cs_val_is_dict(k) || cs_build_open_tag(u->b, k) == CS_TAG_DICT ? "a dict"
                                                                                       : "a list or tuple";
  return cs_unpickle_fail(u, "dict key is %s (keys must be strings or integers)", what);
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

/* Pops the innermost MARK; *container receives the index of the value just below it (when
 * want_container). */
static bool cs_unpickle_pop_mark(cs_unpickle_t *u, bool want_container, size_t *mark, size_t *container) {
  if (u->nmarks == 0) return cs_unpickle_fail(u, "%s without a MARK", cs_unpickle_opname(u->op));
  *mark = u->marks[--u->nmarks];
  if (!want_container) return true;
  if (*mark == 0 || *mark - 1 < cs_unpickle_base(u))
    return cs_unpickle_fail(u, "%s has no container below its MARK", cs_unpickle_opname(u->op));
  *container = *mark - 1;
  return true;
}

/* The stack slot `slot` must be an open container of one of the given kinds; a closed one (a shared
 * value from the memo) cannot change any more. */
static bool cs_unpickle_target(cs_unpickle_t *u, size_t slot, bool dict) {
  cs_val_t v = u->stack[slot];
  unsigned tag = cs_build_open_tag(u->b, v);
  if (dict ? tag == CS_TAG_DICT : tag == CS_TAG_LIST) return true;
  bool is_kind = dict ? cs_val_is_dict(v) : cs_val_tag(v) == CS_TAG_LIST;
  if (is_kind)
    return cs_unpickle_fail(u, "%s on a %s that was already used (a memo reference): not a snapshot",
                            cs_unpickle_opname(u->op), dict ? "dict" : "list");
  return cs_unpickle_fail(u, "%s %s a value that is not a %s", cs_unpickle_opname(u->op), dict ? "on" : "to",
                          dict ? "dict" : "list");
}

static bool cs_unpickle_append(cs_unpickle_t *u, cs_val_t list, size_t from) {
  if (!cs_unpickle_close(u, &u->stack[from])) return false;
  return cs_build_append(u->b, list, u->stack[from]) || cs_unpickle_build_failed(u);
}

static bool cs_unpickle_set(cs_unpickle_t *u, cs_val_t dict, size_t kslot, size_t vslot) {
  uint32_t id = 0;
  if (!cs_unpickle_key(u, u->stack[kslot], &id) || !cs_unpickle_close(u, &u->stack[vslot])) return false;
  return cs_build_set(u->b, dict, id, u->stack[vslot]) || cs_unpickle_build_failed(u);
}

static bool cs_unpickle_appends(cs_unpickle_t *u) {
  size_t mark, cont;
  if (!cs_unpickle_pop_mark(u, true, &mark, &cont) || !cs_unpickle_target(u, cont, false)) return false;
  size_t n = u->nstack - mark;
  cs_unpickle_stats_t *st = u->st;
  if (n > st->appends_max) {
    st->appends_max = n;
    st->appends_max_offset = u->op_offset;
  }
  if (n > CS_UNPICKLE_BATCH_WARN && st->appends_over_warn++ == 0) st->appends_first_over_offset = u->op_offset;
  for (size_t i = mark; i < u->nstack; i++)
    if (!cs_unpickle_append(u, u->stack[cont], i)) return false;
  u->nstack = mark;
  return true;
}

/* SETITEMS (container below the mark) or DICT (a new dict). */
static bool cs_unpickle_setitems(cs_unpickle_t *u, bool new_dict) {
  size_t mark, cont = 0;
  if (!cs_unpickle_pop_mark(u, !new_dict, &mark, &cont)) return false;
  size_t n = u->nstack - mark;
  if (n % 2 != 0) return cs_unpickle_fail(u, "%s with an odd number of values (%zu)", cs_unpickle_opname(u->op), n);
  cs_val_t dict;
  if (new_dict) {
    dict = cs_build_open(u->b, CS_TAG_DICT);
    if (cs_val_absent(dict)) return cs_unpickle_build_failed(u);
  } else {
    if (!cs_unpickle_target(u, cont, true)) return false;
    dict = u->stack[cont];
    cs_unpickle_stats_t *st = u->st;
    if (n / 2 > st->setitems_max) {
      st->setitems_max = n / 2;
      st->setitems_max_offset = u->op_offset;
    }
    if (n / 2 > CS_UNPICKLE_BATCH_WARN && st->setitems_over_warn++ == 0)
      st->setitems_first_over_offset = u->op_offset;
  }
  for (size_t i = mark; i < u->nstack; i += 2)
    if (!cs_unpickle_set(u, dict, i, i + 1)) return false;
  u->nstack = mark;
  return new_dict ? cs_unpickle_push(u, dict) : true;
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
  cs_val_t list = cs_build_open(u->b, tuple ? CS_TAG_TUPLE : CS_TAG_LIST);
  if (cs_val_absent(list)) return cs_unpickle_build_failed(u);
  for (size_t i = first; i < u->nstack; i++)
    if (!cs_unpickle_append(u, list, i)) return false;
  u->nstack = first;
  /* A tuple is complete when made: close it now, so that it can be shared like any value. */
  if (tuple && !cs_unpickle_close(u, &list)) return false;
  return cs_unpickle_push(u, list);
}

/* Links memo slot memo_slot to the open container of open index `open` (on the stack, so pushed: its
 * entry in opens exists), for its close to update. */
static bool cs_unpickle_link(cs_unpickle_t *u, size_t open, size_t memo_slot) {
  size_t node = u->free_link;
  if (node != 0) {
    u->free_link = u->links[node - 1].next;
  } else {
    void *a = u->links;
    if (!cs_unpickle_reserve(u, &a, &u->caplinks, u->nlinks, sizeof *u->links)) return false;
    u->links = a;
    node = ++u->nlinks;
  }
  u->links[node - 1] = (struct cs_unpickle_memo_link_s){memo_slot, u->opens[open].memo};
  u->opens[open].memo = node;
  return true;
}

static bool cs_unpickle_memo_put(cs_unpickle_t *u, size_t idx) {
  if (!cs_unpickle_need(u, 1)) return false;
  if (idx > u->memo_puts + CS_UNPICKLE_MEMO_SLACK)
    return cs_unpickle_fail(u, "memo index %zu is out of range (only %zu values were memoized before)", idx,
                            u->memo_puts);
  u->memo_puts++;
  size_t slot = cs_memo_refs_slot(&u->refs, idx);
  if (slot == SIZE_MAX) return true; /* no GET reads it back */
  cs_val_t v = u->stack[u->nstack - 1];
  size_t open = cs_build_open_index(u->b, v);
  if (open != SIZE_MAX && !cs_unpickle_link(u, open, slot)) return false;
  u->memo[slot] = v;
  return true;
}

static bool cs_unpickle_memo_get(cs_unpickle_t *u, size_t idx) {
  size_t memo_slot = cs_memo_refs_slot(&u->refs, idx);
  if (memo_slot == SIZE_MAX || cs_val_absent(u->memo[memo_slot]))
    return cs_unpickle_fail(u, "memo index %zu was never stored", idx);
  u->st->memo_copies++;
  cs_val_t v = u->memo[memo_slot];
  size_t open = cs_build_open_index(u->b, v);
  if (open != SIZE_MAX) {
    /* Handed out again: it is complete (see the top). Close it where it stands on the stack. */
    size_t slot = u->opens[open].slot;
    if (slot >= u->nstack || u->stack[slot] != v)
      return cs_unpickle_fail(u, "memo index %zu names a container that is no longer on the stack", idx);
    if (!cs_unpickle_close(u, &u->stack[slot])) return false;
    v = u->stack[slot];
  }
  return cs_unpickle_push(u, v);
}

/* ---------------------------------------------------------------------------------------------
 * The opcode loop
 * ------------------------------------------------------------------------------------------- */

/* Takes n argument bytes; NULL (with the error set) if the file ends first. */
static const uint8_t *cs_unpickle_take(cs_unpickle_t *u, size_t n) {
  if (u->len - u->pos < n) {
    u->ran_out = true;
    cs_unpickle_fail(u, "truncated: %s needs %zu more byte%s, %zu left", cs_unpickle_opname(u->op), n,
                     n == 1 ? "" : "s", u->len - u->pos);
    return NULL;
  }
  const uint8_t *p = u->data + u->pos;
  u->pos += n;
  return p;
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
    return cs_unpickle_push(u, cs_build_open(u->b, CS_TAG_DICT));
  case CS_OP_EMPTY_LIST:
    return cs_unpickle_push(u, cs_build_open(u->b, CS_TAG_LIST));
  case CS_OP_EMPTY_TUPLE:
    return cs_unpickle_make_list(u, false, 0, true);
  case CS_OP_SETITEM: {
    if (!cs_unpickle_need(u, 3)) return false;
    size_t d = u->nstack - 3;
    if (!cs_unpickle_target(u, d, true) || !cs_unpickle_set(u, u->stack[d], d + 1, d + 2)) return false;
    u->nstack = d + 1;
    return true;
  }
  case CS_OP_SETITEMS:
    return cs_unpickle_setitems(u, false);
  case CS_OP_DICT:
    return cs_unpickle_setitems(u, true);
  case CS_OP_APPEND: {
    if (!cs_unpickle_need(u, 2)) return false;
    size_t l = u->nstack - 2;
    if (!cs_unpickle_target(u, l, false) || !cs_unpickle_append(u, u->stack[l], l + 1)) return false;
    u->nstack = l + 1;
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
    return cs_unpickle_push(u, cs_build_int(u->b, (int64_t)(int32_t)cs_pickle_read_le32(p)));
  case CS_OP_BININT1:
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    return cs_unpickle_push(u, cs_build_int(u->b, p[0]));
  case CS_OP_BININT2:
    if ((p = cs_unpickle_take(u, 2)) == NULL) return false;
    return cs_unpickle_push(u, cs_build_int(u->b, (int64_t)p[0] | (int64_t)p[1] << 8));
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
    return cs_unpickle_push(u, cs_build_int(u->b, sx));
  }
  case CS_OP_BINFLOAT: {
    if ((p = cs_unpickle_take(u, 8)) == NULL) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < 8; i++) x = x << 8 | p[i]; /* big-endian */
    double d;
    memcpy(&d, &x, sizeof d);
    return cs_unpickle_push(u, cs_build_float(u->b, d, false));
  }
  case CS_OP_NONE:
    return cs_unpickle_push(u, CS_VAL_NULL);
  case CS_OP_NEWTRUE:
    return cs_unpickle_push(u, CS_VAL_TRUE);
  case CS_OP_NEWFALSE:
    return cs_unpickle_push(u, CS_VAL_FALSE);
  case CS_OP_SHORT_BINUNICODE: {
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    size_t n = p[0];
    if ((p = cs_unpickle_take(u, n)) == NULL) return false;
    return cs_unpickle_push_str(u, p, n);
  }
  case CS_OP_BINUNICODE: {
    if ((p = cs_unpickle_take(u, 4)) == NULL) return false;
    size_t n = cs_pickle_read_le32(p);
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
    return cs_unpickle_memo_put(u, cs_pickle_read_le32(p));
  case CS_OP_BINGET:
    if ((p = cs_unpickle_take(u, 1)) == NULL) return false;
    return cs_unpickle_memo_get(u, p[0]);
  case CS_OP_LONG_BINGET:
    if ((p = cs_unpickle_take(u, 4)) == NULL) return false;
    return cs_unpickle_memo_get(u, cs_pickle_read_le32(p));
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

/* The head's first key, when the opcode about to run at u->pos pushes the root dict's first key:
 * whether it is a (SHORT_)BINUNICODE of exactly `key`. */
static bool cs_unpickle_is_key(const cs_unpickle_t *u, const char *key) {
  size_t n = strlen(key), at = u->pos;
  if (at < u->len && u->data[at] == CS_OP_SHORT_BINUNICODE && u->len - at >= 2 + n)
    return u->data[at + 1] == n && memcmp(u->data + at + 2, key, n) == 0;
  if (at < u->len && u->data[at] == CS_OP_BINUNICODE && u->len - at >= 5 + n)
    return cs_pickle_read_le32(u->data + at + 1) == n && memcmp(u->data + at + 5, key, n) == 0;
  return false;
}

/* Run the opcodes. head (not NULL): stop once the root dict's first pair is set (its first
 * SETITEM(S)), or, when its first key is not `head`, before that key (*absent). */
static cs_doc_t *cs_unpickle_run(cs_unpickle_t *u, const char *head, bool *absent) {
  bool done = false, key_checked = false;
  while (!done) {
    u->op_offset = u->pos;
    if (head && !key_checked && u->nstack == 1 && u->nmarks == 1 && u->marks[0] == 1 && u->pos < u->len &&
        u->data[u->pos] != CS_OP_MARK) {
      key_checked = true;
      if (!cs_unpickle_is_key(u, head)) {
        *absent = true;
        return NULL;
      }
    }
    if (u->pos >= u->len) {
      u->ran_out = true;
      cs_unpickle_fail(u, "truncated: the pickle ends without STOP");
      break;
    }
    u->op = u->data[u->pos++];
    if (!cs_unpickle_step(u, &done)) break;
    if (head && (u->op == CS_OP_SETITEMS || u->op == CS_OP_SETITEM) && u->nstack == 1) done = true;
  }
  if (head && done && !key_checked) { /* a SETITEM without MARK: its key was never looked at */
    *absent = true;
    return NULL;
  }
  cs_doc_t *doc = NULL;
  if (done && !u->failed) {
    cs_val_t root = u->stack[u->nstack - 1];
    if (cs_unpickle_close(u, &root)) {
      u->st->end_offset = u->pos;
      u->st->values = cs_build_doc(u->b) != NULL ? u->nstack : 0;
      doc = cs_build_finish(u->b, root);
      u->b = NULL;
      if (doc == NULL) cs_unpickle_fail(u, "out of host memory");
    }
  }
  return doc;
}

static void cs_unpickle_free(cs_unpickle_t *u) {
  cs_build_abort(u->b);
  cs_region_free(u->stack, u->capstack * sizeof *u->stack);
  cs_region_free(u->marks, u->capmarks * sizeof *u->marks);
  cs_region_free(u->memo, u->refs.count * sizeof *u->memo);
  cs_memo_refs_free(&u->refs);
  cs_region_free(u->opens, u->capopens * sizeof *u->opens);
  cs_region_free(u->links, u->caplinks * sizeof *u->links);
  free(u->strbuf);
}

/* Set up u over data; false (with *err filled) without host memory. */
static bool cs_unpickle_begin(cs_unpickle_t *u, const uint8_t *data, size_t len, cs_unpickle_stats_t *stats,
                              cs_read_error_t *err) {
  memset(stats, 0, sizeof *stats);
  stats->protocol = -1;
  err->offset = 0;
  err->message[0] = '\0';
  memset(u, 0, sizeof *u);
  u->data = data;
  u->len = len;
  u->st = stats;
  u->err = err;
  if (!cs_memo_refs_scan(&u->refs, data, len, CS_UNPICKLE_MEMO_SLACK)) {
    cs_unpickle_fail(u, "out of host memory");
    return false;
  }
  if (u->refs.count > 0) {
    u->memo = cs_region_resize(NULL, 0, u->refs.count * sizeof *u->memo);
    if (u->memo == NULL) {
      cs_memo_refs_free(&u->refs);
      cs_unpickle_fail(u, "out of host memory");
      return false;
    }
    for (size_t i = 0; i < u->refs.count; i++) u->memo[i] = CS_VAL_ABSENT;
  }
  u->b = cs_build_new();
  if (u->b == NULL) {
    cs_region_free(u->memo, u->refs.count * sizeof *u->memo);
    cs_memo_refs_free(&u->refs);
    cs_unpickle_fail(u, "out of host memory");
    return false;
  }
  return true;
}

cs_doc_t *cs_unpickle(const uint8_t *data, size_t len, cs_unpickle_stats_t *stats, cs_read_error_t *err) {
  cs_unpickle_stats_t local_stats;
  cs_read_error_t local_err;
  if (stats == NULL) stats = &local_stats;
  if (err == NULL) err = &local_err;
  cs_unpickle_t u;
  if (!cs_unpickle_begin(&u, data, len, stats, err)) return NULL;
  cs_doc_t *doc = cs_unpickle_run(&u, NULL, NULL);
  cs_unpickle_free(&u);
  return doc;
}

cs_head_status_t cs_unpickle_head(const uint8_t *data, size_t len, const char *key, cs_doc_t **out,
                                  cs_read_error_t *err) {
  cs_unpickle_stats_t stats;
  cs_unpickle_t u;
  *out = NULL;
  if (!cs_unpickle_begin(&u, data, len, &stats, err)) return CS_HEAD_ERROR;
  bool absent = false;
  *out = cs_unpickle_run(&u, key, &absent);
  cs_head_status_t status = *out ? CS_HEAD_FOUND : absent ? CS_HEAD_ABSENT : u.ran_out ? CS_HEAD_SHORT : CS_HEAD_ERROR;
  cs_unpickle_free(&u);
  return status;
}

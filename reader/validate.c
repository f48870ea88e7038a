/* SPDX-License-Identifier: Apache-2.0 */
/* The viewer's rules on a snapshot (contract in reader/validate.h; the rules are
 * snapshot-format.md sections 3.2-3.9, checked against MemoryViz.js).
 *
 * Errors are reported one by one (each names its place). Silent problems that tend to repeat on
 * every entry (no time_us, addresses above 2^53, ...) are counted and reported once, with the first
 * place, at the end. The replay of each device (reader/replay.h) runs only on devices whose
 * segments and trace have no structural error, so one bad field does not cascade. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "common/cs_glob.h"
#include "reader/reader.h"
#include "reader/replay.h"
#include "reader/unpickle.h"
#include "reader/validate.h"

#define CS_REPORT_MAX_FINDINGS 200
#define CS_TWO_POW_53 9007199254740992.0

/* ---------------------------------------------------------------------------------------------
 * Report
 * ------------------------------------------------------------------------------------------- */

void cs_report_init(cs_report_t *r) {
  memset(r, 0, sizeof *r);
}

void cs_report_free(cs_report_t *r) {
  free(r->findings);
  memset(r, 0, sizeof *r);
}

/* Every finding goes through here; msg is already formatted. */
static void cs_report_put(cs_report_t *r, cs_finding_level_t level, bool unreadable, const char *where,
                          const char *msg) {
  if (level == CS_FINDING_ERROR)
    r->errors++;
  else
    r->warnings++;
  cs_finding_t f = {.level = level, .unreadable = unreadable};
  snprintf(f.where, sizeof f.where, "%s", where);
  snprintf(f.message, sizeof f.message, "%s", msg);
  if (unreadable && r->unreadable++ == 0) r->first_unreadable = f;
  if (r->count >= CS_REPORT_MAX_FINDINGS) {
    r->dropped++;
    return;
  }
  if (r->count == r->capacity) {
    size_t ncap = r->capacity ? r->capacity * 2 : 16;
    if (ncap > CS_REPORT_MAX_FINDINGS) ncap = CS_REPORT_MAX_FINDINGS;
    cs_finding_t *grown = realloc(r->findings, ncap * sizeof *grown);
    if (grown == NULL) {
      r->dropped++;
      return;
    }
    r->findings = grown;
    r->capacity = ncap;
  }
  r->findings[r->count++] = f;
}

CS_PRINTF(4, 5)
static void cs_report_add(cs_report_t *r, cs_finding_level_t level, const char *where, const char *fmt, ...) {
  char msg[sizeof ((cs_finding_t *)0)->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cs_report_put(r, level, false, where, msg);
}

/* An error that leaves the numbers meaningless (validate.h). */
CS_PRINTF(3, 4)
static void cs_report_unreadable(cs_report_t *r, const char *where, const char *fmt, ...) {
  char msg[sizeof ((cs_finding_t *)0)->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cs_report_put(r, CS_FINDING_ERROR, true, where, msg);
}

/* Formats a place ("segments[3].blocks[2]") into a cs_finding_t-sized buffer. */
typedef struct cs_where_s {
  char s[96];
} cs_where_t;

CS_PRINTF(1, 2) static cs_where_t cs_where(const char *fmt, ...) {
  cs_where_t w;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w.s, sizeof w.s, fmt, ap);
  va_end(ap);
  return w;
}

/* A place in the tree, rendered only when a finding needs it (a million trace entries must not
 * cost a million snprintf calls). A chain of stack-allocated links: the root's text, then ".key"
 * or "[index]" per link. */
typedef struct cs_loc_s {
  const struct cs_loc_s *parent; /* NULL: key is the root's text */
  const char *key;               /* NULL: an index */
  size_t index;
} cs_loc_t;

#define CS_LOC_ROOT(text) ((cs_loc_t){NULL, (text), 0})
#define CS_LOC_KEY(p, k) ((cs_loc_t){(p), (k), 0})
#define CS_LOC_IDX(p, i) ((cs_loc_t){(p), NULL, (i)})

static size_t cs_loc_render(const cs_loc_t *l, char *buf, size_t n) {
  size_t at = l->parent ? cs_loc_render(l->parent, buf, n) : 0;
  if (at >= n) return at;
  int k;
  if (l->parent == NULL)
    k = snprintf(buf + at, n - at, "%s", l->key);
  else if (l->key != NULL)
    k = snprintf(buf + at, n - at, ".%s", l->key);
  else
    k = snprintf(buf + at, n - at, "[%zu]", l->index);
  return k < 0 ? at : at + (size_t)k;
}

static cs_where_t cs_loc_where(const cs_loc_t *l) {
  cs_where_t w;
  w.s[0] = '\0';
  cs_loc_render(l, w.s, sizeof w.s);
  return w;
}

CS_PRINTF(4, 5)
static void cs_report_at(cs_report_t *r, cs_finding_level_t level, const cs_loc_t *loc, const char *fmt, ...) {
  char msg[sizeof ((cs_finding_t *)0)->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cs_where_t w = cs_loc_where(loc);
  cs_report_put(r, level, false, w.s, msg);
}

CS_PRINTF(3, 4)
static void cs_report_unreadable_at(cs_report_t *r, const cs_loc_t *loc, const char *fmt, ...) {
  char msg[sizeof ((cs_finding_t *)0)->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cs_where_t w = cs_loc_where(loc);
  cs_report_put(r, CS_FINDING_ERROR, true, w.s, msg);
}

/* ---------------------------------------------------------------------------------------------
 * Counted warnings
 * ------------------------------------------------------------------------------------------- */

typedef struct cs_agg_s {
  size_t count;
  cs_where_t first;
  char detail[80]; /* about the first occurrence */
} cs_agg_t;

CS_PRINTF(3, 4) static void cs_agg_hit(cs_agg_t *a, const cs_loc_t *where, const char *fmt, ...) {
  if (a->count++ > 0) return;
  a->first = cs_loc_where(where);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->detail, sizeof a->detail, fmt, ap);
  va_end(ap);
}

/* Work bound (see cs_validate_budget). */
#define CS_VALIDATE_WORK_PER_WORD 64
#define CS_VALIDATE_MIN_WORK ((size_t)1 << 22)

/* The result of checking one frames list, cached per list value (frames lists are stored once by
 * content and shared by many entries): the index of its first bad frame, SIZE_MAX when clean. */
typedef struct cs_fcache_slot_s {
  cs_val_t frames; /* 0: empty slot (0 is null, never a list) */
  size_t bad;
} cs_fcache_slot_t;

typedef struct cs_fcache_s {
  cs_fcache_slot_t *slots; /* a power of two, kept above twice n; NULL: no cache (no memory) */
  size_t cap, n;
} cs_fcache_t;

/* String ids of the values the rules compare with (UINT32_MAX: not in the doc). */
enum { CS_VSTR_ACTIVE_ALLOCATED, CS_VSTR_ACTIVE_PENDING_FREE, CS_VSTR_INACTIVE, CS_VSTR_COUNT };

static const struct {
  const char *name;
  cs_replay_kind_t kind;
} cs_validate_actions[] = {
    {"alloc", CS_REPLAY_ALLOC},
    {"free_requested", CS_REPLAY_FREE_REQUESTED},
    {"free_completed", CS_REPLAY_FREE_COMPLETED},
    {"free", CS_REPLAY_FREE},
    {"segment_alloc", CS_REPLAY_SEGMENT_ALLOC},
    {"segment_free", CS_REPLAY_SEGMENT_FREE},
    {"segment_map", CS_REPLAY_SEGMENT_MAP},
    {"segment_unmap", CS_REPLAY_SEGMENT_UNMAP},
    {"snapshot", CS_REPLAY_OTHER},
    {"oom", CS_REPLAY_OTHER},
    {"annotate", CS_REPLAY_OTHER},
};
#define CS_VALIDATE_NACTIONS CS_ARRAY_SIZE(cs_validate_actions)
enum { CS_VACTION_SNAPSHOT = 8, CS_VACTION_OOM = 9 };

typedef struct cs_vctx_s {
  const cs_doc_t *doc;
  cs_report_t *r;
  bool legacy;         /* the snapshot is a bare list of segments */
  cs_agg_t big;        /* numbers above 2^53 */
  cs_agg_t negative;   /* negative addresses or sizes */
  cs_agg_t fractional; /* non-integral addresses or sizes */
  cs_agg_t no_time;
  cs_agg_t bad_time;
  cs_agg_t oom_no_free;
  cs_agg_t unknown_state;
  cs_agg_t unknown_action;
  cs_agg_t tiling;
  cs_agg_t block_address;
  cs_agg_t unshown_device;
  cs_agg_t other_no_size; /* oom, snapshot, annotate, unknown actions without size */
  /* Keys outside CS_DOC_KEYS, and the strings compared with, looked up once. */
  uint32_t key_history, key_real_size;
  uint32_t action_id[CS_VALIDATE_NACTIONS];
  uint32_t str_id[CS_VSTR_COUNT];
  cs_fcache_t fcache;
  /* Entries visited (segments, blocks, trace entries) against the budget. */
  size_t work, budget;
  bool over_budget;
} cs_vctx_t;

/* ---------------------------------------------------------------------------------------------
 * Field checks
 * ------------------------------------------------------------------------------------------- */

static const char *cs_validate_type(cs_val_t v) {
  if (cs_val_absent(v)) return "missing";
  if (cs_val_is_string(v)) return "a string";
  if (cs_val_is_number(v)) return "a number";
  if (cs_val_is_bool(v)) return "a bool";
  if (cs_val_is_null(v)) return "null";
  if (cs_val_is_array(v)) return "a list";
  if (cs_val_is_dict(v)) return "a dict";
  return "invalid";
}

static inline cs_val_t cs_get(const cs_vctx_t *c, cs_val_t obj, cs_doc_key_t key) {
  return cs_doc_get_key(c->doc, obj, key);
}

/* A string value's text ("" for anything else, which callers have ruled out). */
static inline const char *cs_vstr(const cs_vctx_t *c, cs_val_t v) {
  const char *s = cs_doc_str(c->doc, v, NULL);
  return s != NULL ? s : "";
}

static inline double cs_vnum(const cs_vctx_t *c, cs_val_t v) {
  return cs_doc_number(c->doc, v);
}

/* A string value compared with a known text: by id (strings are stored once), then, for another
 * id, as C strings (the text up to a NUL inside it), as the rules have always compared them. */
static bool cs_vstr_is(const cs_vctx_t *c, cs_val_t v, uint32_t id, const char *text) {
  if (id != UINT32_MAX && cs_val_payload(v) == id) return true;
  return strcmp(cs_vstr(c, v), text) == 0;
}

/* Bounds the entries visited: a pickle shares memoized values, so a small file can name a list of
 * a million segments that is one value repeated, each holding the same million blocks. The rules
 * visit every occurrence (each has its own place and its own findings), which costs the product.
 * Real snapshots stay far below CS_VALIDATE_WORK_PER_WORD visits per word of their model (in JSON,
 * which has no memo, every entry costs at least a word); beyond that the walk stops, with one
 * unreadable error, since every reader of the numbers would pay the same product. Returns false
 * when n more entries go over the budget. */
static bool cs_validate_budget(cs_vctx_t *c, size_t n, const cs_loc_t *where) {
  if (c->over_budget) return false;
  if (n <= c->budget - c->work) {
    c->work += n;
    return true;
  }
  c->over_budget = true;
  cs_report_unreadable_at(c->r, where,
                       "shared (memoized) values repeat so often that the snapshot expands to more than %zu "
                       "entries: not checked further",
                       c->budget);
  return false;
}

/* An address or size present in the file: a finite non-negative number (else an unreadable error),
 * ideally an integer below 2^53 (else a counted warning). why: what breaks if it is not a number.
 * Negative values are counted and reported once (they come in bulk when a writer stores unsigned
 * values as signed); they do not stop the replay. */
static bool cs_validate_number(cs_vctx_t *c, cs_val_t v, const cs_loc_t *w, const char *why) {
  if (!cs_val_is_number(v)) {
    if (cs_val_is_string(v))
      cs_report_unreadable_at(c->r, w, "is a string (\"%.40s\"), not a number: %s", cs_vstr(c, v), why);
    else
      cs_report_unreadable_at(c->r, w, "is %s, not a number: %s", cs_validate_type(v), why);
    return false;
  }
  double d = cs_vnum(c, v);
  if (!isfinite(d)) {
    cs_report_unreadable_at(c->r, w, "is not finite (%g): NaN geometry in the viewer", d);
    return false;
  }
  if (d < 0) cs_agg_hit(&c->negative, w, "%.17g", d);
  if (d != floor(d)) cs_agg_hit(&c->fractional, w, "%.17g", d);
  /* Above 2^53 in magnitude: an integer exactly (its digits, which the double may not hold: 2^53 + 1
   * rounds to 2^53), a float or an integer beyond int64 by its double. */
  int64_t x;
  if (cs_val_tag(v) != CS_TAG_FLOAT && cs_doc_int(c->doc, v, &x)) {
    if (x > ((int64_t)1 << 53) || x < -((int64_t)1 << 53)) cs_agg_hit(&c->big, w, "%" PRId64, x);
  } else if (fabs(d) > CS_TWO_POW_53) {
    cs_agg_hit(&c->big, w, "%s", "");
  }
  return true;
}

/* A required address or size. */
static bool cs_validate_required_number(cs_vctx_t *c, cs_val_t obj, cs_doc_key_t key, const char *name,
                                        const cs_loc_t *base, const char *why) {
  cs_val_t v = cs_get(c, obj, key);
  if (cs_val_absent(v)) {
    cs_report_at(c->r, CS_FINDING_ERROR, base, "no '%s': %s", name, why);
    return false;
  }
  cs_loc_t w = CS_LOC_KEY(base, name);
  return cs_validate_number(c, v, &w, why);
}

/* The first frame of a list that is not a dict with string filename and name; SIZE_MAX if none. */
static size_t cs_frames_scan(const cs_vctx_t *c, cs_val_t frames) {
  size_t n = cs_doc_len(c->doc, frames);
  const cs_val_t *it = cs_doc_items(c->doc, frames);
  for (size_t i = 0; i < n; i++) {
    cs_val_t f = it[i];
    if (!cs_val_is_dict(f) || !cs_val_is_string(cs_get(c, f, CS_KEY_FILENAME)) ||
        !cs_val_is_string(cs_get(c, f, CS_KEY_NAME)))
      return i;
  }
  return SIZE_MAX;
}

static bool cs_fcache_grow(cs_fcache_t *fc) {
  size_t ncap = fc->cap ? fc->cap * 2 : 1024;
  cs_fcache_slot_t *ns = calloc(ncap, sizeof *ns);
  if (ns == NULL) return false;
  for (size_t i = 0; i < fc->cap; i++) {
    if (fc->slots[i].frames == 0) continue;
    size_t j = (size_t)cs_val_payload(fc->slots[i].frames) * 0x9e3779b97f4a7c15ULL & (ncap - 1);
    while (ns[j].frames != 0) j = (j + 1) & (ncap - 1);
    ns[j] = fc->slots[i];
  }
  free(fc->slots);
  fc->slots = ns;
  fc->cap = ncap;
  return true;
}

/* cs_frames_scan, once per distinct list. */
static size_t cs_frames_first_bad(cs_vctx_t *c, cs_val_t frames) {
  cs_fcache_t *fc = &c->fcache;
  if (cs_doc_len(c->doc, frames) == 0) return SIZE_MAX;
  if (fc->n * 2 >= fc->cap && !cs_fcache_grow(fc)) return cs_frames_scan(c, frames);
  size_t mask = fc->cap - 1;
  size_t j = (size_t)cs_val_payload(frames) * 0x9e3779b97f4a7c15ULL & mask;
  for (; fc->slots[j].frames != 0; j = (j + 1) & mask)
    if (fc->slots[j].frames == frames) return fc->slots[j].bad;
  size_t bad = cs_frames_scan(c, frames);
  fc->slots[j] = (cs_fcache_slot_t){frames, bad};
  fc->n++;
  return bad;
}

/* frames: a list of dicts whose filename and name are strings (format_frames and frameFilter). */
static bool cs_validate_frames(cs_vctx_t *c, cs_val_t frames, const cs_loc_t *base) {
  cs_loc_t w = CS_LOC_KEY(base, "frames");
  if (!cs_val_is_array(frames)) {
    cs_report_at(c->r, CS_FINDING_ERROR, &w,
                 "is %s, not a list: the viewer throws when the item is hovered (format_frames)",
                 cs_validate_type(frames));
    return false;
  }
  size_t i = cs_frames_first_bad(c, frames);
  if (i == SIZE_MAX) return true;
  cs_val_t f = cs_doc_at(c->doc, frames, i);
  cs_loc_t fw = CS_LOC_IDX(&w, i);
  if (!cs_val_is_dict(f)) {
    cs_report_at(c->r, CS_FINDING_ERROR, &fw, "is %s, not a dict: the viewer throws on hover", cs_validate_type(f));
    return false;
  }
  cs_val_t fn = cs_get(c, f, CS_KEY_FILENAME), nm = cs_get(c, f, CS_KEY_NAME);
  cs_report_at(c->r, CS_FINDING_ERROR, &fw,
               "'%s' is %s, not a string: frameFilter calls .includes on it and throws on hover",
               !cs_val_is_string(fn) ? "filename" : "name", cs_validate_type(!cs_val_is_string(fn) ? fn : nm));
  return false;
}

static cs_replay_stream_t cs_validate_stream(const cs_vctx_t *c, cs_val_t s) {
  cs_replay_stream_t st = {false, 0};
  if (cs_val_is_number(s)) {
    st.is_number = true;
    st.v = cs_vnum(c, s);
  }
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Segments and blocks
 * ------------------------------------------------------------------------------------------- */

/* What the replay needs from one valid segment. */
typedef struct cs_vseg_s {
  int64_t device;
  bool device_ok; /* an integral number */
  bool valid;     /* no structural error in the segment */
  cs_replay_segment_t seg;
  size_t first_block, nblocks; /* into the active-block address array */
} cs_vseg_t;

typedef struct cs_vblocks_s {
  double *addr;
  size_t n, cap;
  bool oom;
} cs_vblocks_t;

static void cs_vblocks_push(cs_vblocks_t *b, double a) {
  if (b->n == b->cap) {
    size_t ncap = b->cap ? b->cap * 2 : 256;
    double *p = realloc(b->addr, ncap * sizeof *p);
    if (p == NULL) {
      b->oom = true;
      return;
    }
    b->addr = p;
    b->cap = ncap;
  }
  b->addr[b->n++] = a;
}

static bool cs_validate_block(cs_vctx_t *c, cs_val_t b, const cs_loc_t *w, double *running, bool *active) {
  bool ok = true;
  *active = false;
  if (!cs_val_is_dict(b)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "block is %s, not a dict: the viewer throws at load", cs_validate_type(b));
    return false;
  }
  cs_val_t size = cs_get(c, b, CS_KEY_SIZE);
  if (!cs_validate_required_number(c, b, CS_KEY_SIZE, "size", w,
                                   "NaN geometry and wrong addresses for the blocks after it"))
    ok = false;
  cs_val_t state = cs_get(c, b, CS_KEY_STATE);
  if (cs_val_absent(state)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'state'");
    ok = false;
  } else if (!cs_val_is_string(state)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "'state' is %s, not a string", cs_validate_type(state));
    ok = false;
  } else if (cs_vstr_is(c, state, c->str_id[CS_VSTR_ACTIVE_ALLOCATED], "active_allocated") ||
             cs_vstr_is(c, state, c->str_id[CS_VSTR_ACTIVE_PENDING_FREE], "active_pending_free")) {
    *active = true;
  } else if (!cs_vstr_is(c, state, c->str_id[CS_VSTR_INACTIVE], "inactive")) {
    cs_loc_t sw = CS_LOC_KEY(w, "state");
    cs_agg_hit(&c->unknown_state, &sw, "\"%.40s\"", cs_vstr(c, state));
  }
  cs_val_t frames = cs_get(c, b, CS_KEY_FRAMES);
  cs_val_t req = cs_get(c, b, CS_KEY_REQUESTED_SIZE);
  cs_loc_t rw = CS_LOC_KEY(w, "requested_size");
  if (!cs_val_absent(frames)) {
    if (!cs_validate_frames(c, frames, w)) ok = false;
    if (cs_val_absent(req)) {
      cs_report_at(c->r, CS_FINDING_ERROR, w,
                   "has 'frames' but no 'requested_size': the viewer has no fallback then (NaN geometry)");
      ok = false;
    } else if (!cs_validate_number(c, req, &rw, "NaN geometry")) {
      ok = false;
    }
  } else {
    /* legacy block: requested_size falls back to history[0].real_size, or to size */
    cs_val_t history = cs_doc_get_id(c->doc, b, c->key_history);
    if (!cs_val_absent(req) && !cs_validate_number(c, req, &rw, "NaN geometry")) ok = false;
    if (!cs_val_absent(history)) {
      cs_val_t h0 = cs_doc_len(c->doc, history) > 0 ? cs_doc_at(c->doc, history, 0) : CS_VAL_ABSENT;
      if (!cs_val_is_array(history) || !cs_val_is_dict(h0)) {
        cs_report_at(c->r, CS_FINDING_ERROR, w,
                     "legacy 'history' is not a non-empty list of dicts: the viewer reads history[0] at load");
        ok = false;
      } else if ((cs_val_absent(req) || (cs_val_is_number(req) && cs_vnum(c, req) == 0)) &&
                 !cs_val_is_number(cs_doc_get_id(c->doc, h0, c->key_real_size))) {
        cs_report_at(c->r, CS_FINDING_ERROR, w,
                     "legacy block without requested_size and without history[0].real_size: NaN geometry");
        ok = false;
      }
    }
  }
  cs_val_t address = cs_get(c, b, CS_KEY_ADDRESS);
  if (cs_val_is_number(address) && cs_val_is_number(size) && cs_vnum(c, address) != *running) {
    cs_loc_t aw = CS_LOC_KEY(w, "address");
    cs_agg_hit(&c->block_address, &aw, "%.17g, the sizes give %.17g", cs_vnum(c, address), *running);
  }
  if (cs_val_is_number(size)) *running += cs_vnum(c, size);
  return ok;
}

static bool cs_validate_segment(cs_vctx_t *c, cs_val_t s, const cs_loc_t *w, cs_vseg_t *vs, cs_vblocks_t *blocks) {
  vs->valid = false;
  vs->device_ok = false;
  vs->device = -1;
  if (!cs_val_is_dict(s)) {
    if (c->legacy) /* then nothing says the list is a snapshot at all */
      cs_report_unreadable_at(c->r, w, "is %s, not a dict: a bare list of segments is a legacy snapshot, this is not",
                              cs_validate_type(s));
    else
      cs_report_at(c->r, CS_FINDING_ERROR, w, "segment is %s, not a dict: the viewer throws at load",
                   cs_validate_type(s));
    return false;
  }
  bool ok = true;
  cs_val_t device = cs_get(c, s, CS_KEY_DEVICE);
  if (cs_val_absent(device)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'device': the segment belongs to no device");
    ok = false;
  } else if (!cs_val_is_number(device) || !isfinite(cs_vnum(c, device)) ||
             cs_vnum(c, device) != floor(cs_vnum(c, device))) {
    cs_loc_t dw = CS_LOC_KEY(w, "device");
    cs_report_at(c->r, CS_FINDING_ERROR, &dw,
                 "is %s, not an integer: it never equals the numeric device ordinal, so the segment is ignored "
                 "and the history view then throws",
                 cs_val_is_number(device) ? "a non-integral number" : cs_validate_type(device));
    ok = false;
  } else {
    double d = cs_vnum(c, device);
    vs->device_ok = true;
    vs->device = fabs(d) < 9e18 ? (int64_t)d : -1;
  }
  bool addr_ok =
      cs_validate_required_number(c, s, CS_KEY_ADDRESS, "address", w, "block addresses become strings or NaN");
  bool total_ok = cs_validate_required_number(c, s, CS_KEY_TOTAL_SIZE, "total_size", w, "NaN geometry");
  if (!addr_ok || !total_ok) ok = false;
  cs_val_t frames = cs_get(c, s, CS_KEY_FRAMES);
  if (!cs_val_absent(frames) && !cs_val_is_null(frames) && !cs_validate_frames(c, frames, w)) ok = false; /* `|| []` */
  cs_val_t bl = cs_get(c, s, CS_KEY_BLOCKS);
  vs->first_block = blocks->n;
  if (!cs_val_is_array(bl)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "'blocks' is %s, not a list: the viewer throws at load ('not iterable')",
                 cs_validate_type(bl));
    ok = false;
  } else if (cs_validate_budget(c, cs_doc_len(c->doc, bl), w)) {
    double running = addr_ok ? cs_vnum(c, cs_get(c, s, CS_KEY_ADDRESS)) : 0;
    int64_t exact_sum = 0;
    bool exact = true;
    cs_loc_t blw = CS_LOC_KEY(w, "blocks");
    size_t nb = cs_doc_len(c->doc, bl);
    const cs_val_t *items = cs_doc_items(c->doc, bl);
    for (size_t j = 0; j < nb; j++) {
      cs_val_t b = items[j];
      cs_loc_t bw = CS_LOC_IDX(&blw, j);
      double at = running; /* the viewer's address for this block */
      bool active = false;
      if (!cs_validate_block(c, b, &bw, &running, &active)) ok = false;
      if (active) cs_vblocks_push(blocks, at);
      int64_t sz;
      if (cs_val_is_dict(b) && cs_doc_int(c->doc, cs_get(c, b, CS_KEY_SIZE), &sz) && sz >= 0 &&
          exact_sum <= INT64_MAX - sz)
        exact_sum += sz;
      else
        exact = false;
    }
    int64_t total;
    if (total_ok && exact && cs_doc_int(c->doc, cs_get(c, s, CS_KEY_TOTAL_SIZE), &total) && total != exact_sum)
      cs_agg_hit(&c->tiling, w, "blocks sum to %" PRId64 ", total_size is %" PRId64, exact_sum, total);
  } else {
    ok = false;
  }
  vs->nblocks = blocks->n - vs->first_block;
  if (ok) {
    vs->seg.addr = cs_vnum(c, cs_get(c, s, CS_KEY_ADDRESS));
    vs->seg.size = cs_vnum(c, cs_get(c, s, CS_KEY_TOTAL_SIZE));
    vs->seg.stream = cs_validate_stream(c, cs_get(c, s, CS_KEY_STREAM));
    vs->valid = true;
  }
  return ok;
}

/* ---------------------------------------------------------------------------------------------
 * Trace entries
 * ------------------------------------------------------------------------------------------- */

/* The index of an action in cs_validate_actions, or -1 for an unknown one. */
static int cs_validate_action(const cs_vctx_t *c, cs_val_t a) {
  uint64_t id = cs_val_payload(a);
  for (size_t i = 0; i < CS_VALIDATE_NACTIONS; i++)
    if (c->action_id[i] != UINT32_MAX && c->action_id[i] == id) return (int)i;
  const char *s = cs_vstr(c, a); /* another string, or one with a NUL inside */
  for (size_t i = 0; i < CS_VALIDATE_NACTIONS; i++)
    if (strcmp(s, cs_validate_actions[i].name) == 0) return (int)i;
  return -1;
}

typedef struct cs_vcat_s {
  bool any;
  bool unknown;
  cs_where_t first;
} cs_vcat_t;

/* One trace entry; fills *ev for the replay. Returns false on a structural error. */
static bool cs_validate_event(cs_vctx_t *c, cs_val_t t, const cs_loc_t *w, cs_replay_event_t *ev, cs_vcat_t *cat) {
  memset(ev, 0, sizeof *ev);
  if (!cs_val_is_dict(t)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "trace entry is %s, not a dict: the viewer throws at load",
                 cs_validate_type(t));
    return false;
  }
  bool ok = true;
  cs_val_t action = cs_get(c, t, CS_KEY_ACTION);
  bool needs_addr = true, is_oom = false, is_snapshot = false;
  if (cs_val_absent(action)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'action': the event list throws (padEnd of undefined)");
    ok = false;
  } else if (!cs_val_is_string(action)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "'action' is %s, not a string: the event list throws",
                 cs_validate_type(action));
    ok = false;
  } else {
    int k = cs_validate_action(c, action);
    is_oom = k == CS_VACTION_OOM;
    is_snapshot = k == CS_VACTION_SNAPSHOT;
    needs_addr = !is_oom && !is_snapshot;
    if (k >= 0) {
      ev->kind = cs_validate_actions[k].kind;
    } else {
      ev->kind = CS_REPLAY_OTHER;
      cs_loc_t aw = CS_LOC_KEY(w, "action");
      cs_agg_hit(&c->unknown_action, &aw, "\"%.40s\"", cs_vstr(c, action));
    }
  }
  if (needs_addr) {
    cs_val_t addr = cs_get(c, t, CS_KEY_ADDR);
    cs_loc_t aw = CS_LOC_KEY(w, "addr");
    if (cs_val_absent(addr)) {
      cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'addr': the event list throws (addr.toString of undefined)");
      ok = false;
    } else if (!cs_validate_number(c, addr, &aw, "the event list and the history view misbehave (string arithmetic)")) {
      ok = false;
    } else {
      ev->addr = cs_vnum(c, addr);
    }
  }
  cs_val_t size = cs_get(c, t, CS_KEY_SIZE);
  if (cs_val_absent(size)) {
    /* The timelines draw alloc/free sizes and the history view replays segment sizes; elsewhere a
     * missing size only prints "NaNYiB" (formatSize does not throw on undefined). */
    if (ev->kind == CS_REPLAY_OTHER) {
      cs_agg_hit(&c->other_no_size, w, "%s", is_snapshot ? "snapshot" : is_oom ? "oom" : "other");
    } else {
      cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'size': NaN polygon points (Chromium logs an SVG error)");
      ok = false;
    }
  } else {
    cs_loc_t sw = CS_LOC_KEY(w, "size");
    if (!cs_validate_number(c, size, &sw, "toFixed throws / NaN geometry"))
      ok = false;
    else
      ev->size = cs_vnum(c, size);
  }
  if (is_oom) {
    cs_val_t df = cs_get(c, t, CS_KEY_DEVICE_FREE);
    cs_loc_t fw = CS_LOC_KEY(w, "device_free");
    if (cs_val_absent(df))
      cs_agg_hit(&c->oom_no_free, w, "oom");
    else if (!cs_validate_number(c, df, &fw, "formatSize throws in the event list"))
      ok = false;
  }
  cs_val_t time_us = cs_get(c, t, CS_KEY_TIME_US);
  if (cs_val_absent(time_us))
    cs_agg_hit(&c->no_time, w, "no time_us");
  else if (!cs_val_is_number(time_us))
    cs_agg_hit(&c->bad_time, w, "%s", cs_validate_type(time_us));
  cs_val_t frames = cs_get(c, t, CS_KEY_FRAMES);
  if (!cs_val_absent(frames) && !cs_validate_frames(c, frames, w)) ok = false;
  cs_val_t ff = cs_get(c, t, CS_KEY_FORWARD_FRAMES);
  if (!cs_val_absent(ff) && !cs_val_is_array(ff) && !cs_val_is_null(ff) && ff != CS_VAL_FALSE &&
      !(cs_val_is_string(ff) && cs_vstr(c, ff)[0] == '\0') && !(cs_val_is_number(ff) && cs_vnum(c, ff) == 0)) {
    cs_loc_t fw = CS_LOC_KEY(w, "forward_frames");
    cs_report_at(c->r, CS_FINDING_ERROR, &fw, "is %s, not a list: the viewer throws on hover (join)",
                 cs_validate_type(ff));
    ok = false;
  }
  cs_val_t category = cs_get(c, t, CS_KEY_CATEGORY);
  if (!cs_val_absent(category)) {
    if (!cat->any) cat->first = cs_loc_where(w);
    cat->any = true;
    if (cs_val_is_string(category) && strcmp(cs_vstr(c, category), "unknown") == 0) cat->unknown = true;
  }
  ev->stream = cs_validate_stream(c, cs_get(c, t, CS_KEY_STREAM));
  return ok;
}

/* ---------------------------------------------------------------------------------------------
 * The whole snapshot
 * ------------------------------------------------------------------------------------------- */

static void cs_validate_flush_aggs(cs_vctx_t *c) {
  cs_report_t *r = c->r;
  if (c->big.count)
    cs_report_add(r, CS_FINDING_WARNING, c->big.first.s,
                  "%zu address/size values above 2^53 (first: %s): the viewer rounds them to doubles, so labels are "
                  "wrong and distinct addresses may merge",
                  c->big.count, c->big.detail);
  if (c->negative.count)
    cs_report_unreadable(r, c->negative.first.s,
                         "%zu negative address/size values (first: %s): none can be negative (an unsigned value "
                         "written as signed?); the viewer draws negative widths and every total is wrong",
                         c->negative.count, c->negative.detail);
  if (c->fractional.count)
    cs_report_add(r, CS_FINDING_WARNING, c->fractional.first.s,
                  "%zu non-integral address/size values (first: %s)", c->fractional.count, c->fractional.detail);
  if (c->no_time.count)
    cs_report_add(r, CS_FINDING_WARNING, c->no_time.first.s,
                  "%zu trace entries without 'time_us': tooltips show 'Invalid Date'", c->no_time.count);
  if (c->bad_time.count)
    cs_report_add(r, CS_FINDING_WARNING, c->bad_time.first.s,
                  "%zu trace entries whose 'time_us' is not a number (first: %s): tooltips show 'Invalid Date'",
                  c->bad_time.count, c->bad_time.detail);
  if (c->oom_no_free.count)
    cs_report_add(r, CS_FINDING_WARNING, c->oom_no_free.first.s,
                  "%zu oom entries without 'device_free': the viewer shows 'NaNYiB' free", c->oom_no_free.count);
  if (c->other_no_size.count)
    cs_report_add(r, CS_FINDING_WARNING, c->other_no_size.first.s,
                  "%zu oom/snapshot/other entries without 'size' (first: %s): the event list shows 'NaNYiB'",
                  c->other_no_size.count, c->other_no_size.detail);
  if (c->unknown_state.count)
    cs_report_add(r, CS_FINDING_WARNING, c->unknown_state.first.s,
                  "%zu blocks with an unknown state (first: %s): the viewer treats them as free, they vanish from "
                  "the views",
                  c->unknown_state.count, c->unknown_state.detail);
  if (c->unknown_action.count)
    cs_report_add(r, CS_FINDING_WARNING, c->unknown_action.first.s,
                  "%zu trace entries with an unknown action (first: %s): listed, otherwise ignored",
                  c->unknown_action.count, c->unknown_action.detail);
  if (c->tiling.count)
    cs_report_add(r, CS_FINDING_WARNING, c->tiling.first.s,
                  "%zu segments whose block sizes do not add up to total_size (first: %s): the viewer derives "
                  "block addresses from the sizes, and _memory_viz.py stats asserts",
                  c->tiling.count, c->tiling.detail);
  if (c->block_address.count)
    cs_report_add(r, CS_FINDING_WARNING, c->block_address.first.s,
                  "%zu block 'address' keys disagree with the sizes (first: %s); the viewer ignores them",
                  c->block_address.count, c->block_address.detail);
  if (c->unshown_device.count)
    cs_report_add(r, CS_FINDING_WARNING, c->unshown_device.first.s,
                  "%zu segments of devices without a device_traces list (first: %s): the viewer never shows them",
                  c->unshown_device.count, c->unshown_device.detail);
}

/* Replays device d: collects its valid segments, active blocks and events. */
static void cs_validate_replay(cs_vctx_t *c, size_t d, const cs_vseg_t *vsegs, size_t nsegs,
                               const cs_vblocks_t *blocks, const cs_replay_event_t *events, size_t nevents) {
  size_t ns = 0, nb = 0;
  for (size_t i = 0; i < nsegs; i++)
    if (vsegs[i].valid && vsegs[i].device == (int64_t)d) {
      ns++;
      nb += vsegs[i].nblocks;
    }
  cs_replay_segment_t *segs = malloc((ns ? ns : 1) * sizeof *segs);
  double *baddr = malloc((nb ? nb : 1) * sizeof *baddr);
  if (segs == NULL || baddr == NULL) {
    free(segs);
    free(baddr);
    cs_report_add(c->r, CS_FINDING_ERROR, "device_traces", "out of host memory for the replay of device %zu", d);
    return;
  }
  ns = nb = 0;
  for (size_t i = 0; i < nsegs; i++)
    if (vsegs[i].valid && vsegs[i].device == (int64_t)d) {
      segs[ns++] = vsegs[i].seg;
      if (vsegs[i].nblocks > 0)
        memcpy(baddr + nb, blocks->addr + vsegs[i].first_block, vsegs[i].nblocks * sizeof *baddr);
      nb += vsegs[i].nblocks;
    }
  cs_replay_input_t in = {segs, ns, baddr, nb, events, nevents};
  cs_replay_result_t res;
  int rc = cs_replay_device(&in, &res);
  if (rc != 0) {
    cs_report_add(c->r, CS_FINDING_ERROR, "device_traces", "out of host memory for the replay of device %zu", d);
  } else {
    if (!res.ok) {
      cs_where_t w = res.event == SIZE_MAX ? cs_where("segments (device %zu)", d)
                                           : cs_where("device_traces[%zu][%zu]", d, res.event);
      cs_report_add(c->r, CS_FINDING_ERROR, w.s, "Allocator State History: %s", res.message);
    }
    if (res.segment_alloc_unmatched) {
      cs_where_t w = cs_where("device_traces[%zu][%zu]", d, res.first_segment_alloc_unmatched);
      cs_report_add(c->r, CS_FINDING_WARNING, w.s,
                    "%zu segment_alloc events match no segment at that point: the history view removes the last "
                    "segment instead",
                    res.segment_alloc_unmatched);
    }
    if (res.budget_exhausted) {
      cs_where_t w = cs_where("device_traces[%zu][%zu]", d, res.stopped_at);
      cs_report_add(c->r, CS_FINDING_WARNING, w.s,
                    "replay stopped here: this trace keeps the segments out of order or overlapping, "
                    "which makes the history view's replay quadratic; earlier events were not checked");
    }
    if (res.overlap) {
      cs_where_t w = res.first_overlap == SIZE_MAX ? cs_where("segments (device %zu)", d)
                                                   : cs_where("device_traces[%zu][%zu]", d, res.first_overlap);
      cs_report_add(c->r, CS_FINDING_WARNING, w.s, "segments overlap in the history view's replay");
    }
  }
  free(segs);
  free(baddr);
}

/* external_annotations (PyTorch's record_function phases, cudasnap's NVTX ones). The viewer ignores
 * the key, so nothing here breaks it: problems are warnings, for the readers that pair STARTs with
 * ENDs on a timeline (torch's tools, `cudasnap summary`). One line for the first bad entry and the
 * count. */
static void cs_validate_annotations(cs_vctx_t *c, cs_val_t snap) {
  cs_report_t *r = c->r;
  cs_val_t list = cs_get(c, snap, CS_KEY_EXTERNAL_ANNOTATIONS);
  if (cs_val_absent(list)) return;
  if (!cs_val_is_array(list)) {
    cs_report_add(r, CS_FINDING_WARNING, "external_annotations", "is %s, not a list of dicts: phases are lost",
                  cs_validate_type(list));
    return;
  }
  size_t bad = 0, first = 0;
  const char *why = NULL;
  size_t n = cs_doc_len(c->doc, list);
  const cs_val_t *items = cs_doc_items(c->doc, list);
  for (size_t i = 0; i < n; i++) {
    cs_val_t a = items[i];
    const char *problem = NULL;
    if (!cs_val_is_dict(a)) {
      problem = "is not a dict";
    } else {
      cs_val_t stage = cs_get(c, a, CS_KEY_STAGE), time = cs_get(c, a, CS_KEY_TIME_US);
      if (!cs_val_is_string(cs_get(c, a, CS_KEY_NAME)))
        problem = "has no string 'name'";
      else if (!cs_val_is_string(stage) || (strcmp(cs_vstr(c, stage), "START") != 0 && strcmp(cs_vstr(c, stage), "END") != 0))
        problem = "has a 'stage' other than \"START\" or \"END\"";
      else if (!cs_val_is_number(time) || cs_vnum(c, time) < 0 || cs_vnum(c, time) != floor(cs_vnum(c, time)))
        problem = "has no integer 'time_us' >= 0";
      else if (!cs_val_is_number(cs_get(c, a, CS_KEY_DEVICE)))
        problem = "has no integer 'device'";
    }
    if (problem == NULL) continue;
    if (bad++ == 0) {
      why = problem;
      first = i;
    }
  }
  if (bad > 0) {
    cs_where_t w = cs_where("external_annotations[%zu]", first);
    cs_report_add(r, CS_FINDING_WARNING, w.s, "%s (%zu such entr%s): the phase is not shown on timelines", why, bad,
                  bad == 1 ? "y" : "ies");
  }
}

/* cudasnap.allocator_frames: the globs the tool names a file's sites by (analysis/sites.h), which
 * passes over an entry it does not take, and over all after the 64th. The viewer ignores it. */
static void cs_validate_allocator_frames(cs_vctx_t *c, cs_val_t snap) {
  cs_val_t list = cs_doc_get(c->doc, cs_get(c, snap, CS_KEY_CUDASNAP), "allocator_frames");
  if (cs_val_absent(list)) return;
  if (!cs_val_is_array(list)) {
    cs_report_add(c->r, CS_FINDING_WARNING, "cudasnap.allocator_frames",
                  "is %s, not a list of globs: sites are named without it", cs_validate_type(list));
    return;
  }
  size_t n = cs_doc_len(c->doc, list);
  for (size_t i = 0; i < n; i++) {
    size_t len = 0;
    const char *glob = cs_doc_str(c->doc, cs_doc_at(c->doc, list, i), &len);
    const char *why = glob == NULL ? "is not a string" : strlen(glob) != len ? "holds a NUL" : cs_glob_check(glob, len);
    if (why == NULL && i < 64) continue;
    cs_where_t w = cs_where("cudasnap.allocator_frames[%zu]", i);
    cs_report_add(c->r, CS_FINDING_WARNING, w.s, "%s: sites are named without %s", why ? why : "is past the 64th glob",
                  i < 64 ? "it" : "it and those after it");
    return; /* the first one says enough */
  }
}

static void cs_vctx_init(cs_vctx_t *c, const cs_doc_t *doc, cs_report_t *r) {
  memset(c, 0, sizeof *c);
  c->doc = doc;
  c->r = r;
  c->key_history = cs_doc_string_id(doc, "history", 7);
  c->key_real_size = cs_doc_string_id(doc, "real_size", 9);
  for (size_t i = 0; i < CS_VALIDATE_NACTIONS; i++)
    c->action_id[i] = cs_doc_string_id(doc, cs_validate_actions[i].name, strlen(cs_validate_actions[i].name));
  static const char *const strs[CS_VSTR_COUNT] = {"active_allocated", "active_pending_free", "inactive"};
  for (size_t i = 0; i < CS_VSTR_COUNT; i++) c->str_id[i] = cs_doc_string_id(doc, strs[i], strlen(strs[i]));
  size_t words = cs_doc_bytes(doc) / sizeof(cs_val_t);
  c->budget = words > (SIZE_MAX - CS_VALIDATE_MIN_WORK) / CS_VALIDATE_WORK_PER_WORD
                  ? SIZE_MAX
                  : CS_VALIDATE_MIN_WORK + words * CS_VALIDATE_WORK_PER_WORD;
}

/* Both cs_validate_doc and cs_validate_readable; replay: run the history replay of each device. */
static bool cs_validate_walk(const cs_doc_t *doc, cs_report_t *r, bool replay) {
  size_t errors0 = r->errors;
  cs_vctx_t c;
  cs_vctx_init(&c, doc, r);
  cs_val_t snap = cs_doc_root(doc);
  const bool legacy = cs_val_is_array(snap);
  c.legacy = legacy;
  if (!cs_val_is_dict(snap) && !legacy) {
    cs_report_unreadable(r, "(top level)", "is %s, not a dict: not a snapshot", cs_validate_type(snap));
    return false;
  }

  /* Top level. A legacy bare list is its segments, with no traces: the viewer cannot load it, but
   * its numbers are checked for the readers that take it as a snapshot without traces. */
  cs_val_t segments = legacy ? snap : cs_get(&c, snap, CS_KEY_SEGMENTS);
  cs_val_t traces = legacy ? CS_VAL_ABSENT : cs_get(&c, snap, CS_KEY_DEVICE_TRACES);
  bool top_ok = !legacy;
  size_t ndev = 0;
  if (legacy) {
    cs_report_add(r, CS_FINDING_ERROR, "(top level)",
                  "a bare list (legacy segments-only snapshot): the viewer needs a dict with 'segments' and "
                  "'device_traces'");
  } else if (!cs_val_is_array(segments) && !cs_val_is_array(traces)) {
    cs_report_unreadable(r, "(top level)",
                         "neither 'segments' (%s) nor 'device_traces' (%s) is a list: not a snapshot (the viewer "
                         "throws at load)",
                         cs_validate_type(segments), cs_validate_type(traces));
    top_ok = false;
  } else if (!cs_val_is_array(segments)) {
    cs_report_add(r, CS_FINDING_ERROR, "segments", "is %s, not a list: the viewer throws at load ('not iterable')",
                  cs_validate_type(segments));
    top_ok = false;
  } else if (!cs_val_is_array(traces)) {
    cs_report_add(r, CS_FINDING_ERROR, "device_traces",
                  "is %s, not a list of lists (one per device): the viewer throws at load ('not iterable')",
                  cs_validate_type(traces));
    top_ok = false;
  }
  if (cs_val_is_array(traces)) ndev = cs_doc_len(doc, traces);
  const cs_val_t *trace_items = cs_doc_items(doc, traces);

  /* Segments */
  size_t nsegs = cs_val_is_array(segments) ? cs_doc_len(doc, segments) : 0;
  const cs_val_t *seg_items = cs_doc_items(doc, segments);
  cs_vseg_t *vsegs = calloc(nsegs ? nsegs : 1, sizeof *vsegs);
  cs_vblocks_t blocks = {0};
  bool *dev_bad = calloc(ndev ? ndev : 1, sizeof *dev_bad);
  bool *dev_has_seg = calloc(ndev ? ndev : 1, sizeof *dev_has_seg);
  cs_replay_event_t **dev_events = NULL;
  size_t *dev_nevents = NULL;
  if (vsegs == NULL || dev_bad == NULL || dev_has_seg == NULL) {
    cs_report_add(r, CS_FINDING_ERROR, "(top level)", "out of host memory");
    goto out;
  }
  bool global_bad = false;
  cs_loc_t segroot = CS_LOC_ROOT("segments");
  for (size_t i = 0; i < nsegs; i++) {
    cs_loc_t w = CS_LOC_IDX(&segroot, i);
    bool ok = cs_validate_segment(&c, seg_items[i], &w, &vsegs[i], &blocks);
    int64_t dv = vsegs[i].device;
    if (!vsegs[i].device_ok) {
      global_bad = true; /* which device it breaks is unknown */
    } else if (dv >= 0 && (uint64_t)dv < ndev) {
      dev_has_seg[dv] = true;
      if (!ok) dev_bad[dv] = true;
    } else if (top_ok) {
      cs_loc_t dw = CS_LOC_KEY(&w, "device");
      cs_agg_hit(&c.unshown_device, &dw, "device %" PRId64 ", %zu lists", dv, ndev);
    }
  }
  if (blocks.oom) {
    cs_report_add(r, CS_FINDING_ERROR, "(top level)", "out of host memory");
    goto out;
  }

  /* Traces */
  cs_vcat_t cat = {0};
  dev_events = calloc(ndev ? ndev : 1, sizeof *dev_events);
  dev_nevents = calloc(ndev ? ndev : 1, sizeof *dev_nevents);
  if (dev_events == NULL || dev_nevents == NULL) {
    cs_report_add(r, CS_FINDING_ERROR, "(top level)", "out of host memory");
    goto out;
  }
  cs_loc_t troot = CS_LOC_ROOT("device_traces");
  for (size_t d = 0; d < ndev; d++) {
    cs_val_t tr = trace_items[d];
    if (!cs_val_is_array(tr)) {
      cs_where_t w = cs_where("device_traces[%zu]", d);
      cs_report_add(r, CS_FINDING_ERROR, w.s, "is %s, not a list: the viewer throws at load", cs_validate_type(tr));
      dev_bad[d] = true;
      continue;
    }
    size_t n = cs_doc_len(doc, tr);
    cs_loc_t tw = CS_LOC_IDX(&troot, d);
    if (!cs_validate_budget(&c, n, &tw)) {
      dev_bad[d] = true;
      continue;
    }
    dev_nevents[d] = n;
    /* The events are kept for the replay only: without it (cs_validate_readable: every
     * subcommand's load) each is checked into one scratch record, not an array of the trace's
     * length (40 MB of fresh pages for a million events). */
    cs_replay_event_t scratch;
    if (replay) {
      dev_events[d] = malloc((n ? n : 1) * sizeof **dev_events);
      if (dev_events[d] == NULL) {
        cs_report_add(r, CS_FINDING_ERROR, "(top level)", "out of host memory");
        dev_bad[d] = true;
        continue;
      }
    }
    const cs_val_t *items = cs_doc_items(doc, tr);
    for (size_t i = 0; i < n; i++) {
      cs_loc_t w = CS_LOC_IDX(&tw, i);
      if (!cs_validate_event(&c, items[i], &w, replay ? &dev_events[d][i] : &scratch, &cat)) dev_bad[d] = true;
    }
  }
  if (cat.any && !cat.unknown)
    cs_report_add(r, CS_FINDING_ERROR, cat.first.s,
                  "trace entries have 'category' keys but none is \"unknown\": the viewer throws at load (its "
                  "annotate step pushes to the misspelled 'categores'); only _profile_to_snapshot writes categories");

  /* Devices the viewer offers, and their replay */
  if (top_ok) {
    size_t offered = 0;
    for (size_t d = 0; d < ndev; d++) {
      cs_val_t tr = trace_items[d];
      bool nonempty = cs_val_is_array(tr) && cs_doc_len(doc, tr) > 0;
      if (!nonempty && !dev_has_seg[d]) continue;
      offered++;
      if (!replay || global_bad || dev_bad[d] || !cs_val_is_array(tr)) continue;
      cs_validate_replay(&c, d, vsegs, nsegs, &blocks, dev_events[d], dev_nevents[d]);
    }
    if (offered == 0)
      cs_report_add(r, CS_FINDING_ERROR, "device_traces",
                    "empty snapshot: no device has segments or trace entries, so the viewer offers no device and "
                    "the default view throws ('device_traces[device] is not iterable')");
  }
  cs_validate_flush_aggs(&c);
  cs_validate_annotations(&c, snap);
  cs_validate_allocator_frames(&c, snap);

out:
  if (dev_events != NULL)
    for (size_t d = 0; d < ndev; d++) free(dev_events[d]);
  free(dev_events);
  free(dev_nevents);
  free(vsegs);
  free(blocks.addr);
  free(dev_bad);
  free(dev_has_seg);
  free(c.fcache.slots);
  return r->errors == errors0;
}

bool cs_validate_doc(const cs_doc_t *doc, cs_report_t *r) { return cs_validate_walk(doc, r, true); }

bool cs_validate_readable(const cs_doc_t *doc, cs_report_t *r) {
  size_t unreadable0 = r->unreadable;
  cs_validate_walk(doc, r, false);
  return r->unreadable == unreadable0;
}

/* What cs_validate_bytes and cs_validate_file share: the reader's verdict, the byte-level rules on
 * the unpickler's statistics, then the content. Frees doc. */
static bool cs_validate_read(cs_doc_t *doc, cs_snapshot_format_t fmt, const cs_read_error_t *err,
                             const cs_unpickle_stats_t *st, cs_report_t *r) {
  size_t errors0 = r->errors;
  if (doc == NULL) {
    r->read_failed = true;
    r->io_errno = err->io_errno;
    cs_where_t w = cs_where("byte %zu", err->offset);
    cs_report_add(r, CS_FINDING_ERROR, w.s, "%s", err->message);
    return false;
  }
  if (fmt == CS_SNAPSHOT_PICKLE) {
    if (st->appends_max > CS_UNPICKLE_BATCH_ERROR) {
      cs_where_t w = cs_where("byte %zu", st->appends_max_offset);
      cs_report_add(r, CS_FINDING_ERROR, w.s,
                    "one MARK...APPENDS of %zu items: the viewer's push(...items) overflows its call stack "
                    "(RangeError near 180,000); write batches of at most %d",
                    st->appends_max, CS_UNPICKLE_BATCH_WARN);
    }
    if (st->appends_over_warn > 0) {
      cs_where_t w = cs_where("byte %zu", st->appends_first_over_offset);
      cs_report_add(r, CS_FINDING_WARNING, w.s,
                    "%zu APPENDS batches above %d items (largest %zu): CPython and the viewer's limits favour "
                    "batches of at most %d",
                    st->appends_over_warn, CS_UNPICKLE_BATCH_WARN, st->appends_max, CS_UNPICKLE_BATCH_WARN);
    }
    if (st->setitems_over_warn > 0) {
      cs_where_t w = cs_where("byte %zu", st->setitems_first_over_offset);
      cs_report_add(r, CS_FINDING_WARNING, w.s,
                    "%zu SETITEMS batches above %d pairs (largest %zu): write batches of at most %d",
                    st->setitems_over_warn, CS_UNPICKLE_BATCH_WARN, st->setitems_max, CS_UNPICKLE_BATCH_WARN);
    }
  }
  cs_validate_doc(doc, r);
  cs_doc_free(doc);
  return r->errors == errors0;
}

bool cs_validate_bytes(const void *data, size_t len, cs_report_t *r) {
  cs_snapshot_format_t fmt = CS_SNAPSHOT_JSON;
  cs_read_error_t err;
  cs_unpickle_stats_t st;
  cs_doc_t *doc = cs_read_snapshot_ex(data, len, &fmt, &err, &st);
  return cs_validate_read(doc, fmt, &err, &st, r);
}

bool cs_validate_file(const char *path, cs_report_t *r) {
  cs_snapshot_format_t fmt = CS_SNAPSHOT_JSON;
  cs_read_error_t err;
  cs_unpickle_stats_t st;
  cs_doc_t *doc = cs_read_snapshot_file_ex(path, &fmt, NULL, &err, &st);
  return cs_validate_read(doc, fmt, &err, &st, r);
}

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

typedef struct cs_vctx_s {
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
} cs_vctx_t;

/* ---------------------------------------------------------------------------------------------
 * Field checks
 * ------------------------------------------------------------------------------------------- */

static const char *cs_validate_type(const cJSON *v) {
  if (v == NULL) return "missing";
  if (cJSON_IsString(v)) return "a string";
  if (cJSON_IsNumber(v)) return "a number";
  if (cJSON_IsBool(v)) return "a bool";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsArray(v)) return "a list";
  if (cJSON_IsObject(v)) return "a dict";
  return "invalid";
}

static const cJSON *cs_get(const cJSON *obj, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* An address or size present in the file: a finite non-negative number (else an unreadable error),
 * ideally an integer below 2^53 (else a counted warning). why: what breaks if it is not a number.
 * Negative values are counted and reported once (they come in bulk when a writer stores unsigned
 * values as signed); they do not stop the replay. */
static bool cs_validate_number(cs_vctx_t *c, const cJSON *v, const cs_loc_t *w, const char *why) {
  if (!cJSON_IsNumber(v)) {
    if (cJSON_IsString(v))
      cs_report_unreadable_at(c->r, w, "is a string (\"%.40s\"), not a number: %s", v->valuestring, why);
    else
      cs_report_unreadable_at(c->r, w, "is %s, not a number: %s", cs_validate_type(v), why);
    return false;
  }
  double d = v->valuedouble;
  if (!isfinite(d)) {
    cs_report_unreadable_at(c->r, w, "is not finite (%g): NaN geometry in the viewer", d);
    return false;
  }
  if (d < 0) cs_agg_hit(&c->negative, w, "%.17g", d);
  if (d != floor(d)) cs_agg_hit(&c->fractional, w, "%.17g", d);
  if (v->valuestring != NULL || fabs(d) > CS_TWO_POW_53)
    cs_agg_hit(&c->big, w, "%s", v->valuestring != NULL ? v->valuestring : "");
  return true;
}

/* A required address or size. */
static bool cs_validate_required_number(cs_vctx_t *c, const cJSON *obj, const char *key, const cs_loc_t *base,
                                        const char *why) {
  const cJSON *v = cs_get(obj, key);
  if (v == NULL) {
    cs_report_at(c->r, CS_FINDING_ERROR, base, "no '%s': %s", key, why);
    return false;
  }
  cs_loc_t w = CS_LOC_KEY(base, key);
  return cs_validate_number(c, v, &w, why);
}

/* frames: a list of dicts whose filename and name are strings (format_frames and frameFilter). */
static bool cs_validate_frames(cs_vctx_t *c, const cJSON *frames, const cs_loc_t *base) {
  cs_loc_t w = CS_LOC_KEY(base, "frames");
  if (!cJSON_IsArray(frames)) {
    cs_report_at(c->r, CS_FINDING_ERROR, &w,
                 "is %s, not a list: the viewer throws when the item is hovered (format_frames)",
                 cs_validate_type(frames));
    return false;
  }
  size_t i = 0;
  for (const cJSON *f = frames->child; f != NULL; f = f->next, i++) {
    if (!cJSON_IsObject(f)) {
      cs_loc_t fw = CS_LOC_IDX(&w, i);
      cs_report_at(c->r, CS_FINDING_ERROR, &fw, "is %s, not a dict: the viewer throws on hover", cs_validate_type(f));
      return false;
    }
    const cJSON *fn = cs_get(f, "filename"), *nm = cs_get(f, "name");
    if (!cJSON_IsString(fn) || !cJSON_IsString(nm)) {
      cs_loc_t fw = CS_LOC_IDX(&w, i);
      cs_report_at(c->r, CS_FINDING_ERROR, &fw,
                   "'%s' is %s, not a string: frameFilter calls .includes on it and throws on hover",
                   !cJSON_IsString(fn) ? "filename" : "name", cs_validate_type(!cJSON_IsString(fn) ? fn : nm));
      return false;
    }
  }
  return true;
}

static cs_replay_stream_t cs_validate_stream(const cJSON *s) {
  cs_replay_stream_t st = {false, 0};
  if (cJSON_IsNumber(s)) {
    st.is_number = true;
    st.v = s->valuedouble;
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

static bool cs_validate_block(cs_vctx_t *c, const cJSON *b, const cs_loc_t *w, double *running, bool *active) {
  bool ok = true;
  *active = false;
  if (!cJSON_IsObject(b)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "block is %s, not a dict: the viewer throws at load", cs_validate_type(b));
    return false;
  }
  const cJSON *size = cs_get(b, "size");
  if (!cs_validate_required_number(c, b, "size", w, "NaN geometry and wrong addresses for the blocks after it"))
    ok = false;
  const cJSON *state = cs_get(b, "state");
  if (state == NULL) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'state'");
    ok = false;
  } else if (!cJSON_IsString(state)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "'state' is %s, not a string", cs_validate_type(state));
    ok = false;
  } else if (strcmp(state->valuestring, "active_allocated") == 0 ||
             strcmp(state->valuestring, "active_pending_free") == 0) {
    *active = true;
  } else if (strcmp(state->valuestring, "inactive") != 0) {
    cs_loc_t sw = CS_LOC_KEY(w, "state");
    cs_agg_hit(&c->unknown_state, &sw, "\"%.40s\"", state->valuestring);
  }
  const cJSON *frames = cs_get(b, "frames");
  const cJSON *req = cs_get(b, "requested_size");
  cs_loc_t rw = CS_LOC_KEY(w, "requested_size");
  if (frames != NULL) {
    if (!cs_validate_frames(c, frames, w)) ok = false;
    if (req == NULL) {
      cs_report_at(c->r, CS_FINDING_ERROR, w,
                   "has 'frames' but no 'requested_size': the viewer has no fallback then (NaN geometry)");
      ok = false;
    } else if (!cs_validate_number(c, req, &rw, "NaN geometry")) {
      ok = false;
    }
  } else {
    /* legacy block: requested_size falls back to history[0].real_size, or to size */
    const cJSON *history = cs_get(b, "history");
    if (req != NULL && !cs_validate_number(c, req, &rw, "NaN geometry")) ok = false;
    if (history != NULL) {
      if (!cJSON_IsArray(history) || !cJSON_IsObject(history->child)) {
        cs_report_at(c->r, CS_FINDING_ERROR, w,
                     "legacy 'history' is not a non-empty list of dicts: the viewer reads history[0] at load");
        ok = false;
      } else if ((req == NULL || (cJSON_IsNumber(req) && req->valuedouble == 0)) &&
                 !cJSON_IsNumber(cs_get(history->child, "real_size"))) {
        cs_report_at(c->r, CS_FINDING_ERROR, w,
                     "legacy block without requested_size and without history[0].real_size: NaN geometry");
        ok = false;
      }
    }
  }
  const cJSON *address = cs_get(b, "address");
  if (cJSON_IsNumber(address) && cJSON_IsNumber(size) && address->valuedouble != *running) {
    cs_loc_t aw = CS_LOC_KEY(w, "address");
    cs_agg_hit(&c->block_address, &aw, "%.17g, the sizes give %.17g", address->valuedouble, *running);
  }
  if (cJSON_IsNumber(size)) *running += size->valuedouble;
  return ok;
}

static bool cs_validate_segment(cs_vctx_t *c, const cJSON *s, const cs_loc_t *w, cs_vseg_t *vs,
                                cs_vblocks_t *blocks) {
  vs->valid = false;
  vs->device_ok = false;
  vs->device = -1;
  if (!cJSON_IsObject(s)) {
    if (c->legacy) /* then nothing says the list is a snapshot at all */
      cs_report_unreadable_at(c->r, w, "is %s, not a dict: a bare list of segments is a legacy snapshot, this is not",
                              cs_validate_type(s));
    else
      cs_report_at(c->r, CS_FINDING_ERROR, w, "segment is %s, not a dict: the viewer throws at load",
                   cs_validate_type(s));
    return false;
  }
  bool ok = true;
  const cJSON *device = cs_get(s, "device");
  if (device == NULL) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'device': the segment belongs to no device");
    ok = false;
  } else if (!cJSON_IsNumber(device) || !isfinite(device->valuedouble) ||
             device->valuedouble != floor(device->valuedouble)) {
    cs_loc_t dw = CS_LOC_KEY(w, "device");
    cs_report_at(c->r, CS_FINDING_ERROR, &dw,
                 "is %s, not an integer: it never equals the numeric device ordinal, so the segment is ignored "
                 "and the history view then throws",
                 cJSON_IsNumber(device) ? "a non-integral number" : cs_validate_type(device));
    ok = false;
  } else {
    vs->device_ok = true;
    vs->device = fabs(device->valuedouble) < 9e18 ? (int64_t)device->valuedouble : -1;
  }
  bool addr_ok = cs_validate_required_number(c, s, "address", w, "block addresses become strings or NaN");
  bool total_ok = cs_validate_required_number(c, s, "total_size", w, "NaN geometry");
  if (!addr_ok || !total_ok) ok = false;
  const cJSON *frames = cs_get(s, "frames");
  if (frames != NULL && !cJSON_IsNull(frames) && !cs_validate_frames(c, frames, w)) ok = false; /* `|| []` */
  const cJSON *bl = cs_get(s, "blocks");
  vs->first_block = blocks->n;
  if (bl == NULL || !cJSON_IsArray(bl)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "'blocks' is %s, not a list: the viewer throws at load ('not iterable')",
                 cs_validate_type(bl));
    ok = false;
  } else {
    double running = addr_ok ? cs_get(s, "address")->valuedouble : 0;
    int64_t exact_sum = 0;
    bool exact = true;
    cs_loc_t blw = CS_LOC_KEY(w, "blocks");
    size_t j = 0;
    for (const cJSON *b = bl->child; b != NULL; b = b->next, j++) {
      cs_loc_t bw = CS_LOC_IDX(&blw, j);
      double at = running; /* the viewer's address for this block */
      bool active = false;
      if (!cs_validate_block(c, b, &bw, &running, &active)) ok = false;
      if (active) cs_vblocks_push(blocks, at);
      int64_t sz;
      if (cJSON_IsObject(b) && cs_reader_int_exact(cs_get(b, "size"), &sz) && sz >= 0 && exact_sum <= INT64_MAX - sz)
        exact_sum += sz;
      else
        exact = false;
    }
    int64_t total;
    if (total_ok && exact && cs_reader_int_exact(cs_get(s, "total_size"), &total) && total != exact_sum)
      cs_agg_hit(&c->tiling, w, "blocks sum to %" PRId64 ", total_size is %" PRId64, exact_sum, total);
  }
  vs->nblocks = blocks->n - vs->first_block;
  if (ok) {
    vs->seg.addr = cs_get(s, "address")->valuedouble;
    vs->seg.size = cs_get(s, "total_size")->valuedouble;
    vs->seg.stream = cs_validate_stream(cs_get(s, "stream"));
    vs->valid = true;
  }
  return ok;
}

/* ---------------------------------------------------------------------------------------------
 * Trace entries
 * ------------------------------------------------------------------------------------------- */

static cs_replay_kind_t cs_validate_action(const char *a, bool *known, bool *needs_addr) {
  static const struct {
    const char *name;
    cs_replay_kind_t kind;
  } actions[] = {
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
  *needs_addr = strcmp(a, "oom") != 0 && strcmp(a, "snapshot") != 0;
  for (size_t i = 0; i < CS_ARRAY_SIZE(actions); i++)
    if (strcmp(a, actions[i].name) == 0) {
      *known = true;
      return actions[i].kind;
    }
  *known = false;
  return CS_REPLAY_OTHER;
}

typedef struct cs_vcat_s {
  bool any;
  bool unknown;
  cs_where_t first;
} cs_vcat_t;

/* One trace entry; fills *ev for the replay. Returns false on a structural error. */
static bool cs_validate_event(cs_vctx_t *c, const cJSON *t, const cs_loc_t *w, cs_replay_event_t *ev,
                              cs_vcat_t *cat) {
  memset(ev, 0, sizeof *ev);
  if (!cJSON_IsObject(t)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "trace entry is %s, not a dict: the viewer throws at load",
                 cs_validate_type(t));
    return false;
  }
  bool ok = true;
  const cJSON *action = cs_get(t, "action");
  bool known = false, needs_addr = true, is_oom = false, is_snapshot = false;
  if (action == NULL) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'action': the event list throws (padEnd of undefined)");
    ok = false;
  } else if (!cJSON_IsString(action)) {
    cs_report_at(c->r, CS_FINDING_ERROR, w, "'action' is %s, not a string: the event list throws",
                 cs_validate_type(action));
    ok = false;
  } else {
    ev->kind = cs_validate_action(action->valuestring, &known, &needs_addr);
    is_oom = strcmp(action->valuestring, "oom") == 0;
    is_snapshot = strcmp(action->valuestring, "snapshot") == 0;
    if (!known) {
      cs_loc_t aw = CS_LOC_KEY(w, "action");
      cs_agg_hit(&c->unknown_action, &aw, "\"%.40s\"", action->valuestring);
    }
  }
  if (needs_addr) {
    const cJSON *addr = cs_get(t, "addr");
    cs_loc_t aw = CS_LOC_KEY(w, "addr");
    if (addr == NULL) {
      cs_report_at(c->r, CS_FINDING_ERROR, w, "no 'addr': the event list throws (addr.toString of undefined)");
      ok = false;
    } else if (!cs_validate_number(c, addr, &aw, "the event list and the history view misbehave (string arithmetic)")) {
      ok = false;
    } else {
      ev->addr = addr->valuedouble;
    }
  }
  const cJSON *size = cs_get(t, "size");
  if (size == NULL) {
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
      ev->size = size->valuedouble;
  }
  if (is_oom) {
    const cJSON *df = cs_get(t, "device_free");
    cs_loc_t fw = CS_LOC_KEY(w, "device_free");
    if (df == NULL)
      cs_agg_hit(&c->oom_no_free, w, "oom");
    else if (!cs_validate_number(c, df, &fw, "formatSize throws in the event list"))
      ok = false;
  }
  const cJSON *time_us = cs_get(t, "time_us");
  if (time_us == NULL)
    cs_agg_hit(&c->no_time, w, "no time_us");
  else if (!cJSON_IsNumber(time_us))
    cs_agg_hit(&c->bad_time, w, "%s", cs_validate_type(time_us));
  const cJSON *frames = cs_get(t, "frames");
  if (frames != NULL && !cs_validate_frames(c, frames, w)) ok = false;
  const cJSON *ff = cs_get(t, "forward_frames");
  if (ff != NULL && !cJSON_IsArray(ff) && !cJSON_IsNull(ff) && !cJSON_IsFalse(ff) &&
      !(cJSON_IsString(ff) && ff->valuestring[0] == '\0') && !(cJSON_IsNumber(ff) && ff->valuedouble == 0)) {
    cs_loc_t fw = CS_LOC_KEY(w, "forward_frames");
    cs_report_at(c->r, CS_FINDING_ERROR, &fw, "is %s, not a list: the viewer throws on hover (join)",
                 cs_validate_type(ff));
    ok = false;
  }
  const cJSON *category = cs_get(t, "category");
  if (category != NULL) {
    if (!cat->any) cat->first = cs_loc_where(w);
    cat->any = true;
    if (cJSON_IsString(category) && strcmp(category->valuestring, "unknown") == 0) cat->unknown = true;
  }
  ev->stream = cs_validate_stream(cs_get(t, "stream"));
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
static void cs_validate_annotations(const cJSON *snap, cs_report_t *r) {
  const cJSON *list = cs_get(snap, "external_annotations");
  if (list == NULL) return;
  if (!cJSON_IsArray(list)) {
    cs_report_add(r, CS_FINDING_WARNING, "external_annotations", "is %s, not a list of dicts: phases are lost",
                  cs_validate_type(list));
    return;
  }
  size_t bad = 0, i = 0, first = 0;
  const char *why = NULL;
  for (const cJSON *a = list->child; a != NULL; a = a->next, i++) {
    const cJSON *stage = cs_get(a, "stage"), *time = cs_get(a, "time_us");
    const char *problem = NULL;
    if (!cJSON_IsObject(a)) problem = "is not a dict";
    else if (!cJSON_IsString(cs_get(a, "name"))) problem = "has no string 'name'";
    else if (!cJSON_IsString(stage) || (strcmp(stage->valuestring, "START") != 0 && strcmp(stage->valuestring, "END") != 0))
      problem = "has a 'stage' other than \"START\" or \"END\"";
    else if (!cJSON_IsNumber(time) || time->valuedouble < 0 || time->valuedouble != floor(time->valuedouble))
      problem = "has no integer 'time_us' >= 0";
    else if (!cJSON_IsNumber(cs_get(a, "device"))) problem = "has no integer 'device'";
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

/* Both cs_validate_tree and cs_validate_readable; replay: run the history replay of each device. */
static bool cs_validate_walk(const cJSON *snap, cs_report_t *r, bool replay) {
  size_t errors0 = r->errors;
  cs_vctx_t c;
  memset(&c, 0, sizeof c);
  c.r = r;
  const bool legacy = cJSON_IsArray(snap);
  c.legacy = legacy;
  if (!cJSON_IsObject(snap) && !legacy) {
    cs_report_unreadable(r, "(top level)", "is %s, not a dict: not a snapshot", cs_validate_type(snap));
    return false;
  }

  /* Top level. A legacy bare list is its segments, with no traces: the viewer cannot load it, but
   * its numbers are checked for the readers that take it as a snapshot without traces. */
  const cJSON *segments = legacy ? snap : cs_get(snap, "segments");
  const cJSON *traces = legacy ? NULL : cs_get(snap, "device_traces");
  bool top_ok = !legacy;
  size_t ndev = 0;
  if (legacy) {
    cs_report_add(r, CS_FINDING_ERROR, "(top level)",
                  "a bare list (legacy segments-only snapshot): the viewer needs a dict with 'segments' and "
                  "'device_traces'");
  } else if (!cJSON_IsArray(segments) && !cJSON_IsArray(traces)) {
    cs_report_unreadable(r, "(top level)",
                         "neither 'segments' (%s) nor 'device_traces' (%s) is a list: not a snapshot (the viewer "
                         "throws at load)",
                         cs_validate_type(segments), cs_validate_type(traces));
    top_ok = false;
  } else if (!cJSON_IsArray(segments)) {
    cs_report_add(r, CS_FINDING_ERROR, "segments", "is %s, not a list: the viewer throws at load ('not iterable')",
                  cs_validate_type(segments));
    top_ok = false;
  } else if (!cJSON_IsArray(traces)) {
    cs_report_add(r, CS_FINDING_ERROR, "device_traces",
                  "is %s, not a list of lists (one per device): the viewer throws at load ('not iterable')",
                  cs_validate_type(traces));
    top_ok = false;
  }
  if (cJSON_IsArray(traces)) ndev = (size_t)cJSON_GetArraySize(traces);

  /* Segments */
  size_t nsegs = cJSON_IsArray(segments) ? (size_t)cJSON_GetArraySize(segments) : 0;
  cs_vseg_t *vsegs = calloc(nsegs ? nsegs : 1, sizeof *vsegs);
  cs_vblocks_t blocks = {0};
  bool *dev_bad = calloc(ndev ? ndev : 1, sizeof *dev_bad);
  bool *dev_has_seg = calloc(ndev ? ndev : 1, sizeof *dev_has_seg);
  if (vsegs == NULL || dev_bad == NULL || dev_has_seg == NULL) {
    cs_report_add(r, CS_FINDING_ERROR, "(top level)", "out of host memory");
    goto out;
  }
  bool global_bad = false;
  if (nsegs > 0) {
    size_t i = 0;
    cs_loc_t segroot = CS_LOC_ROOT("segments");
    for (const cJSON *s = segments->child; s != NULL; s = s->next, i++) {
      cs_loc_t w = CS_LOC_IDX(&segroot, i);
      bool ok = cs_validate_segment(&c, s, &w, &vsegs[i], &blocks);
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
  }
  if (blocks.oom) {
    cs_report_add(r, CS_FINDING_ERROR, "(top level)", "out of host memory");
    goto out;
  }

  /* Traces */
  cs_vcat_t cat = {0};
  cs_replay_event_t **dev_events = calloc(ndev ? ndev : 1, sizeof *dev_events);
  size_t *dev_nevents = calloc(ndev ? ndev : 1, sizeof *dev_nevents);
  if (dev_events == NULL || dev_nevents == NULL) {
    free(dev_events);
    free(dev_nevents);
    cs_report_add(r, CS_FINDING_ERROR, "(top level)", "out of host memory");
    goto out;
  }
  if (ndev > 0) {
    size_t d = 0;
    for (const cJSON *tr = traces->child; tr != NULL; tr = tr->next, d++) {
      if (!cJSON_IsArray(tr)) {
        cs_where_t w = cs_where("device_traces[%zu]", d);
        cs_report_add(r, CS_FINDING_ERROR, w.s, "is %s, not a list: the viewer throws at load",
                      cs_validate_type(tr));
        dev_bad[d] = true;
        continue;
      }
      size_t n = (size_t)cJSON_GetArraySize(tr);
      dev_nevents[d] = n;
      dev_events[d] = malloc((n ? n : 1) * sizeof **dev_events);
      if (dev_events[d] == NULL) {
        cs_report_add(r, CS_FINDING_ERROR, "(top level)", "out of host memory");
        dev_bad[d] = true;
        continue;
      }
      size_t i = 0;
      cs_loc_t troot = CS_LOC_ROOT("device_traces"), tw = CS_LOC_IDX(&troot, d);
      for (const cJSON *t = tr->child; t != NULL; t = t->next, i++) {
        cs_loc_t w = CS_LOC_IDX(&tw, i);
        if (!cs_validate_event(&c, t, &w, &dev_events[d][i], &cat)) dev_bad[d] = true;
      }
    }
  }
  if (cat.any && !cat.unknown)
    cs_report_add(r, CS_FINDING_ERROR, cat.first.s,
                  "trace entries have 'category' keys but none is \"unknown\": the viewer throws at load (its "
                  "annotate step pushes to the misspelled 'categores'); only _profile_to_snapshot writes categories");

  /* Devices the viewer offers, and their replay */
  if (top_ok) {
    size_t offered = 0;
    size_t d = 0;
    for (const cJSON *tr = traces->child; tr != NULL; tr = tr->next, d++) {
      bool nonempty = cJSON_IsArray(tr) && tr->child != NULL;
      if (!nonempty && !dev_has_seg[d]) continue;
      offered++;
      if (!replay || global_bad || dev_bad[d] || !cJSON_IsArray(tr)) continue;
      cs_validate_replay(&c, d, vsegs, nsegs, &blocks, dev_events[d], dev_nevents[d]);
    }
    if (offered == 0)
      cs_report_add(r, CS_FINDING_ERROR, "device_traces",
                    "empty snapshot: no device has segments or trace entries, so the viewer offers no device and "
                    "the default view throws ('device_traces[device] is not iterable')");
  }
  for (size_t d = 0; d < ndev; d++) free(dev_events[d]);
  free(dev_events);
  free(dev_nevents);
  cs_validate_flush_aggs(&c);
  cs_validate_annotations(snap, r);

out:
  free(vsegs);
  free(blocks.addr);
  free(dev_bad);
  free(dev_has_seg);
  return r->errors == errors0;
}

bool cs_validate_tree(const cJSON *snap, cs_report_t *r) { return cs_validate_walk(snap, r, true); }

bool cs_validate_readable(const cJSON *snap, cs_report_t *r) {
  size_t unreadable0 = r->unreadable;
  cs_validate_walk(snap, r, false);
  return r->unreadable == unreadable0;
}

bool cs_validate_bytes(const void *data, size_t len, cs_report_t *r) {
  size_t errors0 = r->errors;
  cs_snapshot_format_t fmt = CS_SNAPSHOT_JSON;
  cs_read_error_t err;
  cs_unpickle_stats_t st;
  cJSON *root = cs_read_snapshot_ex(data, len, &fmt, &err, &st);
  if (root == NULL) {
    cs_where_t w = cs_where("byte %zu", err.offset);
    cs_report_add(r, CS_FINDING_ERROR, w.s, "%s", err.message);
    return false;
  }
  if (fmt == CS_SNAPSHOT_PICKLE) {
    if (st.appends_max > CS_UNPICKLE_BATCH_ERROR) {
      cs_where_t w = cs_where("byte %zu", st.appends_max_offset);
      cs_report_add(r, CS_FINDING_ERROR, w.s,
                    "one MARK...APPENDS of %zu items: the viewer's push(...items) overflows its call stack "
                    "(RangeError near 180,000); write batches of at most %d",
                    st.appends_max, CS_UNPICKLE_BATCH_WARN);
    }
    if (st.appends_over_warn > 0) {
      cs_where_t w = cs_where("byte %zu", st.appends_first_over_offset);
      cs_report_add(r, CS_FINDING_WARNING, w.s,
                    "%zu APPENDS batches above %d items (largest %zu): CPython and the viewer's limits favour "
                    "batches of at most %d",
                    st.appends_over_warn, CS_UNPICKLE_BATCH_WARN, st.appends_max, CS_UNPICKLE_BATCH_WARN);
    }
    if (st.setitems_over_warn > 0) {
      cs_where_t w = cs_where("byte %zu", st.setitems_first_over_offset);
      cs_report_add(r, CS_FINDING_WARNING, w.s,
                    "%zu SETITEMS batches above %d pairs (largest %zu): write batches of at most %d",
                    st.setitems_over_warn, CS_UNPICKLE_BATCH_WARN, st.setitems_max, CS_UNPICKLE_BATCH_WARN);
    }
  }
  cs_validate_tree(root, r);
  cJSON_Delete(root);
  return r->errors == errors0;
}

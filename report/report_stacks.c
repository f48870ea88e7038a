/* SPDX-License-Identifier: Apache-2.0 */
/* The report's site, stack and frame tables (contract in report/report_stacks.h). */
#include "report/report_stacks.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------
 * The hash index
 * ---------------------------------------------------------------------------------------------- */

typedef bool (*cs_report_same_fn)(const void *ctx, uint32_t pos);

static void cs_report_index_free(cs_report_index_t *ix) {
  free(ix->slots);
  free(ix->hashes);
  memset(ix, 0, sizeof *ix);
}

/* The slot holding the position whose item `same` recognizes, or the empty slot where it would go.
 * pre: nslots > 0. */
static size_t cs_report_index_probe(const cs_report_index_t *ix, uint64_t hash, cs_report_same_fn same,
                                    const void *ctx) {
  size_t mask = ix->nslots - 1;
  for (size_t i = (size_t)(hash >> 7) & mask;; i = (i + 1) & mask) {
    uint32_t s = ix->slots[i];
    if (s == 0 || (ix->hashes[i] == hash && same(ctx, s - 1))) return i;
  }
}

/* Room for one more entry. Returns 0, or -1 without host memory. */
static int cs_report_index_reserve(cs_report_index_t *ix) {
  if (2 * (ix->count + 1) <= ix->nslots) return 0;
  size_t nslots = ix->nslots ? ix->nslots * 2 : 256;
  uint32_t *slots = calloc(nslots, sizeof *slots);
  uint64_t *hashes = calloc(nslots, sizeof *hashes);
  if (slots == NULL || hashes == NULL) {
    free(slots);
    free(hashes);
    return -1;
  }
  for (size_t i = 0; i < ix->nslots; i++) {
    if (ix->slots[i] == 0) continue;
    size_t j = (size_t)(ix->hashes[i] >> 7) & (nslots - 1);
    while (slots[j] != 0) j = (j + 1) & (nslots - 1);
    slots[j] = ix->slots[i];
    hashes[j] = ix->hashes[i];
  }
  free(ix->slots);
  free(ix->hashes);
  ix->slots = slots;
  ix->hashes = hashes;
  ix->nslots = nslots;
  return 0;
}

/* Grow an array of `size`-byte items to hold at least `want`. Returns 0, or -1 without memory. */
static int cs_report_grow(void **items, size_t *cap, size_t want, size_t size) {
  if (want <= *cap) return 0;
  size_t n = *cap ? *cap : 64;
  while (n < want) n *= 2;
  void *bigger = realloc(*items, n * size);
  if (bigger == NULL) return -1;
  *items = bigger;
  *cap = n;
  return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Stacks and sites
 * ---------------------------------------------------------------------------------------------- */

void cs_report_stacks_init(cs_report_stacks_t *r, const cs_doc_t *doc) {
  memset(r, 0, sizeof *r);
  r->doc = doc;
  r->no_stack_site = CS_REPORT_NONE;
  cs_sites_init(&r->sites);
  cs_val_map_init(&r->site_of);
  cs_val_map_init(&r->stack_of);
}

void cs_report_stacks_free(cs_report_stacks_t *r) {
  cs_sites_free(&r->sites);
  free(r->site_stack);
  free(r->site_best);
  cs_val_map_free(&r->site_of);
  free(r->stacks);
  cs_val_map_free(&r->stack_of);
  cs_report_index_free(&r->stack_index);
  memset(r, 0, sizeof *r);
}

/* Frame lists are equal as Python compares the lists it loaded: numbers by value, an integer never
 * equal to a float (2 and 2.0 are different objects), floats with their sign (-0.0 is not 0.0) and
 * NaN equal to nothing, strings as C strings, a tuple never equal to a list, dict members in order.
 * The model stores equal containers once, but its big integers and floats are not shared, so two
 * lists with one content may be two words: equal words are equal lists, except that a list
 * holding a NaN equals nothing, itself included. */
static bool cs_report_number_equal(const cs_doc_t *doc, cs_val_t a, cs_val_t b) {
  bool float_a = cs_doc_is_float(doc, a);
  if (float_a != cs_doc_is_float(doc, b)) return false;
  double x = cs_doc_number(doc, a), y = cs_doc_number(doc, b);
  if (float_a) return x == y && !signbit(x) == !signbit(y);
  int64_t i, j;
  bool int_a = cs_doc_int(doc, a, &i), int_b = cs_doc_int(doc, b, &j);
  if (int_a || int_b) return int_a && int_b && i == j;
  return x == y; /* integers beyond int64, held as doubles */
}

/* pre: neither holds a NaN (cs_report_value_hash says), so that equal words are equal values. */
static bool cs_report_value_equal(const cs_doc_t *doc, cs_val_t a, cs_val_t b) {
  if (cs_val_is_number(a) || cs_val_is_number(b))
    return cs_val_is_number(a) && cs_val_is_number(b) && cs_report_number_equal(doc, a, b);
  if (a == b) return true;
  if (cs_val_tag(a) != cs_val_tag(b)) return false;
  if (cs_val_is_string(a)) return strcmp(cs_doc_str(doc, a, NULL), cs_doc_str(doc, b, NULL)) == 0;
  if (!cs_val_is_container(a)) return false; /* null, true, false: equal only as one word */
  size_t n = cs_doc_len(doc, a);
  if (n != cs_doc_len(doc, b)) return false;
  const cs_val_t *x = cs_doc_items(doc, a), *y = cs_doc_items(doc, b);
  for (size_t i = 0; i < n; i++) {
    if (cs_val_is_dict(a) && strcmp(cs_doc_key_at(doc, a, i), cs_doc_key_at(doc, b, i)) != 0) return false;
    if (!cs_report_value_equal(doc, x[i], y[i])) return false;
  }
  return true;
}

static uint64_t cs_report_hash_bytes(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull; /* FNV-1a */
  return h;
}

/* Equal values (cs_report_value_equal) hash alike; *nan is set when v holds a NaN. Recursion is
 * bounded by the doc's depth (CS_DOC_MAX_DEPTH). */
static uint64_t cs_report_value_hash(const cs_doc_t *doc, uint64_t h, cs_val_t v, bool *nan) {
  if (cs_val_is_number(v)) {
    int64_t x;
    if (!cs_doc_is_float(doc, v) && cs_doc_int(doc, v, &x)) return cs_report_hash_bytes(h, &x, sizeof x);
    double d = cs_doc_number(doc, v);
    if (isnan(d)) *nan = true;
    return cs_report_hash_bytes(h, &d, sizeof d);
  }
  unsigned tag = cs_val_tag(v);
  h = cs_report_hash_bytes(h, &tag, sizeof tag);
  if (cs_val_is_string(v)) {
    const char *s = cs_doc_str(doc, v, NULL);
    return cs_report_hash_bytes(h, s, strlen(s) + 1);
  }
  if (!cs_val_is_container(v)) return cs_report_hash_bytes(h, &v, sizeof v);
  size_t n = cs_doc_len(doc, v);
  const cs_val_t *items = cs_doc_items(doc, v);
  for (size_t i = 0; i < n; i++) {
    if (cs_val_is_dict(v)) {
      const char *key = cs_doc_key_at(doc, v, i);
      h = cs_report_hash_bytes(h, key, strlen(key) + 1);
    }
    h = cs_report_value_hash(doc, h, items[i], nan);
  }
  return cs_report_hash_bytes(h, "]", 1); /* [[a],b] and [[a,b]] differ */
}

typedef struct cs_report_stack_key_s {
  const cs_report_stacks_t *r;
  cs_val_t frames;
  bool nan; /* frames holds a NaN: equal to no stack */
} cs_report_stack_key_t;

static bool cs_report_stack_same(const void *ctx, uint32_t pos) {
  const cs_report_stack_key_t *k = ctx;
  return !k->nan && cs_report_value_equal(k->r->doc, k->r->stacks[pos], k->frames);
}

int cs_report_stack(cs_report_stacks_t *r, cs_val_t frames, uint32_t *stack) {
  *stack = CS_REPORT_NONE;
  if (!cs_val_is_array(frames) || cs_doc_len(r->doc, frames) == 0) return 0;
  if (cs_val_map_get(&r->stack_of, frames, stack)) return 0;
  /* A word not met yet: a new stack, or a list equal to one met under another word. */
  if (cs_report_index_reserve(&r->stack_index) != 0) return -1;
  cs_report_stack_key_t key = {.r = r, .frames = frames, .nan = false};
  uint64_t hash = cs_report_value_hash(r->doc, 0xcbf29ce484222325ull, frames, &key.nan);
  size_t slot = cs_report_index_probe(&r->stack_index, hash, cs_report_stack_same, &key);
  if (r->stack_index.slots[slot] == 0) {
    if (r->nstacks >= CS_REPORT_NONE - 1 ||
        cs_report_grow((void **)&r->stacks, &r->stack_cap, r->nstacks + 1, sizeof *r->stacks) != 0)
      return -1;
    r->stacks[r->nstacks] = frames;
    r->stack_index.slots[slot] = (uint32_t)++r->nstacks;
    r->stack_index.hashes[slot] = hash;
    r->stack_index.count++;
  }
  uint32_t pos = r->stack_index.slots[slot] - 1;
  /* A list with a NaN is a new stack each time it is met: never remembered. */
  if (!key.nan && cs_val_map_put(&r->stack_of, frames, pos) != 0) return -1;
  *stack = pos;
  return 0;
}

uint32_t cs_report_site_find(const cs_report_stacks_t *r, const cs_site_t *site) {
  const cs_site_total_t *t = cs_sites_find(&r->sites, site);
  return t != NULL ? (uint32_t)(t - r->sites.totals) : CS_REPORT_NONE;
}

/* Room in the per-site arrays for `want` sites. Returns 0, or -1 without host memory. */
static int cs_report_site_room(cs_report_stacks_t *r, size_t want) {
  if (want <= r->site_cap) return 0;
  size_t n = r->site_cap ? r->site_cap * 2 : 64;
  uint32_t *stack = realloc(r->site_stack, n * sizeof *stack);
  if (stack == NULL) return -1;
  r->site_stack = stack;
  uint64_t *best = realloc(r->site_best, n * sizeof *best);
  if (best == NULL) return -1;
  r->site_best = best;
  r->site_cap = n;
  return 0;
}

/* The position of the site of frames (a list, or CS_VAL_ABSENT), registered if new. */
static int cs_report_site_pos(cs_report_stacks_t *r, cs_val_t frames, uint32_t *pos) {
  bool stack = cs_val_is_array(frames) && cs_doc_len(r->doc, frames) > 0;
  if (stack ? cs_val_map_get(&r->site_of, frames, pos) : r->no_stack_site != CS_REPORT_NONE) {
    if (!stack) *pos = r->no_stack_site;
    return 0;
  }
  cs_site_t s = cs_site_of(r->doc, frames);
  *pos = cs_report_site_find(r, &s);
  if (*pos == CS_REPORT_NONE) {
    *pos = (uint32_t)r->sites.count;
    if (cs_report_site_room(r, (size_t)*pos + 1) != 0 || cs_sites_add(&r->sites, &s, 0) != 0) return -1;
    r->site_stack[*pos] = CS_REPORT_NONE;
    r->site_best[*pos] = 0;
  }
  if (!stack) r->no_stack_site = *pos;
  else if (cs_val_map_put(&r->site_of, frames, *pos) != 0) return -1;
  return 0;
}

int cs_report_site(cs_report_stacks_t *r, cs_val_t frames, uint64_t bytes, uint32_t *site) {
  uint32_t pos;
  if (cs_report_site_pos(r, frames, &pos) != 0) return -1;
  *site = pos;
  /* The largest block gives the stack; the first block with frames stands in until then. */
  if (r->site_stack[pos] == CS_REPORT_NONE || bytes > r->site_best[pos]) {
    uint32_t stack;
    if (cs_report_stack(r, frames, &stack) != 0) return -1;
    if (stack != CS_REPORT_NONE) {
      r->site_stack[pos] = stack;
      r->site_best[pos] = bytes;
    }
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Writing the tables
 * ---------------------------------------------------------------------------------------------- */

typedef struct cs_report_frames_s {
  cs_site_t *items; /* a frame read as a site: name, file, line */
  size_t count, cap;
  cs_report_index_t index;
} cs_report_frames_t;

typedef struct cs_report_frame_key_s {
  const cs_report_frames_t *f;
  const cs_site_t *frame;
} cs_report_frame_key_t;

static bool cs_report_frame_same(const void *ctx, uint32_t pos) {
  const cs_report_frame_key_t *k = ctx;
  return cs_site_compare(&k->f->items[pos], k->frame) == 0;
}

static uint64_t cs_report_frame_hash(const cs_site_t *f) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = f->name; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  h = (h ^ 0xff) * 0x100000001b3ull;
  for (const char *p = f->filename; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  return (h ^ (uint64_t)f->line) * 0x9e3779b97f4a7c15ull;
}

/* The position of frame in the frames table, added if new; -1 without host memory. */
static int64_t cs_report_frame(cs_report_frames_t *f, const cs_doc_t *doc, cs_val_t item) {
  cs_site_t frame = cs_site_of_frame(doc, item);
  if (cs_report_index_reserve(&f->index) != 0) return -1;
  uint64_t hash = cs_report_frame_hash(&frame);
  cs_report_frame_key_t key = {f, &frame};
  size_t slot = cs_report_index_probe(&f->index, hash, cs_report_frame_same, &key);
  if (f->index.slots[slot] == 0) {
    if (cs_report_grow((void **)&f->items, &f->cap, f->count + 1, sizeof *f->items) != 0) return -1;
    f->items[f->count] = frame;
    f->index.slots[slot] = (uint32_t)++f->count;
    f->index.hashes[slot] = hash;
    f->index.count++;
  }
  return (int64_t)f->index.slots[slot] - 1;
}

static void cs_report_emit_site(cs_emitter_t *e, const cs_site_t *s) {
  if (s->name != NULL) cs_emit_str(e, s->name);
  else cs_emit_none(e);
  cs_emit_str(e, s->filename != NULL ? s->filename : "");
  cs_emit_int(e, s->line);
}

int cs_report_stacks_emit(const cs_report_stacks_t *r, cs_emitter_t *e) {
  cs_report_frames_t frames;
  memset(&frames, 0, sizeof frames);
  int rc = 0;
  /* The stacks first, so that the frames table is complete when it is written after them. */
  cs_emit_key(e, "stacks");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < r->nstacks; i++) {
    cs_emit_list_begin(e);
    size_t n = cs_doc_len(r->doc, r->stacks[i]);
    const cs_val_t *items = cs_doc_items(r->doc, r->stacks[i]);
    for (size_t k = 0; k < n; k++) {
      int64_t pos = rc == 0 ? cs_report_frame(&frames, r->doc, items[k]) : -1;
      if (pos < 0) rc = -1;
      else cs_emit_int(e, pos);
    }
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);

  cs_emit_key(e, "frames");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < frames.count; i++) {
    cs_emit_list_begin(e);
    cs_report_emit_site(e, &frames.items[i]);
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);

  cs_emit_key(e, "sites");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < r->sites.count; i++) {
    cs_emit_list_begin(e);
    cs_report_emit_site(e, &r->sites.totals[i].site);
    cs_emit_int(e, r->site_stack[i] == CS_REPORT_NONE ? -1 : (int64_t)r->site_stack[i]);
    cs_emit_list_end(e);
  }
  cs_emit_list_end(e);

  cs_emit_key(e, "stack_sites");
  cs_emit_list_begin(e);
  for (size_t i = 0; i < r->nstacks; i++) {
    cs_site_t site = cs_site_of(r->doc, r->stacks[i]);
    uint32_t pos = cs_report_site_find(r, &site);
    cs_emit_int(e, pos == CS_REPORT_NONE ? -1 : (int64_t)pos);
  }
  cs_emit_list_end(e);
  free(frames.items);
  cs_report_index_free(&frames.index);
  return rc;
}

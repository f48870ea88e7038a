/* SPDX-License-Identifier: Apache-2.0 */
/* Allocation sites and their totals (contract in analysis/sites.h). */
#include "analysis/sites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_text.h"
#include "memviz/allocator_frames.h"
#include "memviz/site_rule.h"

/* ------------------------------------------------------------------------------------------------
 * The site of a frame list
 * ---------------------------------------------------------------------------------------------- */

static const char cs_site_unknown[] = "??";

cs_site_t cs_site_of_frame(const cs_doc_t *doc, cs_val_t frame) {
  const char *name = cs_doc_str(doc, cs_doc_get_key(doc, frame, CS_KEY_NAME), NULL);
  const char *filename = cs_doc_str(doc, cs_doc_get_key(doc, frame, CS_KEY_FILENAME), NULL);
  int64_t line = 0;
  if (!cs_doc_int(doc, cs_doc_get_key(doc, frame, CS_KEY_LINE), &line)) line = 0;
  return (cs_site_t){.name = name != NULL ? name : cs_site_unknown,
                     .filename = filename != NULL ? filename : cs_site_unknown,
                     .line = line,
                     .frames = CS_VAL_ABSENT,
                     .frame = 0};
}

bool cs_frame_inlined(const cs_doc_t *doc, cs_val_t frame) {
  return cs_val_is_true(cs_doc_get_key(doc, frame, CS_KEY_INLINED));
}

typedef struct cs_site_frames_s {
  const cs_doc_t *doc;
  const cs_val_t *items;
} cs_site_frames_t;

static cs_frame_t cs_site_frame_at(void *ctx, size_t i) {
  const cs_site_frames_t *f = ctx;
  cs_site_t s = cs_site_of_frame(f->doc, f->items[i]);
  /* The rule reads names and files; the line does not matter to it. */
  return (cs_frame_t){.name = s.name, .filename = s.filename, .line = 0};
}

/* ---- the snapshot's allocator frames ---- */

/* cudasnap.allocator_frames compiled, kept with the doc (cs_doc_keep): derived once per file. */
typedef struct cs_site_doc_frames_s {
  size_t count;
  cs_glob_t globs[];
} cs_site_doc_frames_t;

static const cs_site_doc_frames_t cs_site_no_frames = {.count = 0};

static void cs_site_doc_frames_free(void *p) { free(p); }

static const cs_site_doc_frames_t *cs_site_doc_frames(const cs_doc_t *doc) {
  const cs_site_doc_frames_t *kept = cs_doc_kept(doc);
  if (kept != NULL) return kept;
  cs_val_t list = cs_doc_get(doc, cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP), "allocator_frames");
  size_t n = cs_val_is_array(list) ? cs_doc_len(doc, list) : 0;
  if (n > CS_ALLOCATOR_FRAMES_MAX) n = CS_ALLOCATOR_FRAMES_MAX; /* a hostile file's work is bounded */
  cs_site_doc_frames_t *frames = n > 0 ? malloc(sizeof *frames + n * sizeof frames->globs[0]) : NULL;
  if (frames == NULL) /* none, or no host memory: the file's list is not used */
    return cs_doc_keep(doc, (void *)&cs_site_no_frames, NULL);
  frames->count = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = 0;
    const char *glob = cs_doc_str(doc, cs_doc_at(doc, list, i), &len);
    if (glob != NULL && strlen(glob) == len && cs_glob_compile(&frames->globs[frames->count], glob, len))
      frames->count++;
  }
  return cs_doc_keep(doc, frames, cs_site_doc_frames_free);
}

void cs_site_frames_adopt(const cs_doc_t *doc) {
  cs_val_t list = cs_doc_get(doc, cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP), "allocator_frames");
  size_t n = cs_val_is_array(list) ? cs_doc_len(doc, list) : 0;
  for (size_t i = 0; i < n && i < CS_ALLOCATOR_FRAMES_MAX; i++) {
    size_t len = 0;
    const char *glob = cs_doc_str(doc, cs_doc_at(doc, list, i), &len);
    const char *why;
    if (glob != NULL && strlen(glob) == len) (void)cs_allocator_frames_add(glob, len, &why); /* bad ones: passed over */
  }
}

/* The rule's question, with the tool's list and the file's, remembered per name where there is a
 * cache: a name is one string of the doc however many frames show it. */
typedef struct cs_site_rule_ctx_s {
  const cs_site_doc_frames_t *frames;
  cs_val_map_t *memo; /* NULL: no cache */
} cs_site_rule_ctx_t;

static bool cs_site_is_allocator(void *ctx, const cs_frame_t *f) {
  cs_site_rule_ctx_t *r = ctx;
  if (r->frames->count == 0 && cs_allocator_frames_count() == 0) return false;
  const cs_val_t key = (cs_val_t)(uintptr_t)f->name;
  uint32_t known;
  if (r->memo != NULL && cs_val_map_get(r->memo, key, &known)) return known == 2;
  const bool is = cs_allocator_frame(f) || cs_allocator_frames_match(r->frames->globs, r->frames->count, f->name);
  if (r->memo != NULL) (void)cs_val_map_put(r->memo, key, is ? 2 : 1); /* not remembered: asked again */
  return is;
}

static cs_site_rule_t cs_site_rule(cs_site_rule_ctx_t *ctx, const cs_doc_t *doc, cs_val_map_t *memo) {
  *ctx = (cs_site_rule_ctx_t){.frames = cs_site_doc_frames(doc), .memo = memo};
  return (cs_site_rule_t){.is_allocator = cs_site_is_allocator, .ctx = ctx};
}

static const cs_site_t cs_site_none = {.name = NULL, .filename = NULL, .line = 0, .frames = CS_VAL_ABSENT,
                                       .frame = 0};

/* The site whose frame is the index-th of frames. */
static cs_site_t cs_site_at(const cs_doc_t *doc, cs_val_t frames, size_t index) {
  cs_site_t site = cs_site_of_frame(doc, cs_doc_at(doc, frames, index));
  site.frames = frames;
  site.frame = index;
  return site;
}

/* The index of the site's frame in frames, a non-empty list. */
static size_t cs_site_index_of(const cs_doc_t *doc, cs_val_t frames, cs_val_map_t *memo) {
  cs_site_frames_t f = {.doc = doc, .items = cs_doc_items(doc, frames)};
  cs_site_rule_ctx_t ctx;
  const cs_site_rule_t rule = cs_site_rule(&ctx, doc, memo);
  return cs_site_index_in(&rule, cs_doc_len(doc, frames), cs_site_frame_at, &f);
}

cs_site_t cs_site_of(const cs_doc_t *doc, cs_val_t frames) {
  if (!cs_val_is_array(frames) || cs_doc_len(doc, frames) == 0) return cs_site_none;
  return cs_site_at(doc, frames, cs_site_index_of(doc, frames, NULL));
}

void cs_site_cache_init(cs_site_cache_t *c, const cs_doc_t *doc) {
  c->doc = doc;
  cs_val_map_init(&c->frame_of);
  cs_val_map_init(&c->allocator);
}

void cs_site_cache_free(cs_site_cache_t *c) {
  cs_val_map_free(&c->frame_of);
  cs_val_map_free(&c->allocator);
}

cs_site_t cs_site_cache_of(cs_site_cache_t *c, cs_val_t frames) {
  if (!cs_val_is_array(frames) || cs_doc_len(c->doc, frames) == 0) return cs_site_none;
  uint32_t index;
  if (!cs_val_map_get(&c->frame_of, frames, &index)) {
    /* A list's length is 32 bits in the model (model/doc_impl.h), so its indices fit. */
    index = (uint32_t)cs_site_index_of(c->doc, frames, &c->allocator);
    (void)cs_val_map_put(&c->frame_of, frames, index); /* not remembered: computed again next time */
  }
  return cs_site_at(c->doc, frames, index);
}

size_t cs_site_next_caller(const cs_doc_t *doc, cs_val_t frames, size_t frame) {
  size_t n = cs_val_is_array(frames) ? cs_doc_len(doc, frames) : 0;
  const cs_val_t *items = cs_doc_items(doc, frames);
  cs_site_rule_ctx_t ctx;
  const cs_site_rule_t rule = cs_site_rule(&ctx, doc, NULL);
  for (size_t i = frame + 1; i < n; i++) {
    cs_site_t s = cs_site_of_frame(doc, items[i]);
    cs_frame_t frame_named = {.name = s.name, .filename = s.filename, .line = 0};
    cs_frame_kind_t kind = cs_frame_kind_in(&rule, &frame_named);
    if (kind == CS_FRAME_USER_PYTHON || kind == CS_FRAME_USER_NATIVE) return i;
  }
  return SIZE_MAX;
}

void cs_site_format(const cs_site_t *site, char *buf, size_t len) {
  if (site->name == NULL) {
    snprintf(buf, len, "(no stack)");
  } else {
    snprintf(buf, len, "%s %s:%lld", site->name, site->filename, (long long)site->line);
  }
  if (len > 0) cs_text_label(buf); /* names from a program: a line of the tool's, whatever they hold */
}

static int cs_site_strcmp(const char *a, const char *b) {
  return strcmp(a != NULL ? a : "", b != NULL ? b : "");
}

int cs_site_compare(const cs_site_t *a, const cs_site_t *b) {
  if ((a->name == NULL) != (b->name == NULL)) return a->name == NULL ? 1 : -1; /* no stack last */
  int c = cs_site_strcmp(a->name, b->name);
  if (c == 0) c = cs_site_strcmp(a->filename, b->filename);
  if (c == 0) c = (a->line > b->line) - (a->line < b->line);
  return c;
}

/* ------------------------------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------------------------------- */

static uint64_t cs_site_hash_bytes(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull; /* FNV-1a */
  return h;
}

static uint64_t cs_site_hash(const cs_site_t *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  if (s->name == NULL) return h;
  h = cs_site_hash_bytes(h, s->name, strlen(s->name) + 1);
  h = cs_site_hash_bytes(h, s->filename, strlen(s->filename) + 1);
  return cs_site_hash_bytes(h, &s->line, sizeof s->line);
}

void cs_sites_init(cs_sites_t *t) { memset(t, 0, sizeof *t); }

void cs_sites_free(cs_sites_t *t) {
  free(t->totals);
  free(t->slots);
  cs_sites_init(t);
}

/* The slot holding site, or the empty slot where it would go. pre: nslots > 0. */
static size_t cs_sites_slot(const cs_sites_t *t, const cs_site_t *site) {
  size_t mask = t->nslots - 1;
  for (size_t i = (size_t)cs_site_hash(site) & mask;; i = (i + 1) & mask) {
    uint32_t s = t->slots[i];
    if (s == 0 || cs_site_compare(&t->totals[s - 1].site, site) == 0) return i;
  }
}

static int cs_sites_grow(cs_sites_t *t) {
  if (t->count == t->capacity) {
    size_t capacity = t->capacity ? t->capacity * 2 : 64;
    if (capacity > UINT32_MAX - 1) return -1;
    cs_site_total_t *totals = realloc(t->totals, capacity * sizeof *totals);
    if (totals == NULL) return -1;
    t->totals = totals;
    t->capacity = capacity;
  }
  if (2 * (t->count + 1) <= t->nslots) return 0;
  size_t nslots = t->nslots ? t->nslots * 2 : 128;
  uint32_t *old = t->slots;
  size_t old_n = t->nslots;
  t->slots = calloc(nslots, sizeof *t->slots);
  if (t->slots == NULL) {
    t->slots = old;
    return -1;
  }
  t->nslots = nslots;
  for (size_t i = 0; i < old_n; i++) {
    if (old[i] != 0) t->slots[cs_sites_slot(t, &t->totals[old[i] - 1].site)] = old[i];
  }
  free(old);
  return 0;
}

int cs_sites_add(cs_sites_t *t, const cs_site_t *site, uint64_t bytes) {
  if (cs_sites_grow(t) != 0) return -1;
  size_t slot = cs_sites_slot(t, site);
  if (t->slots[slot] == 0) {
    t->totals[t->count] = (cs_site_total_t){.site = *site, .bytes = 0, .blocks = 0};
    t->slots[slot] = (uint32_t)++t->count;
  }
  cs_site_total_t *total = &t->totals[t->slots[slot] - 1];
  total->bytes += bytes;
  total->blocks++;
  return 0;
}

const cs_site_total_t *cs_sites_find(const cs_sites_t *t, const cs_site_t *site) {
  if (t->nslots == 0) return NULL;
  uint32_t s = t->slots[cs_sites_slot(t, site)];
  return s != 0 ? &t->totals[s - 1] : NULL;
}

static int cs_site_total_compare(const void *x, const void *y) {
  const cs_site_total_t *a = x, *b = y;
  if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
  if (a->blocks != b->blocks) return a->blocks > b->blocks ? -1 : 1;
  return cs_site_compare(&a->site, &b->site);
}

void cs_sites_sort(cs_sites_t *t) {
  if (t->count > 1) qsort(t->totals, t->count, sizeof *t->totals, cs_site_total_compare);
  free(t->slots);
  t->slots = NULL;
  t->nslots = 0;
}

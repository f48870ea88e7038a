/* SPDX-License-Identifier: Apache-2.0 */
/* Building a snapshot model (contract in model/build.h; storage in model/doc_impl.h). */
#include "model/build.h"

#include <stdlib.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "model/doc_impl.h"
#include "model/region.h"

/* Open containers are handles CS_TAG_SPECIAL with payloads from here up. */
#define CS_BUILD_OPEN_BASE 16u

/* A smallint holds 61 bits. */
#define CS_SMALLINT_MAX (((int64_t)1 << 60) - 1)
#define CS_SMALLINT_MIN (-((int64_t)1 << 60))

typedef struct cs_open_s {
  unsigned tag; /* 0 when the slot is free */
  cs_val_t *items;
  size_t n, cap;
  uint32_t *keys; /* dicts */
  size_t capkeys;
} cs_open_t;

struct cs_build_s {
  cs_doc_t *doc;
  cs_open_t *open;
  size_t nopen, capopen;
  size_t *free_open; /* indices of free slots in open[] */
  size_t nfree, capfree;
  const char *error;
};

static const char *const cs_build_known_keys[] = {
#define CS_DOC_KEY_TEXT(id, text) text,
    CS_DOC_KEYS(CS_DOC_KEY_TEXT)
#undef CS_DOC_KEY_TEXT
};

/* ---- growable arrays -------------------------------------------------------------------------- */

static bool cs_build_grow(cs_build_t *b, void **arr, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / size) {
      b->error = "out of host memory";
      return false;
    }
    ncap *= 2;
  }
  void *p = cs_region_resize(*arr, *cap * size, ncap * size);
  if (p == NULL) {
    b->error = "out of host memory";
    return false;
  }
  *arr = p;
  *cap = ncap;
  return true;
}

#define CS_GROW(b, arr, cap, need) cs_build_grow((b), (void **)&(arr), &(cap), (need), sizeof *(arr))

/* ---- strings ---------------------------------------------------------------------------------- */

static bool cs_build_rehash_strings(cs_build_t *b) {
  cs_doc_t *d = b->doc;
  size_t n = d->nstr_slots ? d->nstr_slots * 2 : 1024;
  uint32_t *slots = calloc(n, sizeof *slots);
  if (slots == NULL) {
    b->error = "out of host memory";
    return false;
  }
  for (size_t id = 0; id < d->nstrs; id++) {
    size_t i = cs_doc_hash_str(d, d->chars + d->str_off[id], d->str_len[id]) & (n - 1);
    while (slots[i] != 0) i = (i + 1) & (n - 1);
    slots[i] = (uint32_t)id + 1;
  }
  free(d->str_slots);
  d->str_slots = slots;
  d->nstr_slots = n;
  return true;
}

/* The id of the string, interned. UINT32_MAX on failure. */
static uint32_t cs_build_intern(cs_build_t *b, const void *bytes, size_t len) {
  cs_doc_t *d = b->doc;
  if (len > UINT32_MAX - 1) {
    b->error = "a string longer than 4 GiB";
    return UINT32_MAX;
  }
  if (2 * (d->nstrs + 1) > d->nstr_slots && !cs_build_rehash_strings(b)) return UINT32_MAX;
  size_t mask = d->nstr_slots - 1;
  size_t i = cs_doc_hash_str(d, bytes, len) & mask;
  for (;; i = (i + 1) & mask) {
    uint32_t slot = d->str_slots[i];
    if (slot == 0) break;
    uint32_t id = slot - 1;
    if (d->str_len[id] == len && memcmp(d->chars + d->str_off[id], bytes, len) == 0) return id;
  }
  if (d->nstrs >= UINT32_MAX - 1) {
    b->error = "more than 4 billion distinct strings";
    return UINT32_MAX;
  }
  if (!CS_GROW(b, d->chars, d->capchars, d->nchars + len + 1)) return UINT32_MAX;
  if (!CS_GROW(b, d->str_off, d->capstrs, d->nstrs + 1) || !CS_GROW(b, d->str_len, d->capstr_len, d->nstrs + 1))
    return UINT32_MAX;
  if (len > 0) memcpy(d->chars + d->nchars, bytes, len);
  d->chars[d->nchars + len] = '\0';
  uint32_t id = (uint32_t)d->nstrs++;
  d->str_off[id] = d->nchars;
  d->str_len[id] = (uint32_t)len;
  d->nchars += len + 1;
  d->str_slots[i] = id + 1;
  return id;
}

/* ---- lifecycle -------------------------------------------------------------------------------- */

cs_build_t *cs_build_new(void) {
  cs_build_t *b = calloc(1, sizeof *b);
  if (b == NULL) return NULL;
  b->doc = calloc(1, sizeof *b->doc);
  if (b->doc == NULL) {
    free(b);
    return NULL;
  }
  cs_hash_key_random(&b->doc->hash_key);
  /* Word 0 is never a container; id 0 is the empty string, then the known keys in enum order. */
  if (!CS_GROW(b, b->doc->words, b->doc->capwords, 1024) || cs_build_intern(b, "", 0) != 0) goto fail;
  b->doc->words[b->doc->nwords++] = 0;
  for (size_t k = 0; k < CS_ARRAY_SIZE(cs_build_known_keys); k++)
    if (cs_build_intern(b, cs_build_known_keys[k], strlen(cs_build_known_keys[k])) != k + 1) goto fail;
  return b;
fail:
  cs_build_abort(b);
  return NULL;
}

static void cs_build_free_open(cs_build_t *b) {
  for (size_t i = 0; i < b->nopen; i++) {
    cs_region_free(b->open[i].items, b->open[i].cap * sizeof *b->open[i].items);
    cs_region_free(b->open[i].keys, b->open[i].capkeys * sizeof *b->open[i].keys);
  }
  cs_region_free(b->open, b->capopen * sizeof *b->open);
  cs_region_free(b->free_open, b->capfree * sizeof *b->free_open);
}

void cs_build_abort(cs_build_t *b) {
  if (b == NULL) return;
  cs_doc_free(b->doc);
  cs_build_free_open(b);
  free(b);
}

cs_doc_t *cs_build_finish(cs_build_t *b, cs_val_t root) {
  if (cs_build_is_open(b, root) || cs_val_absent(root)) {
    cs_build_abort(b);
    return NULL;
  }
  cs_doc_t *d = b->doc;
  d->root = root;
  b->doc = NULL;
  cs_build_free_open(b);
  free(b);
  return d;
}

const char *cs_build_error(const cs_build_t *b) {
  return b->error ? b->error : "no error";
}

const cs_doc_t *cs_build_doc(const cs_build_t *b) {
  return b->doc;
}

/* ---- scalars ---------------------------------------------------------------------------------- */

cs_val_t cs_build_int(cs_build_t *b, int64_t x) {
  if (x >= CS_SMALLINT_MIN && x <= CS_SMALLINT_MAX) return ((cs_val_t)x << 3) | CS_TAG_SMALLINT;
  cs_doc_t *d = b->doc;
  if (!CS_GROW(b, d->ints, d->capints, d->nints + 1)) return CS_VAL_ABSENT;
  d->ints[d->nints] = x;
  return CS_VAL_MAKE(CS_TAG_BIGINT, d->nints++);
}

cs_val_t cs_build_float(cs_build_t *b, double f, bool written_as_int) {
  cs_doc_t *d = b->doc;
  if (!CS_GROW(b, d->floats, d->capfloats, d->nfloats + 1)) return CS_VAL_ABSENT;
  d->floats[d->nfloats] = f;
  return CS_VAL_MAKE(CS_TAG_FLOAT, (uint64_t)d->nfloats++ << 1 | (written_as_int ? 1u : 0u));
}

cs_val_t cs_build_str(cs_build_t *b, const void *bytes, size_t len) {
  uint32_t id = cs_build_intern(b, bytes, len);
  return id == UINT32_MAX ? CS_VAL_ABSENT : CS_VAL_MAKE(CS_TAG_STRING, id);
}

uint32_t cs_build_key(cs_build_t *b, const void *bytes, size_t len) {
  return cs_build_intern(b, bytes, len);
}

/* ---- open containers -------------------------------------------------------------------------- */

static cs_open_t *cs_build_open_rec(const cs_build_t *b, cs_val_t v) {
  if (cs_val_tag(v) != CS_TAG_SPECIAL || cs_val_payload(v) < CS_BUILD_OPEN_BASE) return NULL;
  size_t i = (size_t)(cs_val_payload(v) - CS_BUILD_OPEN_BASE);
  if (i >= b->nopen || b->open[i].tag == 0) return NULL;
  return &b->open[i];
}

bool cs_build_is_open(const cs_build_t *b, cs_val_t v) {
  return cs_build_open_rec(b, v) != NULL;
}

size_t cs_build_open_index(const cs_build_t *b, cs_val_t v) {
  return cs_build_open_rec(b, v) ? (size_t)(cs_val_payload(v) - CS_BUILD_OPEN_BASE) : SIZE_MAX;
}

unsigned cs_build_open_tag(const cs_build_t *b, cs_val_t open) {
  const cs_open_t *o = cs_build_open_rec(b, open);
  return o ? o->tag : 0;
}

cs_val_t cs_build_open(cs_build_t *b, unsigned tag) {
  size_t i;
  if (b->nfree > 0) {
    i = b->free_open[--b->nfree];
  } else {
    if (!CS_GROW(b, b->open, b->capopen, b->nopen + 1)) return CS_VAL_ABSENT;
    i = b->nopen++;
    b->open[i] = (cs_open_t){0};
  }
  b->open[i].tag = tag;
  b->open[i].n = 0;
  return CS_VAL_MAKE(CS_TAG_SPECIAL, CS_BUILD_OPEN_BASE + i);
}

bool cs_build_append(cs_build_t *b, cs_val_t open, cs_val_t item) {
  cs_open_t *o = cs_build_open_rec(b, open);
  if (o == NULL || o->tag == CS_TAG_DICT || cs_build_is_open(b, item) || cs_val_absent(item)) {
    b->error = "a value put where it cannot go";
    return false;
  }
  if (!CS_GROW(b, o->items, o->cap, o->n + 1)) return false;
  o->items[o->n++] = item;
  return true;
}

bool cs_build_set(cs_build_t *b, cs_val_t open, uint32_t key_id, cs_val_t value) {
  cs_open_t *o = cs_build_open_rec(b, open);
  if (o == NULL || o->tag != CS_TAG_DICT || cs_build_is_open(b, value) || cs_val_absent(value)) {
    b->error = "a value put where it cannot go";
    return false;
  }
  if (!CS_GROW(b, o->items, o->cap, o->n + 1) || !CS_GROW(b, o->keys, o->capkeys, o->n + 1)) return false;
  o->items[o->n] = value;
  o->keys[o->n] = key_id;
  o->n++;
  return true;
}

/* A key given twice keeps its first position and its last value (JSON.parse, JavaScript's d[k] = v).
 * Quadratic for small dicts, which is every dict of a snapshot but the few big ones (statistics). */
static void cs_build_dedupe(cs_open_t *o, const cs_doc_t *d) {
  if (o->n < 2) return;
  if (o->n <= 32) {
    size_t out = 0;
    for (size_t i = 0; i < o->n; i++) {
      size_t j = 0;
      while (j < out && o->keys[j] != o->keys[i]) j++;
      if (j < out) {
        o->items[j] = o->items[i];
      } else {
        o->keys[out] = o->keys[i];
        o->items[out] = o->items[i];
        out++;
      }
    }
    o->n = out;
    return;
  }
  /* Larger: a small open-addressing map from key id to output position. */
  size_t nslots = 64;
  while (nslots < 2 * o->n) nslots *= 2;
  uint32_t *slots = calloc(nslots, 2 * sizeof *slots); /* (key id + 1, position) pairs */
  if (slots == NULL) return; /* leave duplicates: lookups find the first */
  size_t out = 0;
  for (size_t i = 0; i < o->n; i++) {
    size_t s = cs_doc_mix(o->keys[i], d) & (nslots - 1);
    while (slots[2 * s] != 0 && slots[2 * s] != o->keys[i] + 1) s = (s + 1) & (nslots - 1);
    if (slots[2 * s] != 0) {
      o->items[slots[2 * s + 1]] = o->items[i];
    } else {
      slots[2 * s] = o->keys[i] + 1;
      slots[2 * s + 1] = (uint32_t)out;
      o->keys[out] = o->keys[i];
      o->items[out] = o->items[i];
      out++;
    }
  }
  free(slots);
  o->n = out;
}


/* Trace events and blocks (dicts with an address or a time) are unique by what they hold: looking
 * each one up would cost a cache miss in a table of millions for nothing. They are kept as they
 * are; what repeats (frames, frame lists, empty containers, settings) is stored once. The words
 * of w are the closed container (keys after the items). */
static bool cs_build_unique(const uint64_t *w, size_t nw, unsigned tag) {
  if (tag != CS_TAG_DICT) return false;
  size_t n = cs_doc_header_count(w[0]);
  const uint32_t *keys = (const uint32_t *)(const void *)(w + 1 + n);
  (void)nw;
  for (size_t i = 0; i < n; i++)
    if (keys[i] == CS_KEY_ADDR || keys[i] == CS_KEY_ADDRESS || keys[i] == CS_KEY_TIME_US) return true;
  return false;
}

static bool cs_build_rehash_cons(cs_build_t *b) {
  cs_doc_t *d = b->doc;
  size_t n = d->ncons_slots ? d->ncons_slots * 2 : 4096;
  uint64_t *slots = calloc(n, sizeof *slots);
  if (slots == NULL) {
    b->error = "out of host memory";
    return false;
  }
  for (size_t s = 0; s < d->ncons_slots; s++) {
    uint64_t slot = d->cons_slots[s];
    if (slot == 0) continue;
    size_t i = (size_t)(slot >> 32) & (n - 1);
    while (slots[i] != 0) i = (i + 1) & (n - 1);
    slots[i] = slot;
  }
  free(d->cons_slots);
  d->cons_slots = slots;
  d->ncons_slots = n;
  return true;
}

cs_val_t cs_build_close(cs_build_t *b, cs_val_t open) {
  cs_open_t *o = cs_build_open_rec(b, open);
  if (o == NULL) {
    b->error = "closing a container that is not open";
    return CS_VAL_ABSENT;
  }
  unsigned tag = o->tag;
  if (tag == CS_TAG_DICT) cs_build_dedupe(o, b->doc);
  cs_doc_t *d = b->doc;
  unsigned depth = 1;
  for (size_t i = 0; i < o->n; i++) {
    cs_val_t it = o->items[i];
    if (cs_val_is_container(it) && cs_val_depth(it) + 1 > depth) depth = cs_val_depth(it) + 1;
  }
  if (depth > CS_DOC_MAX_DEPTH) {
    b->error = "containers nested more than 1000 deep";
    return CS_VAL_ABSENT;
  }
  if (o->n > UINT32_MAX) {
    b->error = "a container of more than 4 billion items";
    return CS_VAL_ABSENT;
  }
  size_t nw = cs_doc_container_words(o->n, tag);
  if (d->nwords + nw >= (size_t)1 << CS_VAL_OFFSET_BITS) {
    b->error = "a snapshot of more than 8 TiB";
    return CS_VAL_ABSENT;
  }
  if (!CS_GROW(b, d->words, d->capwords, d->nwords + nw)) return CS_VAL_ABSENT;
  size_t off = d->nwords;
  uint64_t *w = d->words + off;
  w[0] = cs_doc_make_header(o->n, depth, tag);
  if (o->n > 0) memcpy(w + 1, o->items, o->n * sizeof *w);
  if (tag == CS_TAG_DICT && o->n > 0) {
    w[nw - 1] = 0; /* the padding half of an odd count, zero so that equal dicts compare equal */
    memcpy(w + 1 + o->n, o->keys, o->n * sizeof *o->keys);
  }
  /* Release the open slot before anything can fail from here on. */
  o->tag = 0;
  size_t idx = (size_t)(cs_val_payload(open) - CS_BUILD_OPEN_BASE);
  if (CS_GROW(b, b->free_open, b->capfree, b->nfree + 1)) b->free_open[b->nfree++] = idx;

  cs_val_t v = CS_VAL_MAKE(tag, off | (uint64_t)depth << CS_VAL_OFFSET_BITS);
  if (off > UINT32_MAX || cs_build_unique(w, nw, tag)) { /* kept as it is, unshared */
    d->nwords += nw;
    return v;
  }
  if (2 * (d->ncons + 1) > d->ncons_slots && !cs_build_rehash_cons(b)) return CS_VAL_ABSENT;
  /* The slot index comes from the hash's high half, as the rehash above takes it from the slot. */
  uint64_t hash_hi = cs_hash_words(&d->hash_key, w, nw) & ~(uint64_t)0xffffffffu;
  size_t mask = d->ncons_slots - 1;
  size_t i = (size_t)(hash_hi >> 32) & mask;
  for (;; i = (i + 1) & mask) {
    uint64_t slot = d->cons_slots[i];
    if (slot == 0) break;
    if ((slot & ~(uint64_t)0xffffffffu) != hash_hi) continue;
    uint32_t other = (uint32_t)slot;
    if (d->words[other] == w[0] && memcmp(d->words + other, w, nw * sizeof *w) == 0)
      return CS_VAL_MAKE(tag, other | (uint64_t)depth << CS_VAL_OFFSET_BITS); /* equal: drop this copy */
  }
  d->cons_slots[i] = hash_hi | (uint32_t)off;
  d->ncons++;
  d->nwords += nw;
  return v;
}

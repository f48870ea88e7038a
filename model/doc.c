/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a snapshot model (contract in model/doc.h; storage in model/doc_impl.h). */
#include "model/doc.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "model/doc_impl.h"
#include "model/region.h"

void cs_doc_free(cs_doc_t *doc) {
  if (doc == NULL) return;
  /* grown by cs_region_resize (model/build.c) */
  cs_region_free(doc->words, doc->capwords * sizeof *doc->words);
  cs_region_free(doc->ints, doc->capints * sizeof *doc->ints);
  cs_region_free(doc->floats, doc->capfloats * sizeof *doc->floats);
  cs_region_free(doc->chars, doc->capchars);
  cs_region_free(doc->str_off, doc->capstrs * sizeof *doc->str_off);
  cs_region_free(doc->str_len, doc->capstr_len * sizeof *doc->str_len);
  free(doc->str_slots);
  free(doc->cons_slots);
  void *kept = atomic_load_explicit(&doc->kept, memory_order_acquire);
  if (kept != NULL && doc->kept_free != NULL) doc->kept_free(kept);
  free(doc);
}

void *cs_doc_kept(const cs_doc_t *doc) { return atomic_load_explicit(&((cs_doc_t *)doc)->kept, memory_order_acquire); }

void *cs_doc_keep(const cs_doc_t *doc, void *value, void (*free_fn)(void *)) {
  cs_doc_t *d = (cs_doc_t *)doc; /* the content stays as it is: only the derived value is kept */
  void *expected = NULL;
  if (atomic_compare_exchange_strong_explicit(&d->kept, &expected, value, memory_order_acq_rel, memory_order_acquire)) {
    d->kept_free = free_fn;
    return value;
  }
  if (free_fn != NULL) free_fn(value);
  return expected;
}

cs_val_t cs_doc_root(const cs_doc_t *doc) {
  return doc->root;
}

size_t cs_doc_bytes(const cs_doc_t *doc) {
  return doc->capwords * sizeof(uint64_t) + doc->capints * sizeof(int64_t) + doc->capfloats * sizeof(double) +
         doc->capchars + doc->capstrs * (sizeof(uint64_t) + sizeof(uint32_t)) +
         doc->nstr_slots * sizeof(uint32_t) + doc->ncons_slots * sizeof(uint64_t) + sizeof *doc;
}

/* ---- scalars ---------------------------------------------------------------------------------- */

bool cs_doc_int(const cs_doc_t *doc, cs_val_t v, int64_t *out) {
  int64_t x;
  switch (cs_val_tag(v)) {
  case CS_TAG_SMALLINT:
    x = (int64_t)v >> 3; /* arithmetic shift keeps the sign */
    break;
  case CS_TAG_BIGINT:
    x = doc->ints[cs_val_payload(v)];
    break;
  case CS_TAG_FLOAT: {
    double d = doc->floats[cs_val_payload(v) >> 1];
    if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0) return false;
    x = (int64_t)d;
    break;
  }
  default:
    return false;
  }
  if (out != NULL) *out = x;
  return true;
}

double cs_doc_number(const cs_doc_t *doc, cs_val_t v) {
  switch (cs_val_tag(v)) {
  case CS_TAG_SMALLINT:
    return (double)((int64_t)v >> 3);
  case CS_TAG_BIGINT:
    return (double)doc->ints[cs_val_payload(v)];
  case CS_TAG_FLOAT:
    return doc->floats[cs_val_payload(v) >> 1];
  default:
    return NAN;
  }
}

bool cs_doc_is_float(const cs_doc_t *doc, cs_val_t v) {
  (void)doc;
  return cs_val_tag(v) == CS_TAG_FLOAT && (cs_val_payload(v) & 1) == 0;
}

const char *cs_doc_string(const cs_doc_t *doc, uint32_t id, size_t *len) {
  if (id >= doc->nstrs) return NULL;
  if (len != NULL) *len = doc->str_len[id];
  return doc->chars + doc->str_off[id];
}

const char *cs_doc_str(const cs_doc_t *doc, cs_val_t v, size_t *len) {
  if (!cs_val_is_string(v)) return NULL;
  return cs_doc_string(doc, (uint32_t)cs_val_payload(v), len);
}

uint32_t cs_doc_string_id(const cs_doc_t *doc, const char *s, size_t len) {
  if (doc->nstr_slots == 0) return UINT32_MAX;
  size_t mask = doc->nstr_slots - 1;
  for (size_t i = cs_doc_hash_str(doc, s, len) & mask;; i = (i + 1) & mask) {
    uint32_t slot = doc->str_slots[i];
    if (slot == 0) return UINT32_MAX;
    uint32_t id = slot - 1;
    if (doc->str_len[id] == len && memcmp(doc->chars + doc->str_off[id], s, len) == 0) return id;
  }
}

/* ---- containers ------------------------------------------------------------------------------- */

size_t cs_doc_len(const cs_doc_t *doc, cs_val_t v) {
  if (!cs_val_is_container(v)) return 0;
  return cs_doc_header_count(cs_doc_header(doc, v));
}

const cs_val_t *cs_doc_items(const cs_doc_t *doc, cs_val_t v) {
  if (!cs_val_is_container(v)) return NULL;
  return doc->words + cs_val_offset(v) + 1;
}

cs_val_t cs_doc_at(const cs_doc_t *doc, cs_val_t v, size_t i) {
  return doc->words[cs_val_offset(v) + 1 + i];
}

static const uint32_t *cs_doc_keys(const cs_doc_t *doc, cs_val_t dict, size_t n) {
  return (const uint32_t *)(const void *)(doc->words + cs_val_offset(dict) + 1 + n);
}

uint32_t cs_doc_key_id_at(const cs_doc_t *doc, cs_val_t dict, size_t i) {
  size_t n = cs_doc_header_count(cs_doc_header(doc, dict));
  return cs_doc_keys(doc, dict, n)[i];
}

const char *cs_doc_key_at(const cs_doc_t *doc, cs_val_t dict, size_t i) {
  return cs_doc_string(doc, cs_doc_key_id_at(doc, dict, i), NULL);
}

cs_val_t cs_doc_get_id(const cs_doc_t *doc, cs_val_t dict, uint32_t key_id) {
  if (!cs_val_is_dict(dict)) return CS_VAL_ABSENT;
  size_t n = cs_doc_header_count(cs_doc_header(doc, dict));
  const uint32_t *keys = cs_doc_keys(doc, dict, n);
  for (size_t i = 0; i < n; i++)
    if (keys[i] == key_id) return doc->words[cs_val_offset(dict) + 1 + i];
  return CS_VAL_ABSENT;
}

cs_val_t cs_doc_get(const cs_doc_t *doc, cs_val_t dict, const char *key) {
  uint32_t id = cs_doc_string_id(doc, key, strlen(key));
  if (id == UINT32_MAX) return CS_VAL_ABSENT;
  return cs_doc_get_id(doc, dict, id);
}

unsigned cs_doc_depth(const cs_doc_t *doc, cs_val_t v) {
  (void)doc;
  return cs_val_is_container(v) ? cs_val_depth(v) : 0;
}

bool cs_doc_values_equal(const cs_doc_t *da, cs_val_t a, const cs_doc_t *db, cs_val_t b) {
  if (da == db && a == b) return true; /* stored once: the same word is the same content */
  unsigned ta = cs_val_tag(a), tb = cs_val_tag(b);
  bool int_a = ta == CS_TAG_SMALLINT || ta == CS_TAG_BIGINT, int_b = tb == CS_TAG_SMALLINT || tb == CS_TAG_BIGINT;
  if (int_a || int_b) {
    int64_t x, y;
    return int_a && int_b && cs_doc_int(da, a, &x) && cs_doc_int(db, b, &y) && x == y;
  }
  if (ta != tb) return false;
  switch (ta) {
  case CS_TAG_SPECIAL:
    return a == b;
  case CS_TAG_FLOAT: {
    double x = cs_doc_number(da, a), y = cs_doc_number(db, b);
    return cs_doc_is_float(da, a) == cs_doc_is_float(db, b) && memcmp(&x, &y, sizeof x) == 0;
  }
  case CS_TAG_STRING: {
    size_t la = 0, lb = 0;
    const char *sa = cs_doc_str(da, a, &la), *sb = cs_doc_str(db, b, &lb);
    return la == lb && memcmp(sa, sb, la) == 0;
  }
  default: {
    size_t n = cs_doc_len(da, a);
    if (n != cs_doc_len(db, b)) return false;
    for (size_t i = 0; i < n; i++) {
      if (ta == CS_TAG_DICT) {
        size_t la = 0, lb = 0;
        const char *ka = cs_doc_string(da, cs_doc_key_id_at(da, a, i), &la);
        const char *kb = cs_doc_string(db, cs_doc_key_id_at(db, b, i), &lb);
        if (la != lb || memcmp(ka, kb, la) != 0) return false;
      }
      if (!cs_doc_values_equal(da, cs_doc_at(da, a, i), db, cs_doc_at(db, b, i))) return false;
    }
    return true;
  }
  }
}

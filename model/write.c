/* SPDX-License-Identifier: Apache-2.0 */
/* Writing a snapshot model through an emitter (contract in model/write.h). */
#include "model/write.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/doc_impl.h"

/* ---- a map from container offset to a 64-bit word --------------------------------------------- */

typedef struct cs_offmap_s {
  const cs_doc_t *doc; /* its key (cs_doc_mix): offsets come from the file */
  uint64_t *keys; /* offset, 0 = empty (no container lives at 0) */
  uint64_t *vals;
  size_t nslots, count;
} cs_offmap_t;

static void cs_offmap_free(cs_offmap_t *m) {
  free(m->keys);
  free(m->vals);
}

static uint64_t *cs_offmap_find(const cs_offmap_t *m, uint64_t key) {
  if (m->nslots == 0) return NULL;
  size_t mask = m->nslots - 1;
  for (size_t i = cs_doc_mix(key, m->doc) & mask;; i = (i + 1) & mask) {
    if (m->keys[i] == key) return &m->vals[i];
    if (m->keys[i] == 0) return NULL;
  }
}

static int cs_offmap_put(cs_offmap_t *m, uint64_t key, uint64_t val) {
  if (2 * (m->count + 1) > m->nslots) {
    size_t n = m->nslots ? m->nslots * 2 : 1024;
    uint64_t *keys = calloc(n, sizeof *keys), *vals = malloc(n * sizeof *vals);
    if (keys == NULL || vals == NULL) {
      free(keys);
      free(vals);
      return ENOMEM;
    }
    for (size_t s = 0; s < m->nslots; s++) {
      if (m->keys[s] == 0) continue;
      size_t i = cs_doc_mix(m->keys[s], m->doc) & (n - 1);
      while (keys[i] != 0) i = (i + 1) & (n - 1);
      keys[i] = m->keys[s];
      vals[i] = m->vals[s];
    }
    cs_offmap_free(m);
    m->keys = keys;
    m->vals = vals;
    m->nslots = n;
  }
  size_t mask = m->nslots - 1;
  size_t i = cs_doc_mix(key, m->doc) & mask;
  while (m->keys[i] != 0 && m->keys[i] != key) i = (i + 1) & mask;
  if (m->keys[i] == 0) m->count++;
  m->keys[i] = key;
  m->vals[i] = val;
  return 0;
}

/* ---- extent ----------------------------------------------------------------------------------- */

/* A container's extent packed in a word: values (63 bits, saturating) and the non-finite bit. */
#define CS_EXTENT_NONFINITE ((uint64_t)1 << 63) /* a NaN below */
#define CS_EXTENT_MAX (CS_EXTENT_NONFINITE - 1)

static uint64_t cs_extent_add(uint64_t a, uint64_t b) {
  return a > CS_EXTENT_MAX - b ? CS_EXTENT_MAX : a + b;
}

int cs_doc_extent(const cs_doc_t *doc, cs_doc_extent_t *out) {
  *out = (cs_doc_extent_t){.values = 1};
  cs_val_t root = doc->root;
  if (cs_val_tag(root) == CS_TAG_FLOAT) out->nan = isnan(cs_doc_number(doc, root));
  if (!cs_val_is_container(root)) return 0;
  /* Children are closed before their parents, so they sit at lower offsets: one forward pass over
   * the arena sees every container after everything in it. */
  cs_offmap_t m = {.doc = doc};
  for (size_t off = 1; off < doc->nwords;) {
    uint64_t h = doc->words[off];
    size_t n = cs_doc_header_count(h);
    unsigned tag = cs_doc_header_tag(h);
    uint64_t values = 1, flags = 0;
    for (size_t i = 0; i < n; i++) {
      cs_val_t v = doc->words[off + 1 + i];
      uint64_t add = 1;
      if (cs_val_is_container(v)) {
        const uint64_t *child = cs_offmap_find(&m, cs_val_offset(v));
        add = child ? (*child & CS_EXTENT_MAX) : 1;
        if (child) flags |= *child & CS_EXTENT_NONFINITE;
      } else if (cs_val_tag(v) == CS_TAG_FLOAT && isnan(cs_doc_number(doc, v))) {
        flags |= CS_EXTENT_NONFINITE;
      }
      values = cs_extent_add(values, add);
    }
    if (cs_offmap_put(&m, off, values | flags) != 0) {
      cs_offmap_free(&m);
      return -1;
    }
    off += cs_doc_container_words(n, tag);
  }
  const uint64_t *r = cs_offmap_find(&m, cs_val_offset(root));
  if (r != NULL) {
    out->values = *r & CS_EXTENT_MAX;
    out->nan = (*r & CS_EXTENT_NONFINITE) != 0;
  }
  out->depth = cs_doc_depth(doc, root);
  cs_offmap_free(&m);
  return 0;
}

/* ---- writing ---------------------------------------------------------------------------------- */

typedef struct cs_doc_writer_s {
  const cs_doc_t *doc;
  cs_emitter_t *e;
  bool share;        /* memoize frame lists (pickle) */
  cs_offmap_t ids;   /* frame list offset -> memo id (the emitter's ids are dense, from 1) */
  uint32_t next_id;
  cs_doc_write_tick_fn tick;
  void *tick_ctx;
  uint64_t written;
} cs_doc_writer_t;

/* snapshot/snap_summary.h's key (the model does not depend on the library's writer) */
#define CS_DOC_HEAD_KEY "cudasnap_summary"

static void cs_doc_write_value(cs_doc_writer_t *w, cs_val_t v, uint32_t key);

static void cs_doc_write_items(cs_doc_writer_t *w, cs_val_t v) {
  size_t n = cs_doc_len(w->doc, v);
  const cs_val_t *items = cs_doc_items(w->doc, v);
  for (size_t i = 0; i < n; i++) cs_doc_write_value(w, items[i], UINT32_MAX);
}

static void cs_doc_write_list(cs_doc_writer_t *w, cs_val_t v, uint32_t key) {
  uint32_t id = 0;
  if (w->share && key == CS_KEY_FRAMES && cs_doc_len(w->doc, v) > 0) {
    uint64_t *known = cs_offmap_find(&w->ids, cs_val_offset(v));
    if (known != NULL) {
      if (cs_emit_frames_ref(w->e, (uint32_t)*known)) return;
      id = (uint32_t)*known;
    } else if (w->next_id < UINT32_MAX && cs_offmap_put(&w->ids, cs_val_offset(v), w->next_id + 1) == 0) {
      id = ++w->next_id;
    } else {
      w->share = false; /* without memory for the table: unshared, a bigger file, the same content */
    }
  }
  if (cs_val_is_tuple(v)) {
    cs_emit_tuple_begin(w->e);
    cs_doc_write_items(w, v);
    cs_emit_tuple_end(w->e);
  } else {
    cs_emit_list_begin(w->e);
    cs_doc_write_items(w, v);
    cs_emit_list_end(w->e);
  }
  if (id != 0) cs_emit_frames_done(w->e, id);
}

static void cs_doc_write_value(cs_doc_writer_t *w, cs_val_t v, uint32_t key) {
  if (w->tick != NULL && (++w->written & 0xffff) == 0) w->tick(w->tick_ctx, w->written);
  const cs_doc_t *doc = w->doc;
  int64_t x;
  size_t len;
  switch (cs_val_tag(v)) {
  case CS_TAG_SMALLINT:
  case CS_TAG_BIGINT:
    cs_doc_int(doc, v, &x);
    cs_emit_int(w->e, x);
    break;
  case CS_TAG_FLOAT:
    if (!cs_doc_is_float(doc, v) && cs_doc_int(doc, v, &x)) cs_emit_int(w->e, x);
    else cs_emit_float_keep_infinity(w->e, cs_doc_number(doc, v));
    break;
  case CS_TAG_STRING: {
    const char *s = cs_doc_str(doc, v, &len);
    cs_emit_str_n(w->e, s, len);
    break;
  }
  case CS_TAG_LIST:
  case CS_TAG_TUPLE:
    cs_doc_write_list(w, v, key);
    break;
  case CS_TAG_DICT: {
    size_t n = cs_doc_len(doc, v);
    cs_emit_dict_begin(w->e);
    for (size_t i = 0; i < n; i++) {
      uint32_t k = cs_doc_key_id_at(doc, v, i);
      const char *ks = cs_doc_string(doc, k, &len);
      cs_emit_key_n(w->e, ks, len);
      cs_doc_write_value(w, cs_doc_at(doc, v, i), k);
      /* cudasnap's head stays a pickle batch of its own, as the library writes it, so that a
       * reader can still stop after it (reader/head.h) */
      if (i == 0 && v == doc->root && len == sizeof CS_DOC_HEAD_KEY - 1 && memcmp(ks, CS_DOC_HEAD_KEY, len) == 0)
        cs_emit_batch_break(w->e);
    }
    cs_emit_dict_end(w->e);
    break;
  }
  default:
    if (cs_val_is_bool(v)) cs_emit_bool(w->e, cs_val_is_true(v));
    else cs_emit_none(w->e);
    break;
  }
}

int cs_doc_write(const cs_doc_t *doc, cs_emitter_t *e, cs_emit_format_t format, cs_doc_write_tick_fn tick,
                 void *tick_ctx) {
  cs_doc_writer_t w = {
      .doc = doc, .e = e, .share = format == CS_EMIT_PICKLE, .tick = tick, .tick_ctx = tick_ctx,
      .ids = {.doc = doc}};
  cs_emit_keep_surrogates(e); /* the readers keep a JSON file's lone surrogates (reader/json_surrogates.h) */
  cs_doc_write_value(&w, doc->root, UINT32_MAX);
  cs_offmap_free(&w.ids);
  return cs_emit_finish(e);
}

/* A tree through an emitter, frame lists shared (contract in cli/tree_emit.h). */
#include "cli/tree_emit.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/tree.h"
#include "reader/reader.h"

/* ------------------------------------------------------------------------------------------------
 * Distinct frame lists -> dense ids from 1 (the emitter's memo is an array indexed by id)
 * ---------------------------------------------------------------------------------------------- */

typedef struct cs_frames_s {
  const cJSON **lists; /* lists[id - 1]: the first list seen with that content */
  uint64_t *hashes;    /* hashes[id - 1] */
  size_t count, capacity;
  uint32_t *slots;     /* id, 0 = empty; open addressing on the hash */
  size_t nslots;       /* a power of two, kept above twice count */
} cs_frames_t;

static void cs_frames_free(cs_frames_t *f) {
  free(f->lists);
  free(f->hashes);
  free(f->slots);
}

static size_t cs_frames_slot(const cs_frames_t *f, uint64_t hash, const cJSON *list) {
  size_t mask = f->nslots - 1;
  for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
    uint32_t id = f->slots[i];
    if (id == 0 || (f->hashes[id - 1] == hash && cs_tree_equal(f->lists[id - 1], list))) return i;
  }
}

static int cs_frames_grow(cs_frames_t *f) {
  if (f->count == f->capacity) {
    size_t capacity = f->capacity ? f->capacity * 2 : 1024;
    if (capacity >= UINT32_MAX) return ENOMEM;
    const cJSON **lists = realloc(f->lists, capacity * sizeof *lists);
    if (lists == NULL) return ENOMEM;
    f->lists = lists;
    uint64_t *hashes = realloc(f->hashes, capacity * sizeof *hashes);
    if (hashes == NULL) return ENOMEM;
    f->hashes = hashes;
    f->capacity = capacity;
  }
  if (2 * (f->count + 1) <= f->nslots) return 0;
  size_t nslots = f->nslots ? f->nslots * 2 : 2048;
  uint32_t *slots = calloc(nslots, sizeof *slots);
  if (slots == NULL) return ENOMEM;
  free(f->slots);
  f->slots = slots;
  f->nslots = nslots;
  /* Every stored list is distinct, so each goes to the first empty slot of its probe run. */
  for (size_t id = 1; id <= f->count; id++) {
    size_t i = (size_t)f->hashes[id - 1] & (nslots - 1);
    while (slots[i] != 0) i = (i + 1) & (nslots - 1);
    slots[i] = (uint32_t)id;
  }
  return 0;
}

/* The id of list's content, new or not. Returns 0 or ENOMEM. */
static int cs_frames_id(cs_frames_t *f, const cJSON *list, uint32_t *id) {
  int err = cs_frames_grow(f);
  if (err != 0) return err;
  uint64_t hash = cs_tree_hash(list);
  size_t slot = cs_frames_slot(f, hash, list);
  if (f->slots[slot] == 0) {
    f->lists[f->count] = list;
    f->hashes[f->count] = hash;
    f->slots[slot] = (uint32_t)++f->count;
  }
  *id = f->slots[slot];
  return 0;
}

/* ------------------------------------------------------------------------------------------------
 * Checking and writing
 * ---------------------------------------------------------------------------------------------- */

static bool cs_tree_all_finite(const cJSON *item) {
  if (cJSON_IsNumber(item)) return isfinite(item->valuedouble);
  for (const cJSON *c = item->child; c != NULL; c = c->next) {
    if (!cs_tree_all_finite(c)) return false;
  }
  return true;
}

int cs_tree_emit_check(const cJSON *root, char *why, size_t why_len) {
  size_t depth = cs_tree_depth(root);
  if (depth > CS_EMIT_MAX_DEPTH) {
    snprintf(why, why_len, "values nest %zu deep; snapshots nest far less, and the writer takes at most %d",
             depth, CS_EMIT_MAX_DEPTH);
    return -1;
  }
  if (!cs_tree_all_finite(root)) {
    snprintf(why, why_len, "holds a NaN or an infinity, which the viewer cannot load");
    return -1;
  }
  return 0;
}

typedef struct cs_tree_writer_s {
  cs_emitter_t *e;
  bool share;          /* memoize frame lists (pickle) */
  cs_frames_t frames;
  cs_progress_t *progress;
  uint64_t written;    /* values, for the progress line */
} cs_tree_writer_t;

static void cs_tree_write(cs_tree_writer_t *w, const cJSON *item, const char *key);

static void cs_tree_write_children(cs_tree_writer_t *w, const cJSON *item) {
  for (const cJSON *c = item->child; c != NULL; c = c->next) {
    if (cJSON_IsObject(item)) cs_emit_key(w->e, c->string != NULL ? c->string : "");
    cs_tree_write(w, c, cJSON_IsObject(item) ? c->string : NULL);
  }
}

static void cs_tree_write_list(cs_tree_writer_t *w, const cJSON *item, const char *key) {
  uint32_t id = 0;
  if (w->share && item->child != NULL && key != NULL && strcmp(key, "frames") == 0) {
    /* Without host memory for the table, lists are written out unshared: a bigger file, the
     * same content. */
    if (cs_frames_id(&w->frames, item, &id) != 0) {
      w->share = false;
      id = 0;
    } else if (cs_emit_frames_ref(w->e, id)) {
      w->written += cs_tree_count(item) - 1;
      return;
    }
  }
  if (cs_reader_is_tuple(item)) {
    cs_emit_tuple_begin(w->e);
    cs_tree_write_children(w, item);
    cs_emit_tuple_end(w->e);
  } else {
    cs_emit_list_begin(w->e);
    cs_tree_write_children(w, item);
    cs_emit_list_end(w->e);
  }
  if (id != 0) cs_emit_frames_done(w->e, id);
}

static void cs_tree_write(cs_tree_writer_t *w, const cJSON *item, const char *key) {
  if (w->progress != NULL && (++w->written & 0xffff) == 0) cs_progress_update(w->progress, w->written);
  int64_t exact;
  if (cJSON_IsNumber(item)) {
    if (!cs_reader_is_float(item) && cs_reader_int_exact(item, &exact)) cs_emit_int(w->e, exact);
    else cs_emit_float(w->e, item->valuedouble);
  } else if (cJSON_IsString(item)) {
    cs_emit_str(w->e, item->valuestring);
  } else if (cJSON_IsBool(item)) {
    cs_emit_bool(w->e, cJSON_IsTrue(item));
  } else if (cJSON_IsArray(item)) {
    cs_tree_write_list(w, item, key);
  } else if (cJSON_IsObject(item)) {
    cs_emit_dict_begin(w->e);
    cs_tree_write_children(w, item);
    cs_emit_dict_end(w->e);
  } else {
    cs_emit_none(w->e);
  }
}

int cs_tree_emit(const cJSON *root, cs_emitter_t *e, cs_emit_format_t format, cs_progress_t *progress) {
  cs_tree_writer_t w = {.e = e, .share = format == CS_EMIT_PICKLE, .progress = progress};
  cs_tree_write(&w, root, NULL);
  cs_frames_free(&w.frames);
  return cs_emit_finish(e);
}

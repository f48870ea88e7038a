/* SPDX-License-Identifier: Apache-2.0 */
/* Kinds of memory by address (contract in analysis/kinds.h). */
#include "analysis/kinds.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/snapview.h"

const char cs_kind_cache[] = "cache";
const char cs_kind_unknown[] = "unknown";

bool cs_kinds_in_trace(const cs_doc_t *doc) {
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  return cs_doc_get(doc, cudasnap, "trace_kinds") == CS_VAL_TRUE;
}

const char *cs_kinds_segment(const cs_doc_t *doc, cs_val_t segment) {
  cs_val_t cudasnap = cs_doc_get_key(doc, segment, CS_KEY_CUDASNAP);
  const char *kind = cs_view_str(doc, cudasnap, "kind");
  return kind == NULL || strcmp(kind, "cached") == 0 ? cs_kind_cache : kind;
}

static int cs_kinds_cmp(const void *x, const void *y) {
  const cs_kind_range_t *a = x, *b = y;
  return (a->addr > b->addr) - (a->addr < b->addr);
}

int cs_kinds_init(cs_kinds_t *k, const cs_doc_t *doc, int device) {
  bool cudasnap = cs_val_is_dict(cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP));
  *k = (cs_kinds_t){.doc = doc, .uncovered = cudasnap ? cs_kind_unknown : cs_kind_cache,
                    .trace_kinds = cs_kinds_in_trace(doc)};
  cs_val_t segments = cs_view_segments(doc);
  size_t n = cs_val_is_array(segments) ? cs_doc_len(doc, segments) : 0;
  if (n == 0) return 0;
  k->ranges = malloc(n * sizeof *k->ranges);
  if (k->ranges == NULL) return -1;
  for (size_t i = 0; i < n; i++) {
    cs_val_t s = cs_doc_at(doc, segments, i);
    int64_t addr, size, stream;
    if (cs_view_segment_device(doc, s) != device || !cs_view_int_key(doc, s, CS_KEY_ADDRESS, &addr) ||
        !cs_view_int_key(doc, s, CS_KEY_TOTAL_SIZE, &size) || size < 0 || addr > INT64_MAX - size)
      continue;
    if (!cs_view_int_key(doc, s, CS_KEY_STREAM, &stream)) stream = 0;
    k->ranges[k->count++] =
        (cs_kind_range_t){.addr = addr, .end = addr + size, .kind = cs_kinds_segment(doc, s), .stream = stream};
  }
  qsort(k->ranges, k->count, sizeof *k->ranges, cs_kinds_cmp);
  return 0;
}

void cs_kinds_free(cs_kinds_t *k) {
  free(k->ranges);
  *k = (cs_kinds_t){.ranges = NULL};
}

const cs_kind_range_t *cs_kinds_find(const cs_kinds_t *k, int64_t addr) {
  /* the last range starting at or below addr */
  size_t lo = 0, hi = k->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (k->ranges[mid].addr <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  const cs_kind_range_t *r = &k->ranges[lo - 1];
  return addr < r->end ? r : NULL;
}

const char *cs_kinds_of(const cs_kinds_t *k, int64_t addr) {
  const cs_kind_range_t *r = cs_kinds_find(k, addr);
  return r != NULL ? r->kind : k->uncovered;
}

const char *cs_kinds_entry_own(const cs_doc_t *doc, cs_val_t entry) {
  cs_val_t cudasnap = cs_doc_get_key(doc, entry, CS_KEY_CUDASNAP);
  const char *kind = cs_val_is_dict(cudasnap) ? cs_view_str(doc, cudasnap, "kind") : NULL;
  return kind == NULL || strcmp(kind, "cached") == 0 ? NULL : kind; /* interned: one pointer a kind */
}

const char *cs_kinds_of_entry(const cs_kinds_t *k, cs_val_t entry, int64_t addr) {
  if (!k->trace_kinds) return cs_kinds_of(k, addr);
  const char *kind = cs_kinds_entry_own(k->doc, entry);
  return kind != NULL ? kind : cs_kind_cache;
}

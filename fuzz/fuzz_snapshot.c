/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the snapshot readers and the viewer-rule validator: the code behind
 * `cudasnap check/summary/convert/diff`, which reads untrusted files.
 *
 * Each input is handed, as the bytes of a file, to
 *   - cs_read_snapshot (the first byte decides: 0x80 goes to the unpickler, anything else to the
 *     strict JSON reader, which falls back to the unpickler as the viewer does), then
 *     cs_validate_doc on the model it returns;
 *   - cs_validate_bytes (read + byte-level rules + model rules + the history replay).
 * Everything is freed: LeakSanitizer reports what is not.
 *
 * Besides crashes, UB, leaks and timeouts, it checks the readers' documented contracts (a failed
 * check aborts, so libFuzzer records the input):
 *   - a returned model holds only well-formed values: every tag known, no CS_VAL_ABSENT or open
 *     container inside a container, strings NUL-terminated at their length, dicts without a key
 *     twice, nesting within CS_DOC_MAX_DEPTH and as cs_doc_depth says;
 *   - an integer (not written as a float) that cs_doc_int reads rounds to cs_doc_number's double,
 *     and every number cs_doc_int reads is integral;
 *   - equal content is one value: the same string text has one id (cs_doc_string_id finds it);
 *   - the memory a model holds stays within a constant times the input's size (memo references
 *     are shared, never copied);
 *   - error messages are NUL-terminated, and a failed read fills one;
 *   - the report's counts add up (count + dropped == errors + warnings, at most 200 kept), and
 *     cs_validate_bytes agrees with cs_read_snapshot + cs_validate_doc (one more error at most,
 *     for a pickle: the APPENDS batch rule);
 *   - the errors marked unreadable are errors, the first is kept, and cs_validate_readable (no
 *     replay) finds exactly as many as cs_validate_doc.
 * The walk visits each container once (a shared value is checked where it is first met), so a
 * pickle whose memo references multiply costs what its model holds.
 *
 * Build and run: fuzz/README.md. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/doc.h"
#include "reader/reader.h"
#include "reader/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what) {
  fprintf(stderr, "fuzz_snapshot: contract violated: %s\n", what);
  abort();
}

#define FUZZ_CHECK(e) ((e) ? (void)0 : fuzz_fail(#e))

static bool fuzz_nul_terminated(const char *s, size_t cap) {
  return memchr(s, '\0', cap) != NULL;
}

static int fuzz_cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Containers already checked (open addressing over their words; 0 = empty, never a container). */
typedef struct fuzz_seen_s {
  cs_val_t *slots;
  size_t cap, n;
} fuzz_seen_t;

/* True the first time v is met. */
static bool fuzz_first_visit(fuzz_seen_t *s, cs_val_t v) {
  if (s->n * 2 >= s->cap) {
    size_t ncap = s->cap ? s->cap * 2 : 256;
    cs_val_t *ns = calloc(ncap, sizeof *ns);
    FUZZ_CHECK(ns != NULL);
    for (size_t i = 0; i < s->cap; i++) {
      if (s->slots[i] == 0) continue;
      size_t j = (size_t)(s->slots[i] * 0x9e3779b97f4a7c15ULL) & (ncap - 1);
      while (ns[j] != 0) j = (j + 1) & (ncap - 1);
      ns[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
  }
  size_t j = (size_t)(v * 0x9e3779b97f4a7c15ULL) & (s->cap - 1);
  for (; s->slots[j] != 0; j = (j + 1) & (s->cap - 1))
    if (s->slots[j] == v) return false;
  s->slots[j] = v;
  s->n++;
  return true;
}

static void fuzz_check_scalar(const cs_doc_t *doc, cs_val_t v) {
  unsigned tag = cs_val_tag(v);
  if (tag == CS_TAG_SPECIAL) {
    FUZZ_CHECK(cs_val_is_null(v) || cs_val_is_bool(v)); /* never ABSENT, never an open container */
    return;
  }
  if (cs_val_is_number(v)) {
    double d = cs_doc_number(doc, v);
    int64_t x = 0;
    if (cs_doc_int(doc, v, &x)) {
      FUZZ_CHECK(isfinite(d) && d == floor(d));
      if (!cs_doc_is_float(doc, v)) FUZZ_CHECK((double)x == d);
    }
    if (tag != CS_TAG_FLOAT) FUZZ_CHECK(cs_doc_int(doc, v, NULL)); /* integers are int64 */
    FUZZ_CHECK(!cs_doc_is_float(doc, v) || tag == CS_TAG_FLOAT);
    return;
  }
  FUZZ_CHECK(tag == CS_TAG_STRING);
  size_t len = 0;
  const char *s = cs_doc_str(doc, v, &len);
  FUZZ_CHECK(s != NULL && s[len] == '\0');
  FUZZ_CHECK(cs_doc_string_id(doc, s, len) == (uint32_t)cs_val_payload(v)); /* stored once */
}

/* Depth is bounded by the readers (CS_DOC_MAX_DEPTH), so recursion is fine. Returns the depth. */
static unsigned fuzz_walk(const cs_doc_t *doc, cs_val_t v, fuzz_seen_t *seen) {
  if (!cs_val_is_container(v)) {
    fuzz_check_scalar(doc, v);
    FUZZ_CHECK(cs_doc_depth(doc, v) == 0);
    return 0;
  }
  unsigned depth = cs_doc_depth(doc, v);
  FUZZ_CHECK(depth >= 1 && depth <= CS_DOC_MAX_DEPTH);
  if (!fuzz_first_visit(seen, v)) return depth;
  size_t n = cs_doc_len(doc, v);
  const cs_val_t *items = cs_doc_items(doc, v);
  FUZZ_CHECK(n == 0 || items != NULL);
  unsigned inner = 0;
  for (size_t i = 0; i < n; i++) {
    FUZZ_CHECK(items[i] == cs_doc_at(doc, v, i));
    unsigned d = fuzz_walk(doc, items[i], seen);
    if (d > inner) inner = d;
  }
  FUZZ_CHECK(depth == inner + 1);
  if (cs_val_is_dict(v) && n > 0) {
    uint32_t *keys = malloc(n * sizeof *keys);
    FUZZ_CHECK(keys != NULL);
    for (size_t i = 0; i < n; i++) {
      keys[i] = cs_doc_key_id_at(doc, v, i);
      size_t len = 0;
      const char *k = cs_doc_string(doc, keys[i], &len);
      FUZZ_CHECK(k != NULL && k[len] == '\0');
      FUZZ_CHECK(cs_doc_get_id(doc, v, keys[i]) == items[i]); /* the one member of that key */
    }
    qsort(keys, n, sizeof *keys, fuzz_cmp_u32);
    for (size_t i = 1; i < n; i++) FUZZ_CHECK(keys[i - 1] != keys[i]);
    free(keys);
  }
  return depth;
}

static void fuzz_check_report(const cs_report_t *r) {
  FUZZ_CHECK(r->count <= r->capacity);
  FUZZ_CHECK(r->count <= 200);
  FUZZ_CHECK(r->count + r->dropped == r->errors + r->warnings);
  size_t e = 0;
  for (size_t i = 0; i < r->count; i++) {
    const cs_finding_t *f = &r->findings[i];
    FUZZ_CHECK(f->level == CS_FINDING_ERROR || f->level == CS_FINDING_WARNING);
    FUZZ_CHECK(fuzz_nul_terminated(f->where, sizeof f->where));
    FUZZ_CHECK(fuzz_nul_terminated(f->message, sizeof f->message));
    FUZZ_CHECK(f->message[0] != '\0');
    if (f->level == CS_FINDING_ERROR) e++;
  }
  FUZZ_CHECK(r->dropped > 0 || e == r->errors);
  FUZZ_CHECK(r->unreadable <= r->errors);
  if (r->unreadable > 0) {
    FUZZ_CHECK(r->first_unreadable.unreadable && r->first_unreadable.level == CS_FINDING_ERROR);
    FUZZ_CHECK(fuzz_nul_terminated(r->first_unreadable.message, sizeof r->first_unreadable.message));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* 1. The reader, then the model rules on what it read. */
  cs_snapshot_format_t fmt = (cs_snapshot_format_t)-1;
  cs_read_error_t err;
  memset(&err, 0x5a, sizeof err); /* the reader must overwrite it */
  cs_doc_t *doc = cs_read_snapshot(data, size, &fmt, &err);
  FUZZ_CHECK(fuzz_nul_terminated(err.message, sizeof err.message));
  size_t doc_errors = 0;
  bool read_ok = doc != NULL;
  if (doc != NULL) {
    FUZZ_CHECK(fmt == CS_SNAPSHOT_JSON || fmt == CS_SNAPSHOT_PICKLE);
    FUZZ_CHECK(size == 0 || data[0] != 0x80 || fmt == CS_SNAPSHOT_PICKLE);
    /* memory within a constant times the input (bench/README.md, "Reading"), plus fixed tables */
    FUZZ_CHECK(cs_doc_bytes(doc) <= 64 * size + ((size_t)1 << 20));
    fuzz_seen_t seen = {0};
    fuzz_walk(doc, cs_doc_root(doc), &seen);
    free(seen.slots);
    cs_report_t tr;
    cs_report_init(&tr);
    bool doc_ok = cs_validate_doc(doc, &tr);
    fuzz_check_report(&tr);
    FUZZ_CHECK(doc_ok == (tr.errors == 0));
    FUZZ_CHECK(!tr.read_failed);
    doc_errors = tr.errors;
    cs_report_t rr;
    cs_report_init(&rr);
    bool readable = cs_validate_readable(doc, &rr);
    fuzz_check_report(&rr);
    FUZZ_CHECK(readable == (rr.unreadable == 0));
    FUZZ_CHECK(rr.unreadable == tr.unreadable);
    cs_report_free(&rr);
    cs_report_free(&tr);
    cs_doc_free(doc);
  } else {
    FUZZ_CHECK(err.message[0] != '\0');
    FUZZ_CHECK(err.offset <= size);
    FUZZ_CHECK(err.io_errno == 0);
  }

  /* 2. The whole validator on the bytes. */
  cs_report_t r;
  cs_report_init(&r);
  bool ok = cs_validate_bytes(data, size, &r);
  fuzz_check_report(&r);
  FUZZ_CHECK(ok == (r.errors == 0));
  FUZZ_CHECK(r.read_failed == !read_ok);
  if (!read_ok) {
    FUZZ_CHECK(!ok && r.errors == 1);
  } else if (fmt == CS_SNAPSHOT_JSON) {
    FUZZ_CHECK(r.errors == doc_errors);
  } else {
    FUZZ_CHECK(r.errors == doc_errors || r.errors == doc_errors + 1);
  }
  cs_report_free(&r);
  return 0;
}

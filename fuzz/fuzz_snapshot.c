/* libFuzzer target for the snapshot readers and the viewer-rule validator: the code behind
 * `cudasnap check/summary/convert/diff`, which reads untrusted files.
 *
 * Each input is handed, as the bytes of a file, to
 *   - cs_read_snapshot (the first byte decides: 0x80 goes to the unpickler, anything else to the
 *     strict JSON reader, which falls back to the unpickler as the viewer does), then
 *     cs_validate_tree on the tree it returns;
 *   - cs_validate_bytes (read + byte-level rules + tree rules + the history replay).
 * Everything is freed: LeakSanitizer reports what is not.
 *
 * Besides crashes, UB, leaks and timeouts, it checks the readers' documented contracts (a failed
 * check aborts, so libFuzzer records the input):
 *   - a returned tree holds only plain cJSON types (no leftover unpickler flag bits; numbers may
 *     carry the float mark, lists the tuple mark), containers
 *     have valueint 0 (the unpickler's subtree counts are cleared), no object repeats a key;
 *   - an exact integer (cs_reader_int_exact on a number with digits in valuestring) rounds to the
 *     number's double;
 *   - error messages are NUL-terminated, and a failed read fills one;
 *   - the report's counts add up (count + dropped == errors + warnings, at most 200 kept), and
 *     cs_validate_bytes agrees with cs_read_snapshot + cs_validate_tree (one more error at most,
 *     for a pickle: the APPENDS batch rule);
 *   - the errors marked unreadable are errors, the first is kept, and cs_validate_readable (no
 *     replay) finds exactly as many as cs_validate_tree.
 *
 * Build and run: fuzz/README.md. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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

static int fuzz_cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No key twice in one object (the readers keep the first position and the last value). */
static void fuzz_check_unique_keys(const cJSON *obj) {
  size_t n = 0;
  for (const cJSON *c = obj->child; c != NULL; c = c->next) n++;
  if (n < 2) return;
  const char **keys = malloc(n * sizeof *keys);
  if (keys == NULL) return;
  size_t i = 0;
  for (const cJSON *c = obj->child; c != NULL; c = c->next) keys[i++] = c->string ? c->string : "";
  qsort(keys, n, sizeof *keys, fuzz_cmp_str);
  for (i = 1; i < n; i++) FUZZ_CHECK(strcmp(keys[i - 1], keys[i]) != 0);
  free(keys);
}

/* Depth is bounded by the readers (CS_READER_MAX_DEPTH = 1000), so recursion is fine. */
static void fuzz_walk(const cJSON *item, bool in_object) {
  for (const cJSON *c = item; c != NULL; c = c->next) {
    int base = c->type & 0xFF;
    FUZZ_CHECK(base == cJSON_False || base == cJSON_True || base == cJSON_NULL || base == cJSON_Number ||
               base == cJSON_String || base == cJSON_Array || base == cJSON_Object);
    FUZZ_CHECK((c->type & ~(0xFF | cJSON_IsReference | cJSON_StringIsConst | CS_READER_FLOAT | CS_READER_TUPLE)) ==
               0);
    FUZZ_CHECK(base == cJSON_Number || (c->type & CS_READER_FLOAT) == 0);
    FUZZ_CHECK(base == cJSON_Array || (c->type & CS_READER_TUPLE) == 0);
    FUZZ_CHECK((c->type & cJSON_IsReference) == 0);
    FUZZ_CHECK(!in_object || c->string != NULL);
    if (base == cJSON_String) FUZZ_CHECK(c->valuestring != NULL);
    if (base == cJSON_Number) {
      int64_t x = 0;
      int exact = cs_reader_int_exact(c, &x);
      if (c->valuestring != NULL) {
        FUZZ_CHECK(exact); /* exact digits are only ever stored for int64 values */
        FUZZ_CHECK((double)x == c->valuedouble);
      }
    }
    if (base == cJSON_Array || base == cJSON_Object) {
      FUZZ_CHECK(c->valueint == 0);
      FUZZ_CHECK(c->child == NULL || c->child->prev != NULL);
      if (base == cJSON_Object) fuzz_check_unique_keys(c);
      if (c->child != NULL) fuzz_walk(c->child, base == cJSON_Object);
    }
  }
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
  /* 1. The reader, then the tree rules on what it read. */
  cs_snapshot_format_t fmt = (cs_snapshot_format_t)-1;
  cs_read_error_t err;
  memset(&err, 0x5a, sizeof err); /* the reader must overwrite it */
  cJSON *root = cs_read_snapshot(data, size, &fmt, &err);
  FUZZ_CHECK(fuzz_nul_terminated(err.message, sizeof err.message));
  size_t tree_errors = 0;
  bool tree_ok = false;
  if (root != NULL) {
    FUZZ_CHECK(fmt == CS_SNAPSHOT_JSON || fmt == CS_SNAPSHOT_PICKLE);
    FUZZ_CHECK(size == 0 || data[0] != 0x80 || fmt == CS_SNAPSHOT_PICKLE);
    FUZZ_CHECK(root->next == NULL && root->string == NULL);
    fuzz_walk(root, false);
    cs_report_t tr;
    cs_report_init(&tr);
    tree_ok = cs_validate_tree(root, &tr);
    fuzz_check_report(&tr);
    FUZZ_CHECK(tree_ok == (tr.errors == 0));
    tree_errors = tr.errors;
    cs_report_t rr;
    cs_report_init(&rr);
    bool readable = cs_validate_readable(root, &rr);
    fuzz_check_report(&rr);
    FUZZ_CHECK(readable == (rr.unreadable == 0));
    FUZZ_CHECK(rr.unreadable == tr.unreadable);
    cs_report_free(&rr);
    cs_report_free(&tr);
    cJSON_Delete(root);
  } else {
    FUZZ_CHECK(err.message[0] != '\0');
    FUZZ_CHECK(err.offset <= size);
  }

  /* 2. The whole validator on the bytes. */
  cs_report_t r;
  cs_report_init(&r);
  bool ok = cs_validate_bytes(data, size, &r);
  fuzz_check_report(&r);
  FUZZ_CHECK(ok == (r.errors == 0));
  if (root == NULL) {
    FUZZ_CHECK(!ok && r.errors == 1);
  } else if (fmt == CS_SNAPSHOT_JSON) {
    FUZZ_CHECK(r.errors == tree_errors);
  } else {
    FUZZ_CHECK(r.errors == tree_errors || r.errors == tree_errors + 1);
  }
  cs_report_free(&r);
  return 0;
}

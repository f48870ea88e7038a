/* SPDX-License-Identifier: Apache-2.0 */
/* reader/validate: the viewer's rules (snapshot-format.md sections 3.2-3.9).
 *
 * Every fixture of tests/data/fixtures/MANIFEST.tsv gets its verdict (PASS = no error), from its
 * bytes and from its file alike. The backward replay of the Allocator State History view is checked
 * on its own: a trace that is valid only because free_requested + free_completed collapse into one
 * event; ring-buffer truncation (dropping the oldest N entries keeps a valid trace valid, for every
 * N) on the fixture and on a generated trace with expandable segments; and entries dropped from the
 * middle that break it.
 *
 * The small snapshots are built and edited as cJSON trees (the easiest mutable form at hand), then
 * handed to the validator as a snapshot model built from them (tree_doc). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "model/build.h"
#include "model/doc.h"
#include "reader/reader.h"
#include "reader/validate.h"

#ifndef CS_TEST_DATA_DIR
#define CS_TEST_DATA_DIR "../data"
#endif

static uint8_t *slurp_path(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  assert_non_null(b);
  *len = fread(b, 1, (size_t)n, f);
  b[*len] = '\0';
  fclose(f);
  return b;
}

static uint8_t *slurp_fixture(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/fixtures/%s", CS_TEST_DATA_DIR, name);
  uint8_t *b = slurp_path(path, len);
  if (b == NULL) fail_msg("cannot open %s", path);
  return b;
}

/* ---- cJSON trees <-> the snapshot model (tests only) ------------------------------------------ */

/* A tree's value in the builder: integral numbers that fit int64 as integers, others as floats
 * (NaN and the infinities included, which no JSON text can hold). */
static cs_val_t tree_val(cs_build_t *b, const cJSON *j) {
  if (cJSON_IsNull(j)) return CS_VAL_NULL;
  if (cJSON_IsTrue(j)) return CS_VAL_TRUE;
  if (cJSON_IsFalse(j)) return CS_VAL_FALSE;
  if (cJSON_IsNumber(j)) {
    double d = j->valuedouble;
    if (isfinite(d) && d == floor(d) && fabs(d) < 9.2e18) return cs_build_int(b, (int64_t)d);
    return cs_build_float(b, d, false);
  }
  if (cJSON_IsString(j)) return cs_build_str(b, j->valuestring, strlen(j->valuestring));
  bool dict = cJSON_IsObject(j);
  assert_true(dict || cJSON_IsArray(j));
  cs_val_t open = cs_build_open(b, dict ? CS_TAG_DICT : CS_TAG_LIST);
  assert_false(cs_val_absent(open));
  for (const cJSON *c = j->child; c != NULL; c = c->next) {
    cs_val_t v = tree_val(b, c);
    assert_false(cs_val_absent(v));
    if (dict)
      assert_true(cs_build_set(b, open, cs_build_key(b, c->string, strlen(c->string)), v));
    else
      assert_true(cs_build_append(b, open, v));
  }
  cs_val_t v = cs_build_close(b, open);
  assert_false(cs_val_absent(v));
  return v;
}

static cs_doc_t *tree_doc(const cJSON *j) {
  cs_build_t *b = cs_build_new();
  assert_non_null(b);
  cs_doc_t *doc = cs_build_finish(b, tree_val(b, j));
  assert_non_null(doc);
  return doc;
}

/* A model's value as a tree (numbers as doubles: the fixtures edited here hold none above 2^53). */
static cJSON *doc_tree(const cs_doc_t *doc, cs_val_t v) {
  if (cs_val_is_null(v)) return cJSON_CreateNull();
  if (cs_val_is_bool(v)) return cJSON_CreateBool(cs_val_is_true(v));
  if (cs_val_is_number(v)) return cJSON_CreateNumber(cs_doc_number(doc, v));
  if (cs_val_is_string(v)) return cJSON_CreateString(cs_doc_str(doc, v, NULL));
  size_t n = cs_doc_len(doc, v);
  if (cs_val_is_dict(v)) {
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToObject(o, cs_doc_key_at(doc, v, i), doc_tree(doc, cs_doc_at(doc, v, i)));
    return o;
  }
  assert_true(cs_val_is_array(v));
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, doc_tree(doc, cs_doc_at(doc, v, i)));
  return a;
}

static cs_doc_t *read_fixture_doc(const char *name) {
  size_t n;
  uint8_t *b = slurp_fixture(name, &n);
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot(b, n, NULL, &err);
  free(b);
  if (doc == NULL) fail_msg("%s: %s", name, err.message);
  return doc;
}

/* A fixture as a tree, to edit. */
static cJSON *read_fixture(const char *name) {
  cs_doc_t *doc = read_fixture_doc(name);
  cJSON *t = doc_tree(doc, cs_doc_root(doc));
  cs_doc_free(doc);
  return t;
}

static const cs_finding_t *first_error(const cs_report_t *r) {
  for (size_t i = 0; i < r->count; i++)
    if (r->findings[i].level == CS_FINDING_ERROR) return &r->findings[i];
  return NULL;
}

static void dump(const cs_report_t *r) {
  for (size_t i = 0; i < r->count; i++)
    print_message("    %s %s: %s\n", r->findings[i].level == CS_FINDING_ERROR ? "ERROR" : "warning",
                  r->findings[i].where, r->findings[i].message);
}

/* Validates a model; returns true when clean. The report is kept for inspection. */
static bool check_doc(const cs_doc_t *doc, cs_report_t *r) {
  cs_report_init(r);
  bool ok = cs_validate_doc(doc, r);
  assert_true(ok == (r->errors == 0));
  return ok;
}

/* Validates (the model of) a tree. */
static bool check_tree(const cJSON *t, cs_report_t *r) {
  cs_doc_t *doc = tree_doc(t);
  bool ok = check_doc(doc, r);
  cs_doc_free(doc);
  return ok;
}


/* --------------------------------------------------------------------------------------------- */

static void test_manifest(void **state) {
  (void)state;
  size_t n;
  char *manifest = (char *)slurp_fixture("MANIFEST.tsv", &n);
  size_t rows = 0, mismatches = 0;
  char *save = NULL;
  char *line = strtok_r(manifest, "\n", &save); /* the header */
  assert_non_null(line);
  assert_true(strncmp(line, "file\texpected", 13) == 0);
  while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
    char *tab = strchr(line, '\t');
    if (tab == NULL) continue;
    *tab = '\0';
    const char *file = line, *expected = tab + 1;
    bool want_pass = strncmp(expected, "PASS", 4) == 0;
    assert_true(want_pass || strncmp(expected, "FAIL", 4) == 0);
    size_t len;
    uint8_t *data = slurp_fixture(file, &len);
    cs_report_t r;
    cs_report_init(&r);
    bool ok = cs_validate_bytes(data, len, &r);
    assert_true(ok == (r.errors == 0));
    if (ok != want_pass) {
      const cs_finding_t *e = first_error(&r);
      print_message("MISMATCH %s: expected %s, got %s%s%s%s%s\n", file, want_pass ? "PASS" : "FAIL",
                    ok ? "PASS" : "FAIL", e ? " (" : "", e ? e->where : "", e ? ": " : "", e ? e->message : "");
      if (e) print_message("%s", e ? ")\n" : "");
      mismatches++;
    }
    cs_report_free(&r);
    free(data);
    rows++;
  }
  free(manifest);
  assert_int_equal(rows, 33);
  assert_int_equal(mismatches, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Small snapshots built in code
 * ------------------------------------------------------------------------------------------- */

static cJSON *new_snapshot(void) {
  cJSON *s = cJSON_CreateObject();
  cJSON_AddItemToObject(s, "segments", cJSON_CreateArray());
  cJSON *traces = cJSON_CreateArray();
  cJSON_AddItemToArray(traces, cJSON_CreateArray());
  cJSON_AddItemToObject(s, "device_traces", traces);
  return s;
}

/* A segment of device 0 whose blocks (size, state) tile it. */
static void add_segment(cJSON *snap, double addr, const double *sizes, const char *const *states, size_t n,
                        double stream) {
  cJSON *seg = cJSON_CreateObject();
  double total = 0;
  for (size_t i = 0; i < n; i++) total += sizes[i];
  cJSON_AddNumberToObject(seg, "device", 0);
  cJSON_AddNumberToObject(seg, "address", addr);
  cJSON_AddNumberToObject(seg, "total_size", total);
  cJSON_AddNumberToObject(seg, "stream", stream);
  cJSON *blocks = cJSON_AddArrayToObject(seg, "blocks");
  for (size_t i = 0; i < n; i++) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNumberToObject(b, "size", sizes[i]);
    cJSON_AddNumberToObject(b, "requested_size", sizes[i]);
    cJSON_AddStringToObject(b, "state", states[i]);
    cJSON_AddItemToObject(b, "frames", cJSON_CreateArray());
    cJSON_AddItemToArray(blocks, b);
  }
  cJSON_AddItemToArray(cJSON_GetObjectItem(snap, "segments"), seg);
}

static void add_event(cJSON *snap, const char *action, double addr, double size, double stream) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "action", action);
  cJSON_AddNumberToObject(e, "addr", addr);
  cJSON_AddNumberToObject(e, "size", size);
  cJSON_AddNumberToObject(e, "stream", stream);
  cJSON_AddNumberToObject(e, "time_us", 1);
  cJSON_AddItemToArray(cJSON_GetArrayItem(cJSON_GetObjectItem(snap, "device_traces"), 0), e);
}

static cJSON *trace0(cJSON *snap) {
  return cJSON_GetArrayItem(cJSON_GetObjectItem(snap, "device_traces"), 0);
}

/* Keeps device_traces[0][from..] (the ring buffer overwrote the oldest entries). */
static cJSON *suffix_of(const cJSON *snap, int from) {
  cJSON *s = cJSON_Duplicate(snap, 1);
  cJSON *t = trace0(s);
  for (int i = 0; i < from; i++) cJSON_DeleteItemFromArray(t, 0);
  return s;
}

static const double k_one[] = {4096};
static const char *const k_inactive[] = {"inactive"};

static void add_annotation(cJSON *snap, const char *name, const char *stage, double time_us) {
  cJSON *list = cJSON_GetObjectItem(snap, "external_annotations");
  if (!list) list = cJSON_AddArrayToObject(snap, "external_annotations");
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "stage", stage);
  cJSON_AddStringToObject(a, "name", name);
  cJSON_AddNumberToObject(a, "device", 0);
  cJSON_AddNumberToObject(a, "time_us", time_us);
  cJSON_AddItemToArray(list, a);
}

/* external_annotations: well-formed ones are clean; bad ones are one warning, never an error (the
 * viewer ignores the key). */
static void test_annotations(void **state) {
  (void)state;
  cJSON *s = new_snapshot();
  add_segment(s, 1 << 20, k_one, (const char *const[]){"active_allocated"}, 1, 0);
  add_annotation(s, "step", "START", 10);
  add_annotation(s, "step", "END", 20);
  cs_report_t r;
  assert_true(check_tree(s, &r));
  assert_int_equal(r.count, 0);
  cs_report_free(&r);
  add_annotation(s, "step", "BEGIN", 30);
  add_annotation(s, "step", "END", -1);
  assert_true(check_tree(s, &r));
  if (r.count != 1) dump(&r);
  assert_int_equal(r.count, 1);
  assert_int_equal(r.findings[0].level, CS_FINDING_WARNING);
  assert_string_equal(r.findings[0].where, "external_annotations[2]");
  assert_non_null(strstr(r.findings[0].message, "(2 such entries)"));
  cs_report_free(&r);
  cJSON_Delete(s);
}


/* free_requested X immediately followed by free_completed X is one `free` event; at index 0 it is
 * never undone. X lies in no segment. Without the collapse (an event in between), undoing the
 * free_completed re-creates X outside every segment: the history view throws. */
static void test_replay_collapse(void **state) {
  (void)state;
  cs_report_t r;
  cJSON *s = new_snapshot();
  add_segment(s, 0x100000, k_one, k_inactive, 1, 0);
  add_event(s, "free_requested", 0x900000, 100, 0);
  add_event(s, "free_completed", 0x900000, 100, 0);
  if (!check_tree(s, &r)) {
    dump(&r);
    fail_msg("collapsed pair rejected");
  }
  cs_report_free(&r);

  /* (cJSON_InsertItemInArray at index > 0 fails in Debian's libcjson 1.7.15-1+deb12u4: rebuild) */
  cJSON *u = new_snapshot();
  add_segment(u, 0x100000, k_one, k_inactive, 1, 0);
  add_event(u, "free_requested", 0x900000, 100, 0);
  add_event(u, "snapshot", 0, 0, 0);
  add_event(u, "free_completed", 0x900000, 100, 0);
  assert_false(check_tree(u, &r));
  const cs_finding_t *e = first_error(&r);
  assert_non_null(e);
  assert_string_equal(e->where, "device_traces[0][2]");
  assert_non_null(strstr(e->message, "free_completed"));
  cs_report_free(&r);
  cJSON_Delete(u);
  cJSON_Delete(s);
}

/* The other ways the history view throws, and what it tolerates. */
static void test_replay_rules(void **state) {
  (void)state;
  cs_report_t r;
  static const double two[] = {2048, 2048};
  static const char *const pend[] = {"active_pending_free", "inactive"};
  static const char *const alloc_st[] = {"active_allocated", "inactive"};

  /* an unpaired free_requested is fine for a block pending at snapshot time ... */
  cJSON *s = new_snapshot();
  add_segment(s, 0x100000, two, pend, 2, 0);
  add_event(s, "snapshot", 0, 0, 0);
  add_event(s, "free_requested", 0x100000, 100, 0);
  assert_true(check_tree(s, &r));
  cs_report_free(&r);
  cJSON_Delete(s);
  /* ... and not for one that is gone */
  s = new_snapshot();
  add_segment(s, 0x100000, two, alloc_st, 2, 0);
  add_event(s, "snapshot", 0, 0, 0);
  add_event(s, "free_requested", 0x100800, 100, 0);
  assert_false(check_tree(s, &r));
  assert_string_equal(first_error(&r)->where, "device_traces[0][1]");
  cs_report_free(&r);
  /* event 0 is never undone: the same orphan at index 0 is harmless */
  cJSON_DeleteItemFromArray(trace0(s), 0);
  assert_true(check_tree(s, &r));
  cs_report_free(&r);
  cJSON_Delete(s);

  /* segment_map must lie in a segment */
  s = new_snapshot();
  add_segment(s, 0x100000, k_one, k_inactive, 1, 7);
  add_event(s, "snapshot", 0, 0, 0);
  add_event(s, "segment_map", 0x100800, 2048, 7); /* the tail of the segment: fine */
  add_event(s, "segment_map", 0x200000, 2048, 7); /* nowhere */
  assert_false(check_tree(s, &r));
  assert_string_equal(first_error(&r)->where, "device_traces[0][2]");
  assert_non_null(strstr(first_error(&r)->message, "segment_map"));
  cs_report_free(&r);
  cJSON_DeleteItemFromArray(trace0(s), 2);
  assert_true(check_tree(s, &r));
  cs_report_free(&r);
  cJSON_Delete(s);

  /* final state: blocks running past their segment (sizes do not tile it) */
  s = new_snapshot();
  add_segment(s, 0x100000, two, alloc_st, 2, 0);
  cJSON *seg = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "segments"), 0);
  cJSON_ReplaceItemInObject(seg, "total_size", cJSON_CreateNumber(2048)); /* the active block still fits */
  assert_true(check_tree(s, &r));
  assert_int_equal(r.warnings, 1); /* sizes do not add up */
  cs_report_free(&r);
  cJSON *blocks = cJSON_GetObjectItem(seg, "blocks");
  cJSON_ReplaceItemInObject(cJSON_GetArrayItem(blocks, 1), "state", cJSON_CreateString("active_allocated"));
  assert_false(check_tree(s, &r)); /* the second block starts at the segment's end */
  assert_string_equal(first_error(&r)->where, "segments (device 0)");
  cs_report_free(&r);
  cJSON_Delete(s);

  /* segment_alloc at an address with no segment: silently removes the last segment */
  s = new_snapshot();
  add_segment(s, 0x100000, k_one, k_inactive, 1, 0);
  add_event(s, "snapshot", 0, 0, 0);
  add_event(s, "segment_alloc", 0x500000, 4096, 0);
  assert_true(check_tree(s, &r));
  assert_int_equal(r.warnings, 1);
  cs_report_free(&r);
  cJSON_Delete(s);
}

/* ---------------------------------------------------------------------------------------------
 * A generated, consistent trace: small segments, frees (paired, split by other events, or still
 * pending at the end), segment frees, and one expandable segment that maps and unmaps pages.
 * ------------------------------------------------------------------------------------------- */

enum { SLOT = 512, SEG_SLOTS = 8, MAX_SEGS = 6, EXP_MAX = 32, PAGE = 4 };

typedef struct gen_seg_s {
  double addr;
  int nslots;
  bool live;
  uint8_t slot[EXP_MAX]; /* 0 free, 1 allocated, 2 pending free */
} gen_seg_t;

typedef struct gen_s {
  cJSON *snap;
  uint32_t rng;
  gen_seg_t seg[MAX_SEGS + 1]; /* the last one is expandable */
} gen_t;

static uint32_t gen_rand(gen_t *g, uint32_t n) {
  g->rng = (uint32_t)(((uint64_t)g->rng * 1103515245u + 12345u) & 0xffffffffu);
  return (g->rng >> 16) % n;
}

static double gen_stream(int s) {
  return s == MAX_SEGS ? 7 : (s % 2 ? 3 : 0);
}

static cJSON *generate(uint32_t seed, int steps) {
  gen_t g;
  memset(&g, 0, sizeof g);
  g.rng = seed;
  g.snap = new_snapshot();
  for (int s = 0; s < MAX_SEGS; s++) g.seg[s].addr = 0x10000000 + s * 0x100000;
  g.seg[MAX_SEGS].addr = 0x40000000;
  /* Two segments exist before the trace starts. */
  for (int s = 0; s < 2; s++) {
    g.seg[s].live = true;
    g.seg[s].nslots = SEG_SLOTS;
  }
  for (int step = 0; step < steps; step++) {
    int s = (int)gen_rand(&g, MAX_SEGS + 1);
    gen_seg_t *seg = &g.seg[s];
    double st = gen_stream(s);
    int k = (int)gen_rand(&g, EXP_MAX);
    switch (gen_rand(&g, 9)) {
    case 0: /* segment_alloc */
      if (s < MAX_SEGS && !seg->live) {
        seg->live = true;
        seg->nslots = SEG_SLOTS;
        memset(seg->slot, 0, sizeof seg->slot);
        add_event(g.snap, "segment_alloc", seg->addr, SEG_SLOTS * SLOT, st);
      }
      break;
    case 1: /* segment_free of an empty segment */
      if (s < MAX_SEGS && seg->live) {
        bool empty = true;
        for (int i = 0; i < seg->nslots; i++) empty = empty && seg->slot[i] == 0;
        if (empty) {
          seg->live = false;
          add_event(g.snap, "segment_free", seg->addr, SEG_SLOTS * SLOT, st);
        }
      }
      break;
    case 2: /* map pages at the end of the expandable segment */
      if (g.seg[MAX_SEGS].nslots + PAGE <= EXP_MAX) {
        gen_seg_t *e = &g.seg[MAX_SEGS];
        add_event(g.snap, "segment_map", e->addr + e->nslots * SLOT, PAGE * SLOT, 7);
        memset(e->slot + e->nslots, 0, PAGE);
        e->nslots += PAGE;
        e->live = true;
      }
      break;
    case 3: { /* unmap its last page if free */
      gen_seg_t *e = &g.seg[MAX_SEGS];
      if (e->nslots >= PAGE) {
        bool empty = true;
        for (int i = e->nslots - PAGE; i < e->nslots; i++) empty = empty && e->slot[i] == 0;
        if (empty) {
          e->nslots -= PAGE;
          add_event(g.snap, "segment_unmap", e->addr + e->nslots * SLOT, PAGE * SLOT, 7);
          e->live = e->nslots > 0;
        }
      }
      break;
    }
    case 4:
    case 5: /* alloc */
      if (seg->live && k < seg->nslots && seg->slot[k] == 0) {
        seg->slot[k] = 1;
        add_event(g.snap, "alloc", seg->addr + k * SLOT, 100 + k, st);
      }
      break;
    case 6: /* free: requested and completed together */
      if (seg->live && k < seg->nslots && seg->slot[k] == 1) {
        seg->slot[k] = 0;
        add_event(g.snap, "free_requested", seg->addr + k * SLOT, 100 + k, st);
        add_event(g.snap, "free_completed", seg->addr + k * SLOT, 100 + k, st);
      }
      break;
    case 7: /* free requested, completed later */
      if (seg->live && k < seg->nslots && seg->slot[k] == 1) {
        seg->slot[k] = 2;
        add_event(g.snap, "free_requested", seg->addr + k * SLOT, 100 + k, st);
      }
      break;
    case 8: /* a pending free completes */
      if (seg->live && k < seg->nslots && seg->slot[k] == 2) {
        seg->slot[k] = 0;
        add_event(g.snap, "free_completed", seg->addr + k * SLOT, 100 + k, st);
      } else if (gen_rand(&g, 4) == 0) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "action", "oom");
        cJSON_AddNumberToObject(e, "size", 1 << 30);
        cJSON_AddNumberToObject(e, "device_free", 0);
        cJSON_AddNumberToObject(e, "time_us", 1);
        cJSON_AddItemToArray(trace0(g.snap), e);
      }
      break;
    default:
      break;
    }
  }
  /* The final state. */
  for (int s = 0; s <= MAX_SEGS; s++) {
    gen_seg_t *seg = &g.seg[s];
    if (!seg->live || seg->nslots == 0) continue;
    double sizes[EXP_MAX];
    const char *states[EXP_MAX];
    for (int i = 0; i < seg->nslots; i++) {
      sizes[i] = SLOT;
      states[i] = seg->slot[i] == 1 ? "active_allocated" : seg->slot[i] == 2 ? "active_pending_free" : "inactive";
    }
    add_segment(g.snap, seg->addr, sizes, states, (size_t)seg->nslots, gen_stream(s));
  }
  return g.snap;
}

static size_t count_action(const cJSON *snap, const char *action) {
  size_t n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, trace0((cJSON *)snap)) {
    if (strcmp(cJSON_GetObjectItem(e, "action")->valuestring, action) == 0) n++;
  }
  return n;
}

/* Dropping the oldest entries keeps a consistent trace consistent. */
static void check_all_suffixes(const cJSON *snap, const char *what) {
  int n = cJSON_GetArraySize(trace0((cJSON *)snap));
  for (int from = 0; from <= n; from++) {
    cJSON *s = suffix_of(snap, from);
    cs_report_t r;
    if (!check_tree(s, &r)) {
      print_message("%s without its oldest %d of %d entries:\n", what, from, n);
      dump(&r);
      fail();
    }
    cs_report_free(&r);
    cJSON_Delete(s);
  }
}

static void test_ring_truncation(void **state) {
  (void)state;
  cJSON *fixture = read_fixture("memviz_minimal_valid.json");
  check_all_suffixes(fixture, "memviz_minimal_valid.json");
  cJSON_Delete(fixture);
  for (uint32_t seed = 1; seed <= 3; seed++) {
    cJSON *g = generate(seed, 700);
    assert_true(count_action(g, "segment_map") > 0);
    assert_true(count_action(g, "segment_unmap") > 0);
    assert_true(count_action(g, "segment_free") > 0);
    check_all_suffixes(g, "generated trace");
    cJSON_Delete(g);
  }
}

/* Dropping one entry from the middle can break the replay. */
static void test_middle_drop(void **state) {
  (void)state;
  /* The fixture allocates block 0x7f0002000000 (entry 7) in a segment made at entry 6 and freed
   * at entry 10. Without the alloc, the block outlives the segment going backwards. */
  cJSON *s = read_fixture("memviz_minimal_valid.json");
  cJSON *e7 = cJSON_GetArrayItem(trace0(s), 7);
  assert_string_equal(cJSON_GetObjectItem(e7, "action")->valuestring, "alloc");
  cJSON_DeleteItemFromArray(trace0(s), 7);
  cs_report_t r;
  assert_false(check_tree(s, &r));
  const cs_finding_t *e = first_error(&r);
  assert_string_equal(e->where, "device_traces[0][6]");
  assert_non_null(strstr(e->message, "segment_alloc"));
  cs_report_free(&r);
  cJSON_Delete(s);

  /* In a generated trace: dropping a segment_unmap loses the range it gave back; dropping any one
   * entry never crashes, and some drops are errors. */
  cJSON *g = generate(7, 500);
  int n = cJSON_GetArraySize(trace0(g));
  int broken = 0, unmap_broken = 0, unmaps = 0;
  for (int i = 0; i < n; i++) {
    cJSON *c = cJSON_Duplicate(g, 1);
    const char *action = cJSON_GetObjectItem(cJSON_GetArrayItem(trace0(c), i), "action")->valuestring;
    bool unmap = strcmp(action, "segment_unmap") == 0;
    cJSON_DeleteItemFromArray(trace0(c), i);
    bool ok = check_tree(c, &r);
    cs_report_free(&r);
    broken += !ok;
    unmaps += unmap;
    unmap_broken += unmap && !ok;
    cJSON_Delete(c);
  }
  print_message("generated trace of %d entries: %d single drops break it (%d of %d segment_unmap drops)\n", n,
                broken, unmap_broken, unmaps);
  assert_true(broken > 0);
  assert_true(unmaps > 0);
  cJSON_Delete(g);
}

/* ---------------------------------------------------------------------------------------------
 * Byte-level rules and reporting
 * ------------------------------------------------------------------------------------------- */

/* A valid pickled snapshot plus one list of `items` ints in a single MARK ... APPENDS. */
static uint8_t *pickle_with_batch(size_t items, size_t *len) {
  uint8_t *b = malloc(items * 2 + 256);
  size_t n = 0;
#define PUT(s) (memcpy(b + n, (s), sizeof(s) - 1), n += sizeof(s) - 1)
  PUT("\x80\x02}(");
  PUT("\x8c\x08segments]");
  PUT("}(\x8c\x06" "deviceK\x00\x8c\x07" "addressJ\x00\x00\x10\x00\x8c\x0a" "total_sizeM\x00\x10\x8c\x06" "blocks]"
      "}(\x8c\x04sizeM\x00\x10\x8c\x05state\x8c\x08inactiveu" "au" "a");
  PUT("\x8c\x0d" "device_traces]]a");
  PUT("\x8c\x07padding](");
#undef PUT
  for (size_t i = 0; i < items; i++) {
    b[n++] = 'K';
    b[n++] = 1;
  }
  b[n++] = 'e';
  b[n++] = 'u';
  b[n++] = '.';
  *len = n;
  return b;
}

static void test_appends_batches(void **state) {
  (void)state;
  static const struct {
    size_t items;
    bool pass;
    size_t warnings;
  } cases[] = {{1000, true, 0}, {1001, true, 1}, {100000, true, 1}, {100001, false, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len;
    uint8_t *b = pickle_with_batch(cases[i].items, &len);
    cs_report_t r;
    cs_report_init(&r);
    bool ok = cs_validate_bytes(b, len, &r);
    if (ok != cases[i].pass || r.warnings != cases[i].warnings) {
      dump(&r);
      fail_msg("APPENDS of %zu items", cases[i].items);
    }
    cs_report_free(&r);
    free(b);
  }
}

static void test_findings_cap(void **state) {
  (void)state;
  cJSON *s = new_snapshot();
  add_segment(s, 0x100000, k_one, k_inactive, 1, 0);
  for (int i = 0; i < 300; i++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "action", "alloc");
    cJSON_AddStringToObject(e, "addr", "0x100000"); /* a string: one error each */
    cJSON_AddNumberToObject(e, "size", 1);
    cJSON_AddItemToArray(trace0(s), e);
  }
  cs_report_t r;
  assert_false(check_tree(s, &r));
  assert_int_equal(r.errors, 300);
  assert_int_equal(r.count, 200);
  assert_int_equal(r.dropped, 100 + r.warnings);
  cs_report_free(&r);
  cJSON_Delete(s);

  /* not a dict at all, and the legacy bare list */
  cJSON *list = cJSON_CreateArray();
  assert_false(check_tree(list, &r));
  assert_non_null(strstr(r.findings[0].message, "legacy"));
  cs_report_free(&r);
  cJSON_Delete(list);
}

/* The errors that leave the numbers meaningless (validate.h: `unreadable`), which summary and diff
 * refuse: exactly those, on the fixtures and on small trees; everything else stays readable. */
static bool readable_doc(const cs_doc_t *doc, cs_report_t *r) {
  cs_report_init(r);
  bool ok = cs_validate_readable(doc, r);
  assert_true(ok == (r->unreadable == 0));
  return ok;
}

static bool readable(const cJSON *t, cs_report_t *r) {
  cs_doc_t *doc = tree_doc(t);
  bool ok = readable_doc(doc, r);
  cs_doc_free(doc);
  return ok;
}

static void expect_unreadable(cJSON *t, const char *where, const char *message_part) {
  cs_report_t r;
  if (readable(t, &r)) fail_msg("readable, expected unreadable at %s", where);
  assert_string_equal(r.first_unreadable.where, where);
  assert_true(r.first_unreadable.unreadable);
  assert_int_equal(r.first_unreadable.level, CS_FINDING_ERROR);
  if (strstr(r.first_unreadable.message, message_part) == NULL)
    fail_msg("message '%s' lacks '%s'", r.first_unreadable.message, message_part);
  cs_report_free(&r);
  /* check (the whole validator) calls it an error too */
  assert_false(check_tree(t, &r));
  assert_true(r.unreadable > 0);
  cs_report_free(&r);
  cJSON_Delete(t);
}

static cJSON *one_segment_snapshot(void) {
  cJSON *s = new_snapshot();
  add_segment(s, 0x100000, k_one, k_inactive, 1, 0);
  return s;
}

static void test_unreadable(void **state) {
  (void)state;
  /* The fixtures: the viewer's PASS files are readable; of its FAIL files only those whose
   * addresses or sizes are strings are not. */
  static const char *const unreadable_fixtures[] = {"memviz_bad_hex_string_addresses.json",
                                                   "memviz_bad_string_sizes.json"};
  size_t n;
  char *manifest = (char *)slurp_fixture("MANIFEST.tsv", &n);
  char *save = NULL;
  size_t checked = 0, refused = 0;
  for (char *line = strtok_r(manifest, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    char *tab = strchr(line, '\t');
    if (tab == NULL || strcmp(line, "file\texpected\twhat it exercises") == 0) continue;
    *tab = '\0';
    size_t len;
    uint8_t *data = slurp_fixture(line, &len);
    cs_read_error_t err;
    cs_doc_t *t = cs_read_snapshot(data, len, NULL, &err);
    free(data);
    if (t == NULL) continue; /* refused by the reader already */
    bool want = true;
    for (size_t i = 0; i < sizeof unreadable_fixtures / sizeof unreadable_fixtures[0]; i++)
      if (strcmp(line, unreadable_fixtures[i]) == 0) want = false;
    cs_report_t r;
    bool got = readable_doc(t, &r);
    if (got != want)
      fail_msg("%s: readable %d, expected %d (%s: %s)", line, got, want, r.first_unreadable.where,
               r.first_unreadable.message);
    refused += !got;
    checked++;
    cs_report_free(&r);
    cs_doc_free(t);
  }
  free(manifest);
  assert_int_equal(checked, 29);
  assert_int_equal(refused, 2);

  /* not a snapshot */
  expect_unreadable(cJSON_CreateObject(), "(top level)", "neither 'segments' (missing) nor 'device_traces'");
  expect_unreadable(cJSON_CreateNumber(5), "(top level)", "is a number, not a dict");
  cJSON *numbers = cJSON_CreateArray();
  cJSON_AddItemToArray(numbers, cJSON_CreateNumber(1));
  expect_unreadable(numbers, "segments[0]", "not a dict");

  /* an infinite address; negative sizes (reported once, where the first is) */
  cJSON *s = one_segment_snapshot();
  cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "segments"), 0), "address",
                            cJSON_CreateNumber(INFINITY));
  expect_unreadable(s, "segments[0].address", "is not finite (inf)");
  s = new_snapshot();
  static const double negative[] = {-4096};
  add_segment(s, 0x100000, negative, k_inactive, 1, 0);
  /* total_size, size, requested_size */
  expect_unreadable(s, "segments[0].total_size", "3 negative address/size values (first: -4096)");
  s = one_segment_snapshot();
  add_event(s, "alloc", 0x100000, -1, 0);
  expect_unreadable(s, "device_traces[0][0].size", "1 negative address/size values (first: -1)");
  s = one_segment_snapshot();
  add_event(s, "segment_alloc", 0x100000, 4096, 0);
  cJSON_ReplaceItemInObject(cJSON_GetArrayItem(trace0(s), 0), "addr", cJSON_CreateNull());
  expect_unreadable(s, "device_traces[0][0].addr", "is null, not a number");

  /* The first one is kept when it comes after the cap on findings. */
  s = one_segment_snapshot();
  for (int i = 0; i < 250; i++) cJSON_AddItemToArray(trace0(s), cJSON_CreateObject()); /* no action: errors */
  add_event(s, "alloc", NAN, 4096, 0);
  cs_report_t r;
  assert_false(readable(s, &r));
  assert_true(r.dropped > 0); /* the unreadable finding is one of them */
  assert_int_equal(r.unreadable, 1);
  assert_string_equal(r.first_unreadable.where, "device_traces[0][250].addr");
  cs_report_free(&r);
  cJSON_Delete(s);

  /* Readable: a legacy bare list (an error for the viewer), one of the two top-level lists alone,
   * and warnings (no time_us). */
  cJSON *legacy = cJSON_CreateArray();
  s = one_segment_snapshot();
  cJSON_AddItemToArray(legacy, cJSON_DetachItemFromArray(cJSON_GetObjectItem(s, "segments"), 0));
  cJSON_Delete(s);
  assert_true(readable(legacy, &r));
  cs_report_free(&r);
  assert_false(check_tree(legacy, &r));
  assert_int_equal(r.errors, 1);
  cs_report_free(&r);
  cJSON_Delete(legacy);
  s = one_segment_snapshot();
  cJSON_DeleteItemFromObject(s, "device_traces");
  assert_true(readable(s, &r));
  cs_report_free(&r);
  cJSON_Delete(s);
  s = one_segment_snapshot();
  cJSON_DeleteItemFromObject(s, "segments");
  assert_true(readable(s, &r));
  cs_report_free(&r);
  cJSON_Delete(s);
  s = one_segment_snapshot();
  add_event(s, "segment_free", 0x200000, 4096, 0);
  cJSON_DeleteItemFromObject(cJSON_GetArrayItem(trace0(s), 0), "time_us");
  assert_true(readable(s, &r));
  assert_int_equal(r.errors, 0);
  assert_true(r.warnings > 0);
  cs_report_free(&r);
  cJSON_Delete(s);
}


/* ---------------------------------------------------------------------------------------------
 * From a file, numbers above 2^53, shared values
 * ------------------------------------------------------------------------------------------- */

static void assert_same_report(const cs_report_t *a, const cs_report_t *b, const char *what) {
  if (a->count != b->count || a->errors != b->errors || a->warnings != b->warnings || a->dropped != b->dropped ||
      a->unreadable != b->unreadable || a->read_failed != b->read_failed)
    fail_msg("%s: the reports differ in their counts", what);
  for (size_t i = 0; i < a->count; i++) {
    assert_int_equal(a->findings[i].level, b->findings[i].level);
    assert_int_equal(a->findings[i].unreadable, b->findings[i].unreadable);
    assert_string_equal(a->findings[i].where, b->findings[i].where);
    assert_string_equal(a->findings[i].message, b->findings[i].message);
  }
}

/* cs_validate_file finds what cs_validate_bytes finds on the same bytes, fixture by fixture. */
static void test_validate_file(void **state) {
  (void)state;
  size_t n;
  char *manifest = (char *)slurp_fixture("MANIFEST.tsv", &n);
  char *save = NULL;
  size_t files = 0;
  for (char *line = strtok_r(manifest, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    char *tab = strchr(line, '\t');
    if (tab == NULL || strncmp(line, "file\t", 5) == 0) continue;
    *tab = '\0';
    size_t len;
    uint8_t *data = slurp_fixture(line, &len);
    cs_report_t a, b;
    cs_report_init(&a);
    cs_report_init(&b);
    bool ok_bytes = cs_validate_bytes(data, len, &a);
    char path[512];
    snprintf(path, sizeof path, "%s/fixtures/%s", CS_TEST_DATA_DIR, line);
    bool ok_file = cs_validate_file(path, &b);
    assert_int_equal(ok_bytes, ok_file);
    assert_same_report(&a, &b, line);
    assert_int_equal(b.io_errno, 0);
    cs_report_free(&a);
    cs_report_free(&b);
    free(data);
    files++;
  }
  free(manifest);
  assert_int_equal(files, 33);

  /* a file that cannot be opened: one error, marked as a failed read */
  cs_report_t r;
  cs_report_init(&r);
  assert_false(cs_validate_file(CS_TEST_DATA_DIR "/fixtures/no_such_file.json", &r));
  assert_int_equal(r.errors, 1);
  assert_true(r.read_failed);
  assert_int_equal(r.io_errno, ENOENT);
  cs_report_free(&r);
  /* bytes that do not parse: the same, without an errno */
  cs_report_init(&r);
  assert_false(cs_validate_bytes("[NaN]", 5, &r));
  assert_int_equal(r.errors, 1);
  assert_true(r.read_failed);
  assert_int_equal(r.io_errno, 0);
  assert_true(strncmp(r.findings[0].where, "byte ", 5) == 0);
  cs_report_free(&r);
}

/* One segment at address `addr` (JSON text); returns the report's findings about 2^53. */
static size_t big_findings(const char *addr, cs_report_t *r) {
  char text[512];
  snprintf(text, sizeof text,
           "{\"segments\": [{\"device\": 0, \"address\": %s, \"total_size\": 4096, \"stream\": 0, \"blocks\": "
           "[{\"size\": 4096, \"requested_size\": 4096, \"state\": \"inactive\", \"frames\": []}]}], "
           "\"device_traces\": [[]]}",
           addr);
  cs_report_init(r);
  bool ok = cs_validate_bytes(text, strlen(text), r);
  assert_true(ok == (r->errors == 0));
  size_t n = 0;
  for (size_t i = 0; i < r->count; i++)
    if (strstr(r->findings[i].message, "above 2^53") != NULL) n++;
  return n;
}

/* The counted warning for addresses the viewer rounds: integers above 2^53 in magnitude, by their
 * exact value (2^53 + 1 is a double's 2^53), floats above 2^53, integers beyond int64. */
static void test_big_numbers(void **state) {
  (void)state;
  static const struct {
    const char *text;
    const char *first; /* the "(first: ...)" detail, NULL: no warning */
  } cases[] = {
      {"9007199254740992", NULL},                    /* 2^53: exact as a double */
      {"9007199254740993", "9007199254740993"},      /* 2^53 + 1 */
      {"1152921504606846977", "1152921504606846977"}, /* 2^60 + 1: beyond a small int */
      {"9223372036854775807", "9223372036854775807"},
      {"18446744073709551616", ""},                  /* 2^64: beyond int64, its double */
      {"18014398509481984.0", ""},                   /* 2^54 written as a float */
      {"9007199254740993.0", NULL},                  /* a float that is 2^53 */
      {"4096.0", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cs_report_t r;
    size_t n = big_findings(cases[i].text, &r);
    if (r.errors != 0 || n != (cases[i].first != NULL ? 1u : 0u)) {
      dump(&r);
      fail_msg("address %s: %zu findings about 2^53", cases[i].text, n);
    }
    if (cases[i].first != NULL) {
      char want[64];
      snprintf(want, sizeof want, "(first: %s)", cases[i].first);
      assert_string_equal(r.findings[0].where, "segments[0].address");
      if (strstr(r.findings[0].message, want) == NULL) fail_msg("'%s' lacks '%s'", r.findings[0].message, want);
    }
    cs_report_free(&r);
  }
  /* a negative one too (an error as well, for being negative): -(2^53 + 1) */
  cs_report_t r;
  assert_int_equal(big_findings("-9007199254740993", &r), 1);
  assert_int_equal(r.unreadable, 1);
  cs_report_free(&r);
}

/* ---- hand-written pickles ---- */

typedef struct pk_s {
  uint8_t *b;
  size_t n, cap;
} pk_t;

static void pk_put(pk_t *p, const void *s, size_t n) {
  if (p->n + n > p->cap) {
    p->cap = (p->n + n) * 2 + 256;
    p->b = realloc(p->b, p->cap);
    assert_non_null(p->b);
  }
  memcpy(p->b + p->n, s, n);
  p->n += n;
}
#define PK(p, lit) pk_put((p), (lit), sizeof(lit) - 1)

static void pk_str(pk_t *p, const char *s) {
  uint8_t h[2] = {0x8c, (uint8_t)strlen(s)};
  pk_put(p, h, 2);
  pk_put(p, s, strlen(s));
}

static void pk_int(pk_t *p, uint32_t x) {
  uint8_t h[5] = {'J', (uint8_t)x, (uint8_t)(x >> 8), (uint8_t)(x >> 16), (uint8_t)(x >> 24)};
  pk_put(p, h, 5);
}

/* `count` BINGETs of memo slot `slot`, as items of the list being built (MARK ... APPENDS batches of
 * 1000, the first batch already opened with `open` items in it). */
static void pk_refs(pk_t *p, uint8_t slot, size_t count, size_t open) {
  size_t in_batch = open;
  for (size_t i = 0; i < count; i++) {
    if (in_batch == 1000) {
      PK(p, "e(");
      in_batch = 0;
    }
    uint8_t g[2] = {'h', slot};
    pk_put(p, g, 2);
    in_batch++;
  }
  PK(p, "e");
}

/* A snapshot whose `nsegs` segments are one memoized segment of `nblocks` blocks, each block one
 * memoized dict. A file of about 2 * (nsegs + nblocks) bytes. */
static pk_t shared_pickle(size_t nsegs, size_t nblocks) {
  pk_t p = {0};
  PK(&p, "\x80\x02}(");
  pk_str(&p, "segments");
  PK(&p, "](}(");
  pk_str(&p, "device");
  PK(&p, "K\x00");
  pk_str(&p, "address");
  pk_int(&p, 0x100000);
  pk_str(&p, "total_size");
  pk_int(&p, (uint32_t)(nblocks * 4096));
  pk_str(&p, "stream");
  PK(&p, "K\x00");
  pk_str(&p, "blocks");
  PK(&p, "](}(");
  pk_str(&p, "size");
  pk_int(&p, 4096);
  pk_str(&p, "state");
  pk_str(&p, "inactive");
  PK(&p, "uq\x00");             /* the block, memo 0 */
  pk_refs(&p, 0, nblocks - 1, 1); /* the rest of the blocks */
  PK(&p, "uq\x01");             /* the segment, memo 1 */
  pk_refs(&p, 1, nsegs - 1, 1);
  pk_str(&p, "device_traces");
  PK(&p, "]]au.");
  return p;
}

/* Memoized values stay shared in the model, and the rules still visit every occurrence: exact
 * counts for a snapshot that repeats values, a bounded walk (one unreadable error) for one whose
 * repetitions multiply. */
static void test_shared_values(void **state) {
  (void)state;
  /* 3 segments, all the same one at the same address: they overlap in the history view */
  pk_t p = shared_pickle(3, 1000);
  cs_report_t r;
  cs_report_init(&r);
  bool ok = cs_validate_bytes(p.b, p.n, &r);
  if (!ok || r.unreadable != 0) {
    dump(&r);
    fail_msg("shared segments");
  }
  cs_report_free(&r);
  free(p.b);
  /* 20,000 segments of 20,000 blocks: 4e8 block visits, from a file of 80 kB */
  p = shared_pickle(20000, 20000);
  cs_report_init(&r);
  assert_false(cs_validate_bytes(p.b, p.n, &r));
  if (r.unreadable != 1) dump(&r);
  assert_int_equal(r.unreadable, 1);
  assert_non_null(strstr(r.first_unreadable.message, "expands to more than"));
  assert_true(strncmp(r.first_unreadable.where, "segments[", 9) == 0);
  cs_report_free(&r);
  free(p.b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_manifest),        cmocka_unit_test(test_replay_collapse),
      cmocka_unit_test(test_replay_rules),    cmocka_unit_test(test_ring_truncation),
      cmocka_unit_test(test_middle_drop),     cmocka_unit_test(test_appends_batches),
      cmocka_unit_test(test_findings_cap),    cmocka_unit_test(test_unreadable),
      cmocka_unit_test(test_annotations),     cmocka_unit_test(test_validate_file),
      cmocka_unit_test(test_big_numbers),     cmocka_unit_test(test_shared_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

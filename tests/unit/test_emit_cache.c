/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for memviz/emit_cache.c, the JSON frame list cache: the output is the same bytes
 * whether every list comes from the cache, none does (no cache), or some do (a cache that fills
 * up), and the cache really is used. Lists sit where the separators differ (first item, later
 * item, dict value), span buffer flushes, hold escapes, invalid UTF-8 and nested lists, and the
 * caller breaks the frames_ref/frames_done protocol in the ways a cache must survive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memviz/emit.h"
#include "memviz/sink.h"

enum { LISTS = 60, ROUNDS = 4 };

/* How many times a list was written out in full (frames_ref missed). */
static unsigned written_out;

/* List id's contents: sizes from a few bytes to more than the emitter's 4 KiB buffer (id 7), so
 * captures start and end anywhere in it and span flushes. */
static void emit_list_body(cs_emitter_t *e, uint32_t id) {
  char name[64];
  unsigned frames = id == 7 ? 120 : id % 9;
  for (unsigned i = 0; i < frames; i++) {
    cs_emit_dict_begin(e);
    cs_emit_key(e, "filename");
    snprintf(name, sizeof name, "/src/file_%u.c", id);
    cs_emit_str(e, name);
    cs_emit_key(e, "line");
    cs_emit_int(e, (int64_t)(id * 100 + i));
    cs_emit_key(e, "name");
    if (id % 5 == 0)
      cs_emit_str(e, "quote\" tab\t bad \xff end"); /* escapes and a U+FFFD */
    else
      cs_emit_str(e, "fn");
    cs_emit_dict_end(e);
  }
  if (id % 4 == 1) { /* a list inside the frame list: its end is not the frame list's */
    cs_emit_list_begin(e);
    cs_emit_int(e, id);
    cs_emit_list_end(e);
  }
}

/* As snapshot.c writes a frame list. */
static void emit_frames(cs_emitter_t *e, uint32_t id) {
  if (cs_emit_frames_ref(e, id)) return;
  written_out++;
  cs_emit_list_begin(e);
  emit_list_body(e, id);
  cs_emit_list_end(e);
  cs_emit_frames_done(e, id);
}

/* Lists as list items and as dict values, ids in a scrambled order, each several times. */
static void emit_tree(cs_emitter_t *e) {
  cs_emit_dict_begin(e);
  cs_emit_key(e, "items");
  cs_emit_list_begin(e);
  for (uint32_t r = 0; r < ROUNDS; r++)
    for (uint32_t i = 0; i < LISTS; i++) emit_frames(e, 1 + (i * 37 + r * 11) % LISTS);
  cs_emit_list_end(e);
  cs_emit_key(e, "entries");
  cs_emit_list_begin(e);
  for (uint32_t i = 0; i < LISTS * ROUNDS; i++) {
    cs_emit_dict_begin(e);
    cs_emit_key(e, "addr");
    cs_emit_int(e, (int64_t)i * 512);
    cs_emit_key(e, "frames");
    emit_frames(e, 1 + (i * 13) % LISTS);
    cs_emit_key(e, "after");
    cs_emit_str(e, "");
    cs_emit_dict_end(e);
  }
  cs_emit_list_end(e);
  cs_emit_dict_end(e);
}

typedef void (*fill_fn)(cs_emitter_t *e);

/* The JSON of fill with the cache bounded to limit bytes (SIZE_MAX: the default bound). */
static cs_mem_sink_t emit_json(fill_fn fill, size_t limit) {
  cs_mem_sink_t out;
  cs_mem_sink_init(&out);
  cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(&out), 2);
  assert_non_null(e);
  if (limit != SIZE_MAX) cs_emit_set_cache_limit(e, limit);
  written_out = 0;
  fill(e);
  assert_int_equal(cs_emit_finish(e), 0);
  return out;
}

static void assert_same(const cs_mem_sink_t *a, const cs_mem_sink_t *b) {
  assert_int_equal(a->len, b->len);
  assert_memory_equal(a->data, b->data, a->len);
}

/* ------------------------------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------------------------------- */

static void test_cached_equals_uncached(void **state) {
  (void)state;
  cs_mem_sink_t plain = emit_json(emit_tree, 0);
  assert_int_equal(written_out, 2 * LISTS * ROUNDS); /* no cache: every list in full */
  cs_mem_sink_t cached = emit_json(emit_tree, SIZE_MAX);
  assert_int_equal(written_out, LISTS); /* each list once */
  assert_same(&plain, &cached);
  cs_mem_sink_free(&cached);
  cs_mem_sink_free(&plain);
}

/* Bounds from "a few lists" to "all but a few": the cache fills up part way, the rest of the lists
 * are written out every time, and the bytes do not change. One bound is too small for the id
 * table: nothing is kept at all. */
static void test_full_cache_same_bytes(void **state) {
  (void)state;
  cs_mem_sink_t plain = emit_json(emit_tree, 0);
  cs_mem_sink_t all = emit_json(emit_tree, SIZE_MAX);
  /* The id table takes 8 KiB (1024 ids) first, then the lists' bytes what is left. */
  static const struct {
    size_t limit;
    unsigned min_written, max_written;
  } cases[] = {
      {1, 2 * LISTS * ROUNDS, 2 * LISTS * ROUNDS},            /* no room for the id table */
      {8192, 2 * LISTS * ROUNDS, 2 * LISTS * ROUNDS},         /* no room for any list */
      {8192 + 2000, LISTS + 1, 2 * LISTS * ROUNDS - 1},       /* room for some */
      {8192 + 64 * 1024, LISTS, LISTS},                       /* room for all (about 25 KiB) */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cs_mem_sink_t out = emit_json(emit_tree, cases[i].limit);
    assert_same(&plain, &out);
    assert_in_range(written_out, cases[i].min_written, cases[i].max_written);
    cs_mem_sink_free(&out);
  }
  assert_same(&plain, &all);
  cs_mem_sink_free(&all);
  cs_mem_sink_free(&plain);
}

/* Protocol breaks: a miss followed by a scalar, not a list; a list without frames_done (as
 * snapshot.c does for a stack it cannot find); a done for another id; a done after more output.
 * None of these lists may be kept, and the output is what was written. */
static void fill_broken(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  if (!cs_emit_frames_ref(e, 1)) cs_emit_int(e, 5); /* not a list */
  cs_emit_list_begin(e);                             /* a list, but not right after the miss */
  cs_emit_int(e, 6);
  cs_emit_list_end(e);
  cs_emit_frames_done(e, 1);

  if (!cs_emit_frames_ref(e, 2)) { /* no done */
    cs_emit_list_begin(e);
    cs_emit_list_end(e);
  }
  if (!cs_emit_frames_ref(e, 3)) { /* done for another id */
    cs_emit_list_begin(e);
    cs_emit_int(e, 3);
    cs_emit_list_end(e);
    cs_emit_frames_done(e, 4);
  }
  if (!cs_emit_frames_ref(e, 4)) { /* done after more output */
    cs_emit_list_begin(e);
    cs_emit_int(e, 4);
    cs_emit_list_end(e);
    cs_emit_none(e);
    cs_emit_frames_done(e, 4);
  }
  for (uint32_t id = 1; id <= 4; id++) assert_false(cs_emit_frames_ref(e, id)); /* none kept */
  cs_emit_list_begin(e); /* captured as id 4's list, but no done follows */
  cs_emit_list_end(e);
  emit_frames(e, 9); /* a well-behaved list afterwards is kept */
  emit_frames(e, 9);
  assert_false(cs_emit_frames_ref(e, 4));
  cs_emit_none(e);
  cs_emit_list_end(e);
}

static void test_protocol_breaks(void **state) {
  (void)state;
  cs_mem_sink_t out = emit_json(fill_broken, SIZE_MAX);
  assert_int_equal(written_out, 1);
  static const char want[] = "[5,[6],[],[3],[4],null,[],[[9]],[[9]],null]\n";
  assert_int_equal(out.len, sizeof want - 1);
  assert_memory_equal(out.data, want, sizeof want - 1);
  cs_mem_sink_t plain = emit_json(fill_broken, 0);
  assert_same(&plain, &out);
  cs_mem_sink_free(&plain);
  cs_mem_sink_free(&out);
}

/* A frames_ref inside a list being captured (nested shared lists) is written out, not copied:
 * the copy would come from an arena that the capture may move. */
static void fill_nested(cs_emitter_t *e) {
  cs_emit_list_begin(e);
  for (int round = 0; round < 3; round++) {
    if (cs_emit_frames_ref(e, 1)) continue;
    cs_emit_list_begin(e);
    emit_frames(e, 2);
    cs_emit_list_end(e);
    cs_emit_frames_done(e, 1);
  }
  cs_emit_list_end(e);
}

static void test_nested(void **state) {
  (void)state;
  cs_mem_sink_t cached = emit_json(fill_nested, SIZE_MAX);
  cs_mem_sink_t plain = emit_json(fill_nested, 0);
  assert_same(&plain, &cached);
  cs_mem_sink_free(&cached);
  cs_mem_sink_free(&plain);
}

/* Pickle keeps its memo: the cache bound changes nothing there. */
static void test_pickle_unaffected(void **state) {
  (void)state;
  cs_mem_sink_t out[2];
  for (int i = 0; i < 2; i++) {
    cs_mem_sink_init(&out[i]);
    cs_emitter_t *e = cs_emitter_create(CS_EMIT_PICKLE, cs_mem_sink(&out[i]), 2);
    assert_non_null(e);
    if (i == 1) cs_emit_set_cache_limit(e, 0);
    written_out = 0;
    emit_tree(e);
    assert_int_equal(written_out, LISTS);
    assert_int_equal(cs_emit_finish(e), 0);
  }
  assert_same(&out[0], &out[1]);
  cs_mem_sink_free(&out[0]);
  cs_mem_sink_free(&out[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cached_equals_uncached),
      cmocka_unit_test(test_full_cache_same_bytes),
      cmocka_unit_test(test_protocol_breaks),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_pickle_unaffected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

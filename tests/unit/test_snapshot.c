/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots end to end, without CUDA: an allocator over the fake backend reports to a ring, the
 * state and history are copied as the library copies them, written as JSON and as pickle, read
 * back, and checked against the viewer's rules (validate.h), including the backward replay.
 * Frames must name this file's functions with the right lines. */
#include "tests/unit/alloc_check.h"

#include "common/cs_error.h"
#include "memviz/emit.h"
#include "record/intern.h"
#include "reader/reader.h"
#include "record/ring.h"
#include "snapshot/snapshot.h"
#include "snapshot/symbolize.h"
#include "reader/validate.h"

#include <time.h>

#define MiB CS_MiB

static cs_ring_t ring;
static cs_intern_t *intern;
static int device0 = 0;
static int alloc_line; /* the line of the call whose return address the stacks hold */

static void observe(void *ctx, const cs_trace_event_t *ev) { cs_snap_record_event(&ring, *(int *)ctx, ev); }

/* A stack of real return addresses in this file: taken inside a noinline function. */
static __attribute__((noinline)) uint32_t stack_here(void) {
  uintptr_t pcs[2] = {(uintptr_t)__builtin_return_address(0), 0};
  return cs_intern_stack(intern, pcs, 1);
}

static __attribute__((noinline)) uint32_t stack_of_model_forward(void) {
  alloc_line = __LINE__ + 1;
  uint32_t id = stack_here();
  __asm__ volatile("" ::: "memory"); /* keep the call from being a tail call */
  return id;
}

static uintptr_t traced_alloc(cs_allocator_t *a, size_t size) {
  uintptr_t p = 0;
  assert_int_equal(cs_allocator_malloc(a, size, 0, stack_of_model_forward(), &p), 0);
  return p;
}

/* Run a small program's worth of allocator activity on a fresh allocator. */
static alloc_fixture_t *run_program(cs_free_mode_t mode, size_t ring_capacity) {
  assert_int_equal(cs_ring_init(&ring, ring_capacity), 0);
  alloc_fixture_t *f = fixture_new(64 * MiB);
  f->conf.free_mode = mode;
  cs_allocator_observer_t obs = {.on_event = observe, .ctx = &device0};
  fixture_start(f, &obs);
  uintptr_t keep = traced_alloc(f->a, 1000);
  uintptr_t big = traced_alloc(f->a, 5 * MiB);
  for (int i = 0; i < 20; i++) {
    uintptr_t p = traced_alloc(f->a, (size_t)(i + 1) * 4096);
    uintptr_t q = traced_alloc(f->a, 3 * MiB);
    assert_int_equal(cs_allocator_free(f->a, p), 0);
    assert_int_equal(cs_allocator_free(f->a, q), 0);
  }
  assert_int_equal(cs_allocator_free(f->a, big), 0);
  assert_int_equal(cs_allocator_empty_cache(f->a), 0);
  uintptr_t fail = 0;
  assert_int_equal(cs_allocator_malloc(f->a, 100 * MiB, 0, 0, &fail), -CS_ENOMEM);
  uintptr_t pending = traced_alloc(f->a, 2048);
  assert_int_equal(cs_allocator_free(f->a, pending), 0); /* pending in fence mode */
  (void)keep;
  return f;
}

static char *write_snapshot(alloc_fixture_t *f, cs_emit_format_t format, size_t *len) {
  cs_snap_state_t s;
  assert_int_equal(cs_snap_state_init(&s, 1), 0);
  cs_allocator_lock(f->a);
  cs_snap_state_add_allocator(&s, 0, f->a);
  cs_snap_state_add_history(&s, &ring);
  cs_allocator_unlock(f->a);
  cs_snap_state_finish(&s);
  cs_options_t opts;
  cs_options_init(&opts);
  const char *argv[] = {"test_snapshot", NULL};
  cs_snapshot_meta_t meta = {.version = "test", .pid = 1, .argv = argv, .host = "h", .trigger = "api",
                             .dump_number = 1, .time_us = 1, .options = &opts, .alloc_conf_text = ""};
  cs_mem_sink_t sink;
  cs_mem_sink_init(&sink);
  cs_emitter_t *e = cs_emitter_create(format, cs_mem_sink(&sink), 2);
  assert_non_null(e);
  cs_symbolizer_t *sym = cs_symbolizer_create();
  assert_int_equal(cs_snapshot_write(&s, intern, sym, &meta, e), 0);
  cs_symbolizer_destroy(sym);
  cs_snap_state_free(&s);
  *len = sink.len;
  return sink.data; /* freed by the caller */
}

static void finish_program(alloc_fixture_t *f) {
  /* the fence-mode pending block must not be left for fixture_free's consistency walk */
  f->fb.events_complete_on_record = true;
  fake_backend_complete_events(&f->fb);
  cs_allocator_empty_cache(f->a);
  fixture_free(f);
  cs_ring_destroy(&ring);
}

static void assert_clean(const void *data, size_t len) {
  cs_report_t r;
  cs_report_init(&r);
  bool clean = cs_validate_bytes(data, len, &r);
  for (size_t i = 0; i < r.count; i++)
    if (r.findings[i].level == CS_FINDING_ERROR)
      print_error("error at %s: %s\n", r.findings[i].where, r.findings[i].message);
  assert_true(clean);
  cs_report_free(&r);
}

static void test_json_and_pickle_agree_and_validate(void **state) {
  (void)state;
  alloc_fixture_t *f = run_program(CS_FREE_FENCE, 100000);
  size_t jlen = 0, plen = 0;
  char *json = write_snapshot(f, CS_EMIT_JSON, &jlen);
  char *pickle = write_snapshot(f, CS_EMIT_PICKLE, &plen);
  assert_clean(json, jlen);
  assert_clean(pickle, plen);
  cs_read_error_t err;
  cs_snapshot_format_t fmt;
  cs_doc_t *a = cs_read_snapshot(json, jlen, &fmt, &err);
  assert_non_null(a);
  assert_int_equal(fmt, CS_SNAPSHOT_JSON);
  cs_doc_t *b = cs_read_snapshot(pickle, plen, &fmt, &err);
  assert_non_null(b);
  assert_int_equal(fmt, CS_SNAPSHOT_PICKLE);
  assert_true(cs_doc_values_equal(a, cs_doc_root(a), b, cs_doc_root(b)));
  assert_true(plen < jlen); /* frame lists are shared in the pickle */

  /* what a user looks for: the allocation's frames name this function at the call's line */
  cs_val_t trace = cs_doc_at(a, cs_doc_get(a, cs_doc_root(a), "device_traces"), 0);
  cs_val_t first = cs_doc_at(a, trace, 0);
  assert_string_equal(cs_doc_str(a, cs_doc_get(a, first, "action"), NULL), "segment_alloc");
  bool found = false;
  for (size_t i = 0; i < cs_doc_len(a, trace); i++) {
    cs_val_t entry = cs_doc_at(a, trace, i);
    if (strcmp(cs_doc_str(a, cs_doc_get(a, entry, "action"), NULL), "alloc") != 0) continue;
    cs_val_t frame = cs_doc_at(a, cs_doc_get(a, entry, "frames"), 0);
    assert_non_null(frame);
    int64_t line = 0;
    assert_string_equal(cs_doc_str(a, cs_doc_get(a, frame, "name"), NULL), "stack_of_model_forward");
    assert_non_null(strstr(cs_doc_str(a, cs_doc_get(a, frame, "filename"), NULL), "test_snapshot.c"));
    assert_true(cs_doc_int(a, cs_doc_get(a, frame, "line"), &line));
    assert_int_equal(line, alloc_line);
    found = true;
    break;
  }
  assert_true(found);
  /* one pending block (fence mode) and its unpaired free_requested */
  assert_non_null(strstr(json, "\"active_pending_free\""));
  assert_non_null(strstr(json, "\"action\":\"oom\""));
  cs_doc_free(a);
  cs_doc_free(b);
  free(json);
  free(pickle);
  finish_program(f);
}

/* The ring drops the oldest entries; whatever remains must still replay. */
static void test_every_ring_size_replays(void **state) {
  (void)state;
  for (size_t capacity = 1; capacity <= 200; capacity += 7) {
    alloc_fixture_t *f = run_program(capacity % 2 ? CS_FREE_SYNC : CS_FREE_FENCE, capacity);
    size_t len = 0;
    char *json = write_snapshot(f, CS_EMIT_JSON, &len);
    assert_clean(json, len);
    free(json);
    finish_program(f);
  }
}

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Merging histories: by time, and within one microsecond what gives memory back first (issue 44:
 * the cache handed an address that memory passed through gave back in the same microsecond). */
static void test_merge_puts_frees_first_within_a_microsecond(void **state) {
  (void)state;
  cs_ring_entry_t e[4];
  memset(e, 0, sizeof e);
  const uint64_t t = UINT64_C(1700000000000000);
  e[0].when = t << CS_RING_TIME_SHIFT | CS_ACTION_SEGMENT_ALLOC;
  e[1].when = t << CS_RING_TIME_SHIFT | CS_ACTION_SEGMENT_FREE;
  e[2].when = (t - 1) << CS_RING_TIME_SHIFT | CS_ACTION_SEGMENT_ALLOC;
  e[3].when = t << CS_RING_TIME_SHIFT | CS_ACTION_FREE_COMPLETED;
  assert_true(cs_ring_entry_merges_before(&e[1], &e[0]));  /* a free, the same microsecond */
  assert_false(cs_ring_entry_merges_before(&e[0], &e[1]));
  assert_true(cs_ring_entry_merges_before(&e[2], &e[1]));  /* earlier wins whatever it is */
  assert_false(cs_ring_entry_merges_before(&e[1], &e[2]));
  assert_false(cs_ring_entry_merges_before(&e[3], &e[1])); /* two frees: the first history's first */
  assert_false(cs_ring_entry_merges_before(&e[0], &e[0]));
}

/* Two contexts' rings (two devices, and a second context on device 0): the state's history is one
 * list in time order, each ring's own order kept, and each entry's stream handle survives the
 * rings' different stream tables. */
static void test_histories_of_several_rings_merge_by_time(void **state) {
  (void)state;
  cs_ring_t a, b, c;
  assert_int_equal(cs_ring_init(&a, 16), 0);
  assert_int_equal(cs_ring_init(&b, 16), 0);
  assert_int_equal(cs_ring_init(&c, 2), 0);
  cs_ring_push(&c, CS_ACTION_ALLOC, 0, 0x9000, 512, 0, 0); /* dropped: c keeps two */
  sleep_ms(2);
  cs_ring_push(&a, CS_ACTION_SEGMENT_ALLOC, 0, 0x1000, 2 << 20, 0xa, 0);
  cs_ring_push(&a, CS_ACTION_ALLOC, 0, 0x1000, 512, 0xa, 0);         /* the same microsecond, likely */
  sleep_ms(2);
  cs_ring_push(&b, CS_ACTION_ALLOC, 1, 0x2000, 512, 0xb, 0);
  sleep_ms(2);
  cs_ring_push(&c, CS_ACTION_ALLOC, 0, 0x3000, 512, 0xb, 0);
  sleep_ms(2);
  cs_ring_push(&a, CS_ACTION_FREE_REQUESTED, 0, 0x1000, 512, 0xa, 0);
  cs_ring_push(&a, CS_ACTION_FREE_COMPLETED, 0, 0x1000, 512, 0xa, 0); /* shares the request's time */
  sleep_ms(2);
  cs_ring_push(&c, CS_ACTION_FREE_REQUESTED, 0, 0x3000, 512, 0xb, 0);

  cs_snap_state_t s;
  assert_int_equal(cs_snap_state_init(&s, 1), 0);
  cs_snap_state_add_history(&s, &a);
  cs_snap_state_add_history(&s, &b);
  cs_snap_state_add_history(&s, &c);
  cs_snap_state_finish(&s);
  assert_int_equal(s.entry_count, 7);
  assert_int_equal(s.dropped, 1);
  assert_int_equal(s.device_count, 2);
  static const struct {
    uint64_t addr;
    cs_action_t action;
    uintptr_t stream;
  } want[] = {
      {0x1000, CS_ACTION_SEGMENT_ALLOC, 0xa}, {0x1000, CS_ACTION_ALLOC, 0xa},
      {0x2000, CS_ACTION_ALLOC, 0xb},         {0x3000, CS_ACTION_ALLOC, 0xb},
      {0x1000, CS_ACTION_FREE_REQUESTED, 0xa}, {0x1000, CS_ACTION_FREE_COMPLETED, 0xa},
      {0x3000, CS_ACTION_FREE_REQUESTED, 0xb},
  };
  for (size_t i = 0; i < s.entry_count; i++) {
    assert_int_equal(s.entries[i].addr, want[i].addr);
    assert_int_equal(cs_ring_entry_action(&s.entries[i]), want[i].action);
    assert_int_equal(cs_stream_table_handle(&s.streams, s.entries[i].stream), want[i].stream);
    if (i > 0) assert_true(cs_ring_entry_epoch_us(&s.entries[i]) >= cs_ring_entry_epoch_us(&s.entries[i - 1]));
  }
  /* a second copy gives every entry the same time as the first */
  cs_snap_state_t again;
  assert_int_equal(cs_snap_state_init(&again, 1), 0);
  sleep_ms(2);
  cs_snap_state_add_history(&again, &a);
  cs_snap_state_add_history(&again, &b);
  cs_snap_state_add_history(&again, &c);
  cs_snap_state_finish(&again);
  assert_int_equal(again.entry_count, s.entry_count);
  assert_memory_equal(again.entries, s.entries, s.entry_count * sizeof *s.entries);
  cs_snap_state_free(&again);
  cs_snap_state_free(&s);
  cs_ring_destroy(&a);
  cs_ring_destroy(&b);
  cs_ring_destroy(&c);
}

/* The timeline a user reads: in sync mode a free completes at once (the request's time); in fence
 * mode it completes when a later call finds its fence passed, and its time says so. */
static uint64_t completion_delay_us(cs_free_mode_t mode) {
  assert_int_equal(cs_ring_init(&ring, 64), 0);
  alloc_fixture_t *f = fixture_new(64 * MiB);
  f->conf.free_mode = mode;
  f->fb.events_complete_on_record = true;
  cs_allocator_observer_t obs = {.on_event = observe, .ctx = &device0};
  fixture_start(f, &obs);
  uintptr_t p = traced_alloc(f->a, 4096);
  assert_int_equal(cs_allocator_free(f->a, p), 0);
  sleep_ms(20);
  uintptr_t q = traced_alloc(f->a, 4096); /* processes the fence in fence mode */
  assert_int_equal(cs_allocator_free(f->a, q), 0);
  cs_ring_entry_t out[64];
  cs_allocator_lock(f->a);
  size_t n = cs_ring_copy(&ring, out, NULL);
  cs_allocator_unlock(f->a);
  uint64_t requested = 0, completed = 0;
  for (size_t i = 0; i < n; i++) {
    if (out[i].addr != p || completed) continue;
    if (cs_ring_entry_action(&out[i]) == CS_ACTION_FREE_REQUESTED) requested = cs_ring_entry_epoch_us(&out[i]);
    if (cs_ring_entry_action(&out[i]) == CS_ACTION_FREE_COMPLETED) completed = cs_ring_entry_epoch_us(&out[i]);
  }
  assert_true(requested > 0 && completed >= requested);
  finish_program(f);
  return completed - requested;
}

static void test_completion_times_follow_the_free_mode(void **state) {
  (void)state;
  assert_int_equal(completion_delay_us(CS_FREE_SYNC), 0);
  assert_true(completion_delay_us(CS_FREE_FENCE) >= 15000);
}

static int setup(void **state) {
  (void)state;
  intern = cs_intern_create(1024);
  return intern ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  cs_intern_destroy(intern);
  return 0;
}

/* What the viewer never reads is left out of trace entries (snapshot.c, cs_snap_write_entry):
 * a free_completed right after its own free_requested has no frames (the viewer merges the two
 * and shows the free_requested's), and no entry has compile_context or user_metadata. Every
 * alloc and free_requested still has its frames, and the file still passes the viewer's rules. */
static void test_entries_carry_what_the_viewer_reads(void **state) {
  (void)state;
  alloc_fixture_t *f = run_program(CS_FREE_SYNC, 100000);
  size_t len;
  char *json = write_snapshot(f, CS_EMIT_JSON, &len);
  assert_clean(json, len);
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot(json, len, NULL, &err);
  assert_non_null(doc);
  cs_val_t trace = cs_doc_at(doc, cs_doc_get(doc, cs_doc_root(doc), "device_traces"), 0);
  cs_val_t prev = CS_VAL_ABSENT;
  size_t merged = 0, with_frames = 0;
  for (size_t i = 0; i < cs_doc_len(doc, trace); i++) {
    cs_val_t entry = cs_doc_at(doc, trace, i);
    const char *action = cs_doc_str(doc, cs_doc_get(doc, entry, "action"), NULL);
    cs_val_t frames = cs_doc_get(doc, entry, "frames");
    assert_true(cs_val_absent(cs_doc_get(doc, entry, "compile_context")));
    assert_true(cs_val_absent(cs_doc_get(doc, entry, "user_metadata")));
    int64_t prev_addr = -1, addr = -2;
    bool after_its_request =
        !cs_val_absent(prev) && strcmp(action, "free_completed") == 0 &&
        strcmp(cs_doc_str(doc, cs_doc_get(doc, prev, "action"), NULL), "free_requested") == 0 &&
        cs_doc_int(doc, cs_doc_get(doc, prev, "addr"), &prev_addr) &&
        cs_doc_int(doc, cs_doc_get(doc, entry, "addr"), &addr) && prev_addr == addr;
    if (after_its_request) {
      assert_true(cs_val_absent(frames));
      merged++;
    } else if (strcmp(action, "alloc") == 0 || strcmp(action, "free_requested") == 0) {
      assert_false(cs_val_absent(frames));
      with_frames++;
    }
    prev = entry;
  }
  assert_true(merged >= 20); /* sync mode: every free completes at once */
  assert_true(with_frames >= 2 * merged);
  cs_doc_free(doc);
  free(json);
  finish_program(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_and_pickle_agree_and_validate),
      cmocka_unit_test(test_every_ring_size_replays),
      cmocka_unit_test(test_merge_puts_frees_first_within_a_microsecond),
      cmocka_unit_test(test_histories_of_several_rings_merge_by_time),
      cmocka_unit_test(test_completion_times_follow_the_free_mode),
      cmocka_unit_test(test_entries_carry_what_the_viewer_reads),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The recording file (record/recfile_write.c, read back by reader/recording.c): what the writer
 * leaves is read back as it was pushed; an entry cut short by a death is counted as lost at the
 * end and never read; a damaged entry is left out and counted; a whole entry whose count was not
 * yet published is kept; a cleared ring's old entries never pass for new ones; cut and mutated
 * files are refused with a reason or read within bounds, never a crash (the ASan build runs
 * this too). The pass-through ring's entries give their kinds; a fork child's reopened file keeps
 * what its rings recorded before it; version 1 is read, a newer one refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "memviz/passthrough.h"
#include "reader/recording.h"
#include "record/recfile.h"
#include "record/recfile_write.h"

typedef struct fixture_s {
  char path[64];
  int fd;
  cs_recfile_writer_t *w;
  cs_ring_t ring;
} fixture_t;

static void fixture_open(fixture_t *f, uint64_t capacity) {
  snprintf(f->path, sizeof f->path, "/tmp/cs-test-recording-XXXXXX");
  f->fd = mkstemp(f->path);
  assert_true(f->fd >= 0);
  cs_recfile_params_t params = {.max_entries = capacity, .stack_depth = 8, .max_stacks = 16};
  int err = 0;
  f->w = cs_recfile_create(f->fd, &params, &err);
  assert_non_null(f->w);
  assert_true(cs_recfile_add_ring(f->w, &f->ring, 3));
}

static void fixture_close(fixture_t *f) {
  cs_ring_destroy(&f->ring);
  cs_recfile_close(f->w);
  close(f->fd);
  unlink(f->path);
}

static void push(fixture_t *f, uint64_t from, uint64_t to) {
  for (uint64_t i = from; i <= to; i++) cs_ring_push(&f->ring, CS_ACTION_ALLOC, 3, 0x1000 * i, i, 0, 0);
}

/* The file's bytes as they are now. */
static void file_bytes(const fixture_t *f, unsigned char **data, size_t *len) {
  struct stat st;
  assert_int_equal(fstat(f->fd, &st), 0);
  *len = (size_t)st.st_size;
  *data = malloc(*len);
  assert_non_null(*data);
  assert_int_equal(pread(f->fd, *data, *len, 0), (ssize_t)*len);
}

static void read_back(const fixture_t *f, cs_recording_t *rec) {
  unsigned char *data;
  size_t len;
  file_bytes(f, &data, &len);
  char why[256] = "";
  int rc = cs_recording_parse(data, len, rec, why, sizeof why);
  if (rc != 0) fail_msg("refused: %s", why);
  assert_int_equal(rec->ring_count, 1);
}

/* The ring's entries carry the addresses 0x1000 * first ... 0x1000 * last. */
static void assert_entries(const cs_rec_ring_t *r, uint64_t first, uint64_t last) {
  assert_int_equal(r->count, last - first + 1);
  for (size_t i = 0; i < r->count; i++) {
    assert_int_equal(r->entries[i].addr, 0x1000 * (first + i));
    assert_int_equal(r->entries[i].size, first + i);
    assert_int_equal(r->entries[i].stream, 0); /* the tag is not part of the stream */
    assert_int_equal(cs_ring_entry_action(&r->entries[i]), CS_ACTION_ALLOC);
    assert_int_equal(cs_ring_entry_device(&r->entries[i]), 3);
  }
}

static void test_whole_and_wrapped(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 8);
  push(&f, 1, 5);
  const uintptr_t pcs[3] = {0x401000, 0x402000, 0x403000};
  cs_recfile_add_stack(f.w, 1, pcs, 3);
  cs_recording_t rec;
  read_back(&f, &rec);
  assert_int_equal(rec.rings[0].device, 3);
  assert_entries(&rec.rings[0], 1, 5);
  assert_int_equal(rec.rings[0].lost_at_end + rec.rings[0].damaged + rec.rings[0].dropped, 0);
  size_t n = 0;
  const uint64_t *got = cs_recording_stack(&rec, 1, &n);
  assert_int_equal(n, 3);
  assert_int_equal(got[2], 0x403000);
  assert_null(cs_recording_stack(&rec, 2, &n));
  assert_true(rec.pid == (long)getpid());
  cs_recording_free(&rec);

  push(&f, 6, 11); /* 11 pushes in 8 slots: the oldest 3 dropped */
  read_back(&f, &rec);
  assert_entries(&rec.rings[0], 4, 11);
  assert_int_equal(rec.rings[0].dropped, 3);
  assert_int_equal(rec.rings[0].lost_at_end, 0);
  /* times: wall clock, in push order */
  assert_true(cs_ring_entry_epoch_us(&rec.rings[0].entries[0]) > UINT64_C(1600000000) * 1000000);
  for (size_t i = 1; i < rec.rings[0].count; i++)
    assert_true(cs_ring_entry_epoch_us(&rec.rings[0].entries[i]) >= cs_ring_entry_epoch_us(&rec.rings[0].entries[i - 1]));
  cs_recording_free(&rec);
  fixture_close(&f);
}

/* Pushes on a CPU whose counter reads behind the others' (for those pushes the ring's origin is
 * 2^26 ticks later), the first half converted by a snapshot's copy before the rest are pushed:
 * the times read back never go back (before, every other entry read 13 to 67 ms earlier). */
static void test_times_never_go_back(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 64);
  cs_ring_entry_t out[64];
  uint64_t dropped;
  for (uint64_t i = 1; i <= 40; i++) {
    const uint64_t skew = i % 2 ? 0 : UINT64_C(1) << 26;
    f.ring.start.ticks += skew;
    push(&f, i, i);
    f.ring.start.ticks -= skew;
    if (i == 20) assert_int_equal(cs_ring_copy(&f.ring, out, &dropped), 20);
  }
  cs_recording_t rec;
  read_back(&f, &rec);
  assert_entries(&rec.rings[0], 1, 40);
  for (size_t i = 1; i < rec.rings[0].count; i++)
    assert_true(cs_ring_entry_epoch_us(&rec.rings[0].entries[i]) >= cs_ring_entry_epoch_us(&rec.rings[0].entries[i - 1]));
  cs_recording_free(&rec);
  fixture_close(&f);
}

/* What a death in the middle of a push leaves: the next slot's tag cleared, some fields new. */
static void test_cut_short_is_lost(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 8);
  push(&f, 1, 5);
  cs_ring_entry_t *next = &f.ring.entries[5];
  next->stream = 0;
  next->addr = 0xdead000; /* the fields written before the death */
  cs_recording_t rec;
  read_back(&f, &rec);
  assert_entries(&rec.rings[0], 1, 5); /* never misread */
  assert_int_equal(rec.rings[0].lost_at_end, 1);
  cs_recording_free(&rec);

  /* full ring: the slot being rewritten held the oldest entry, which is gone */
  push(&f, 6, 8);
  assert_int_equal(f.ring.head, 0);
  f.ring.entries[0].stream = 0;
  read_back(&f, &rec);
  assert_entries(&rec.rings[0], 2, 8);
  assert_int_equal(rec.rings[0].lost_at_end, 1);
  assert_int_equal(rec.rings[0].dropped, 1);
  assert_int_equal(rec.rings[0].damaged, 0);
  cs_recording_free(&rec);
  fixture_close(&f);
}

/* Dead after the entry's tag, before the count: the entry is whole, and kept. */
static void test_whole_unpublished_is_kept(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 8);
  push(&f, 1, 6);
  *f.ring.published = 5;
  cs_recording_t rec;
  read_back(&f, &rec);
  assert_entries(&rec.rings[0], 1, 6);
  assert_int_equal(rec.rings[0].lost_at_end, 0);
  cs_recording_free(&rec);
  fixture_close(&f);
}

/* An entry whose tag is not its push number's (a page that reached the disk stale): left out. */
static void test_damaged_is_left_out(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 8);
  push(&f, 1, 5);
  f.ring.entries[2].stream ^= 1u << (CS_RECFILE_TAG_SHIFT + 1);
  cs_recording_t rec;
  read_back(&f, &rec);
  assert_int_equal(rec.rings[0].damaged, 1);
  assert_int_equal(rec.rings[0].count, 4);
  for (size_t i = 0; i < rec.rings[0].count; i++) assert_int_not_equal(rec.rings[0].entries[i].addr, 0x3000);
  cs_recording_free(&rec);
  fixture_close(&f);
}

/* After a clear (history switched off and on), the old entries never pass for new ones. */
static void test_clear_forgets(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 8);
  push(&f, 1, 6);
  cs_ring_set_enabled(&f.ring, false);
  cs_ring_set_enabled(&f.ring, true);
  cs_recording_t rec;
  read_back(&f, &rec);
  assert_int_equal(rec.rings[0].count, 0);
  assert_int_equal(rec.rings[0].lost_at_end, 0);
  cs_recording_free(&rec);
  push(&f, 1, 2);
  read_back(&f, &rec);
  assert_entries(&rec.rings[0], 1, 2);
  assert_int_equal(rec.rings[0].lost_at_end, 0);
  cs_recording_free(&rec);
  fixture_close(&f);
}

/* The pass-through ring (issue 28): each entry's kind comes back apart from its stack id; a kind
 * that is not drawn is damage. A context's ring has no kinds. */
static void test_passthrough_kinds(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 8);
  push(&f, 1, 2);
  cs_ring_t pass;
  assert_true(cs_recfile_add_ring(f.w, &pass, CS_RECFILE_RING_PASSTHROUGH));
  const int kinds[] = {CS_PASSTHROUGH_PITCH, CS_PASSTHROUGH_VMM_MAPPING, CS_PASSTHROUGH_VMM_HANDLE,
                       CS_PASSTHROUGH_GRAPH};
  for (uint32_t i = 0; i < 4; i++)
    cs_ring_push(&pass, CS_ACTION_SEGMENT_ALLOC, 1, 0x1000 * (i + 1), 4096, 0, cs_recfile_kind_stack(kinds[i], 7 + i));
  unsigned char *data;
  size_t len;
  file_bytes(&f, &data, &len);
  cs_recording_t rec;
  char why[256] = "";
  if (cs_recording_parse(data, len, &rec, why, sizeof why) != 0) fail_msg("refused: %s", why);
  assert_int_equal(rec.version, CS_RECFILE_VERSION);
  assert_int_equal(rec.ring_count, 2);
  assert_false(rec.rings[0].passthrough);
  assert_null(rec.rings[0].kinds);
  const cs_rec_ring_t *r = &rec.rings[1];
  assert_true(r->passthrough);
  assert_int_equal(r->count, 3);
  assert_int_equal(r->damaged, 1); /* vmm_physical is never drawn */
  assert_int_equal(r->kinds[0], CS_PASSTHROUGH_PITCH);
  assert_int_equal(r->entries[0].stack_id, 7);
  assert_int_equal(r->kinds[1], CS_PASSTHROUGH_VMM_MAPPING);
  assert_int_equal(r->entries[1].stack_id, 8);
  assert_int_equal(r->kinds[2], CS_PASSTHROUGH_GRAPH);
  assert_int_equal(r->entries[2].stack_id, 10);
  assert_int_equal(cs_ring_entry_device(&r->entries[2]), 1);
  cs_recording_free(&rec);
  cs_ring_destroy(&pass);
  fixture_close(&f);
}

/* A fork child's file, made where the parent's was mapped: the rings go on in it with what they
 * recorded since the fork (before the child's file existed). */
static void test_reopen_keeps_the_childs(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 8);
  push(&f, 1, 3);
  cs_recfile_detach(f.w); /* at the fork, in the child */
  cs_ring_clear(&f.ring);
  push(&f, 4, 5);         /* the child's, before it makes its own file */
  char path[64];
  snprintf(path, sizeof path, "/tmp/cs-test-recording-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  int err = 0;
  cs_recfile_writer_t *w = cs_recfile_reopen(f.w, fd, &err);
  assert_non_null(w);
  f.w = w;
  close(f.fd);
  unlink(f.path);
  f.fd = fd;
  memcpy(f.path, path, sizeof path);
  push(&f, 6, 6);
  cs_recording_t rec;
  read_back(&f, &rec);
  assert_entries(&rec.rings[0], 4, 6);
  assert_int_equal(rec.rings[0].lost_at_end + rec.rings[0].damaged + rec.rings[0].dropped, 0);
  cs_recording_free(&rec);
  fixture_close(&f);
}

/* Version 1 (before the pass-through ring) is read as it is; a newer version is refused. */
static void test_versions(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 8);
  push(&f, 1, 2);
  unsigned char *data;
  size_t len;
  file_bytes(&f, &data, &len);
  cs_recfile_header_t *h = (cs_recfile_header_t *)(void *)data;
  h->version = 1;
  cs_recording_t rec;
  char why[256] = "";
  if (cs_recording_parse(data, len, &rec, why, sizeof why) != 0) fail_msg("refused: %s", why);
  assert_int_equal(rec.version, 1);
  assert_entries(&rec.rings[0], 1, 2);
  cs_recording_free(&rec);
  file_bytes(&f, &data, &len);
  h = (cs_recfile_header_t *)(void *)data;
  h->version = CS_RECFILE_VERSION + 1;
  assert_int_equal(cs_recording_parse(data, len, &rec, why, sizeof why), -1);
  assert_non_null(strstr(why, "made by a newer cudasnap"));
  fixture_close(&f);
}

/* Any prefix of the file, and files with bytes changed anywhere in the header, the module map,
 * the stack log or the ring's page: refused with a reason, or read with every count in bounds. */
static void test_cut_and_mutated(void **state) {
  (void)state;
  fixture_t f;
  fixture_open(&f, 64);
  push(&f, 1, 40);
  const uintptr_t pcs[4] = {1, 2, 3, 4};
  for (uint32_t id = 1; id <= 5; id++) cs_recfile_add_stack(f.w, id, pcs, id % 4 + 1);
  cs_recfile_note_modules(f.w);
  unsigned char *whole;
  size_t len;
  file_bytes(&f, &whole, &len);
  const cs_recfile_header_t *h = (const cs_recfile_header_t *)(const void *)whole;
  const uint64_t ring = h->rings_offset;
  assert_true(h->module_count > 0);

  size_t refused = 0;
  for (size_t cut = 0; cut < len; cut += cut < 8192 ? 61 : 4093) {
    unsigned char *data = malloc(cut ? cut : 1);
    memcpy(data, whole, cut);
    cs_recording_t rec;
    char why[256] = "";
    if (cs_recording_parse(data, cut, &rec, why, sizeof why) == 0) cs_recording_free(&rec);
    else refused += why[0] != '\0';
  }
  assert_true(refused > 0);

  /* regions worth mutating: header, module records, stack log, ring page and first entries */
  const uint64_t regions[][2] = {{0, sizeof(cs_recfile_header_t)}, {h->modules_offset, 1024},
                                 {h->stacks_offset, 256}, {ring, 64}, {ring + CS_RECFILE_PAGE, 64 * 32}};
  unsigned seed = 12345;
  for (int i = 0; i < 4000; i++) {
    unsigned char *data = malloc(len);
    memcpy(data, whole, len);
    for (int k = 0; k < 1 + i % 4; k++) {
      seed = seed * 1103515245u + 12345u;
      const uint64_t *region = regions[(seed >> 16) % 5];
      seed = seed * 1103515245u + 12345u;
      const uint64_t at = region[0] + (seed >> 8) % region[1];
      seed = seed * 1103515245u + 12345u;
      data[at] = (unsigned char)(seed >> 16);
    }
    cs_recording_t rec;
    char why[256] = "";
    if (cs_recording_parse(data, len, &rec, why, sizeof why) != 0) {
      assert_true(why[0] != '\0');
      continue;
    }
    for (size_t r = 0; r < rec.ring_count; r++) assert_true(rec.rings[r].count <= rec.rings[r].capacity);
    for (uint32_t id = 1; id <= rec.stack_count; id++) {
      size_t n;
      if (cs_recording_stack(&rec, id, &n)) assert_true(n >= 1 && n <= CS_RECFILE_MAX_DEPTH);
    }
    cs_recording_free(&rec);
  }
  free(whole);
  fixture_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_whole_and_wrapped),   cmocka_unit_test(test_cut_short_is_lost),
      cmocka_unit_test(test_whole_unpublished_is_kept), cmocka_unit_test(test_damaged_is_left_out),
      cmocka_unit_test(test_clear_forgets),       cmocka_unit_test(test_cut_and_mutated),
      cmocka_unit_test(test_passthrough_kinds),   cmocka_unit_test(test_reopen_keeps_the_childs),
      cmocka_unit_test(test_versions),            cmocka_unit_test(test_times_never_go_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

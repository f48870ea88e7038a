/* SPDX-License-Identifier: Apache-2.0 */
/* reader/head: a snapshot's first key read alone (cudasnap_summary), JSON and pickle. The parse
 * must stop once that value is closed (what follows may be anything: it is never read), stop at
 * once on another first key (PyTorch's files), and never claim a head it did not read whole: every
 * prefix of a pickle that ends inside the head asks for more. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "model/doc.h"
#include "reader/head.h"
#include "reader/unpickle.h"

#ifndef CS_TEST_DATA_DIR
#define CS_TEST_DATA_DIR "../data"
#endif

static const char KEY[] = "cudasnap_summary";

/* bytes into a temporary file; returns its path (static buffer) */
static const char *temp_file(const void *bytes, size_t len) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/cs-test-head-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, bytes, len), (ssize_t)len);
  close(fd);
  return path;
}

static cs_head_status_t head_of(const void *bytes, size_t len, cs_doc_t **doc) {
  const char *path = temp_file(bytes, len);
  cs_read_error_t err;
  cs_head_status_t status = cs_read_head(path, KEY, doc, &err);
  unlink(path);
  return status;
}

/* The head's dict has a == 1 and the root nothing but the head. */
static void check_head(cs_doc_t *doc) {
  cs_val_t root = cs_doc_root(doc);
  assert_int_equal(cs_doc_len(doc, root), 1);
  cs_val_t head = cs_doc_get(doc, root, KEY);
  assert_true(cs_val_is_dict(head));
  int64_t a = 0;
  assert_true(cs_doc_int(doc, cs_doc_get(doc, head, "a"), &a));
  assert_int_equal(a, 1);
  cs_doc_free(doc);
}

static void test_json(void **state) {
  (void)state;
  cs_doc_t *doc = NULL;
  /* what follows the head is not JSON at all: it is never read */
  static const char with_head[] = "{\"cudasnap_summary\": {\"a\": 1, \"b\": [1, {\"c\": null}]}, \"segments\": [ not json";
  assert_int_equal(head_of(with_head, sizeof with_head - 1, &doc), CS_HEAD_FOUND);
  check_head(doc);
  static const char other[] = "{\"segments\": [], \"device_traces\": []}";
  assert_int_equal(head_of(other, sizeof other - 1, &doc), CS_HEAD_ABSENT);
  assert_null(doc);
  static const char cut[] = "{\"cudasnap_summary\": {\"a\": 1, \"b\": [1, ";
  assert_int_not_equal(head_of(cut, sizeof cut - 1, &doc), CS_HEAD_FOUND);
  assert_null(doc);
  static const char list[] = "[1, 2]";
  assert_int_not_equal(head_of(list, sizeof list - 1, &doc), CS_HEAD_FOUND);
}

/* PROTO 2, {} MARK "cudasnap_summary" {} MARK "a" 1 SETITEMS SETITEMS (the head's own batch), then
 * MARK "segments" and bytes that are no pickle. */
static const uint8_t pickle_with_head[] = {
    0x80, 2, '}', '(', 0x8c, 16, 'c', 'u', 'd', 'a', 's', 'n', 'a', 'p', '_', 's', 'u', 'm', 'm', 'a', 'r', 'y',
    '}', '(', 0x8c, 1, 'a', 'K', 1, 'u', 'u', '(', 0x8c, 8, 's', 'e', 'g', 'm', 'e', 'n', 't', 's', 0xff, 0xfe};
enum { HEAD_END = 31 }; /* just past the root's first SETITEMS */

static void test_pickle(void **state) {
  (void)state;
  cs_doc_t *doc = NULL;
  assert_int_equal(head_of(pickle_with_head, sizeof pickle_with_head, &doc), CS_HEAD_FOUND);
  check_head(doc);
  for (size_t n = 0; n < HEAD_END; n++) { /* cut inside the head: never found, never a crash */
    cs_read_error_t err;
    assert_int_not_equal(cs_unpickle_head(pickle_with_head, n, KEY, &doc, &err), CS_HEAD_FOUND);
    assert_null(doc);
  }
  cs_read_error_t err;
  assert_int_equal(cs_unpickle_head(pickle_with_head, HEAD_END, KEY, &doc, &err), CS_HEAD_FOUND);
  check_head(doc);
  assert_int_equal(cs_unpickle_head(pickle_with_head, HEAD_END - 1, KEY, &doc, &err), CS_HEAD_SHORT);
}

/* PyTorch's pickles begin with "segments": absent, whatever their size. */
static void test_pytorch_pickle(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/fixtures/memviz_minimal_valid.p2.pickle", CS_TEST_DATA_DIR);
  cs_doc_t *doc = NULL;
  cs_read_error_t err;
  assert_int_equal(cs_read_head(path, KEY, &doc, &err), CS_HEAD_ABSENT);
  assert_null(doc);
  snprintf(path, sizeof path, "%s/fixtures/memviz_minimal_valid.json", CS_TEST_DATA_DIR);
  assert_int_equal(cs_read_head(path, KEY, &doc, &err), CS_HEAD_ABSENT);
  assert_int_equal(cs_read_head("/no/such/file.json", KEY, &doc, &err), CS_HEAD_ERROR);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_pickle),
      cmocka_unit_test(test_pytorch_pickle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The process's allocator frames (memviz/allocator_frames.h) added to by several threads while
 * others read them, as a program's decorators run while the live record's publisher and a
 * snapshot's writer name sites: every glob lands once, a reader sees the count only grow, and a
 * glob it has seen counted matches its frame. Run under ThreadSanitizer by scripts/test.sh. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "memviz/allocator_frames.h"

enum { WRITERS = 4, PER_WRITER = 16, READERS = 2 };

static atomic_bool done;

static void *writer(void *arg) {
  const int w = (int)(intptr_t)arg;
  for (int i = 0; i < PER_WRITER; i++) {
    char glob[32];
    snprintf(glob, sizeof glob, "helper_%d_%d", w, i);
    const char *why = NULL;
    if (cs_allocator_frames_add(glob, strlen(glob), &why) != 0) return (void *)"refused";
    if (cs_allocator_frames_add(glob, strlen(glob), &why) != 0) return (void *)"refused again"; /* no new entry */
  }
  return NULL;
}

static void *reader(void *arg) {
  (void)arg;
  size_t seen = 0;
  while (!atomic_load(&done)) {
    const size_t n = cs_allocator_frames_count();
    if (n < seen) return (void *)"the count went down";
    seen = n;
    for (size_t i = 0; i < n; i++) {
      const cs_frame_t f = {.name = cs_allocator_frames_text(i), .filename = "x.py", .line = 1};
      if (!cs_allocator_frame(&f)) return (void *)"a counted glob did not match its own name";
    }
  }
  return NULL;
}

static void test_add_while_reading(void **state) {
  (void)state;
  pthread_t w[WRITERS], r[READERS];
  for (int i = 0; i < READERS; i++) assert_int_equal(pthread_create(&r[i], NULL, reader, NULL), 0);
  for (int i = 0; i < WRITERS; i++) assert_int_equal(pthread_create(&w[i], NULL, writer, (void *)(intptr_t)i), 0);
  for (int i = 0; i < WRITERS; i++) {
    void *rc;
    pthread_join(w[i], &rc);
    if (rc != NULL) fail_msg("writer %d: %s", i, (const char *)rc);
  }
  atomic_store(&done, true);
  for (int i = 0; i < READERS; i++) {
    void *rc;
    pthread_join(r[i], &rc);
    if (rc != NULL) fail_msg("reader %d: %s", i, (const char *)rc);
  }
  assert_int_equal(cs_allocator_frames_count(), WRITERS * PER_WRITER);
  for (int w_i = 0; w_i < WRITERS; w_i++)
    for (int i = 0; i < PER_WRITER; i++) {
      char glob[32];
      snprintf(glob, sizeof glob, "helper_%d_%d", w_i, i);
      size_t found = 0;
      for (size_t k = 0; k < cs_allocator_frames_count(); k++) found += strcmp(cs_allocator_frames_text(k), glob) == 0;
      assert_int_equal(found, 1);
    }
  /* the 65th is refused, and says why */
  const char *why = NULL;
  assert_int_equal(cs_allocator_frames_add("one_more", 8, &why), -1);
  assert_string_equal(why, "the list holds 64 globs already");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_add_while_reading)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

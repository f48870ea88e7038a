/* SPDX-License-Identifier: Apache-2.0 */
/* phases/phases.c (the NVTX phase ring and name table; each annotation's thread and the names of
 * threads), snapshot/thread_names.c (threads' names at snapshot time) and interpose/nvtx_env.c
 * (whether cudasnap becomes the NVTX injection). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interpose/nvtx_env.h"
#include "phases/phases.h"
#include "record/thread_id.h"
#include "record/ticks.h"
#include "snapshot/thread_names.h"

static void test_names(void **state) {
  (void)state;
  assert_true(cs_phases_init());
  uint32_t a = cs_phases_name("forward", SIZE_MAX);
  char transient[16];
  strcpy(transient, "forward");
  assert_int_equal(cs_phases_name(transient, SIZE_MAX), a); /* equal text, equal id */
  strcpy(transient, "xxxxxxx");                            /* the table kept its own copy */
  assert_string_equal(cs_phases_name_text(a), "forward");
  assert_int_not_equal(cs_phases_name("forwardx", 7), 0);
  assert_int_equal(cs_phases_name("forwardx", 7), a);       /* len bounds the name */
  assert_int_not_equal(cs_phases_name("backward", SIZE_MAX), a);
  assert_string_equal(cs_phases_name_text(0), "");
  assert_string_equal(cs_phases_name_text(UINT32_MAX), "");
}

static void test_record_and_copy(void **state) {
  (void)state;
  assert_true(cs_phases_init());
  cs_phases_clear();
  uint32_t step = cs_phases_name("step", SIZE_MAX), bw = cs_phases_name("backward", SIZE_MAX);
  uint64_t t = cs_ticks_now();
  /* recorded out of time order (two threads); the copy sorts by time */
  cs_phases_record_at(bw, CS_PHASE_START, 1, t + 2000);
  cs_phases_record_at(step, CS_PHASE_START, 0, t + 1000);
  cs_phases_record_at(bw, CS_PHASE_END, 1, t + 3000);
  cs_phases_record_at(step, CS_PHASE_END, 0, t + 3000);
  cs_phase_list_t list;
  assert_int_equal(cs_phases_copy(&list), 0);
  assert_int_equal(list.count, 4);
  assert_int_equal(list.dropped, 0);
  assert_string_equal(list.items[0].name, "step");
  assert_int_equal(list.items[0].stage, CS_PHASE_START);
  assert_string_equal(list.items[1].name, "backward");
  assert_int_equal(list.items[1].device, 1);
  /* equal times keep the recording order */
  assert_string_equal(list.items[2].name, "backward");
  assert_string_equal(list.items[3].name, "step");
  for (size_t i = 1; i < list.count; i++) assert_true(list.items[i - 1].time_us <= list.items[i].time_us);
  cs_ticks_origin_t origin = cs_ticks_origin();
  assert_true(list.items[0].time_us >= origin.epoch_us);
  cs_phase_list_free(&list);
}

/* The ring keeps the newest CS_PHASES_CAPACITY: the oldest go first. */
static void test_bounded(void **state) {
  (void)state;
  assert_true(cs_phases_init());
  cs_phases_clear();
  uint32_t n = cs_phases_name("tick", SIZE_MAX);
  uint64_t t = cs_ticks_now();
  size_t total = CS_PHASES_CAPACITY + 10;
  for (size_t i = 0; i < total; i++) cs_phases_record_at(n, i % 2 ? CS_PHASE_END : CS_PHASE_START, 0, t + i);
  cs_phase_list_t list;
  assert_int_equal(cs_phases_copy(&list), 0);
  assert_int_equal(list.count, CS_PHASES_CAPACITY);
  assert_int_equal(list.dropped, 10);
  assert_int_equal(list.items[0].stage, CS_PHASE_START); /* item 10 was a START */
  cs_phase_list_free(&list);
  cs_phases_clear();
}

enum { THREADS = 4, PER_THREAD = 5000 };

static void *recorder(void *arg) {
  char name[32];
  snprintf(name, sizeof name, "thread-%d", (int)(intptr_t)arg);
  for (int i = 0; i < PER_THREAD; i++) {
    uint32_t id = cs_phases_name(name, SIZE_MAX);
    cs_phases_record(id, CS_PHASE_START, 0);
    cs_phases_record(id, CS_PHASE_END, 0);
  }
  return NULL;
}

/* Threads record at once: nothing is lost or torn, every name reads back whole. */
static void test_threads(void **state) {
  (void)state;
  assert_true(cs_phases_init());
  cs_phases_clear();
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, recorder, (void *)(intptr_t)i), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  cs_phase_list_t list;
  assert_int_equal(cs_phases_copy(&list), 0);
  assert_int_equal(list.count, THREADS * PER_THREAD * 2);
  size_t per[THREADS] = {0};
  for (size_t i = 0; i < list.count; i++) {
    int k = -1;
    assert_int_equal(sscanf(list.items[i].name, "thread-%d", &k), 1);
    assert_true(k >= 0 && k < THREADS);
    per[k]++;
  }
  for (int i = 0; i < THREADS; i++) assert_int_equal(per[i], PER_THREAD * 2);
  cs_phase_list_free(&list);
  cs_phases_clear();
}

/* ---- threads (issue 44) ---- */

typedef struct named_s {
  const char *name;   /* pthread_setname_np's, NULL: none */
  uint32_t tid;
  uint32_t open_now;  /* cs_phases_open_on(own thread) inside its two ranges */
  pthread_barrier_t *inside, *leave, *closed, *finish; /* closed, finish: NULL for one that ends at once */
} named_t;

/* Two nested ranges of its own; waits inside them, then closes them and ends. */
static void *ranges_of_own(void *arg) {
  named_t *n = arg;
  n->tid = (uint32_t)syscall(SYS_gettid);
  if (n->name) pthread_setname_np(pthread_self(), n->name);
  uint32_t outer = cs_phases_name("request", SIZE_MAX), inner = cs_phases_name(n->name ? n->name : "anon", SIZE_MAX);
  cs_phases_record(outer, CS_PHASE_START, 0);
  cs_phases_record(inner, CS_PHASE_START, 0);
  n->open_now = cs_phases_open_on(n->tid);
  pthread_barrier_wait(n->inside);
  pthread_barrier_wait(n->leave);
  cs_phases_record(inner, CS_PHASE_END, 0);
  cs_phases_record(outer, CS_PHASE_END, 0);
  if (n->closed) { /* stays, running, until told to end */
    pthread_barrier_wait(n->closed);
    pthread_barrier_wait(n->finish);
  }
  return NULL;
}

static const char *thread_name_in(const cs_phase_list_t *list, uint32_t tid) {
  const char *name = "(no annotation)";
  for (size_t i = 0; i < list->count; i++)
    if (list->items[i].thread == tid) name = list->items[i].thread_name ? list->items[i].thread_name : "(none)";
  return name;
}

/* Each annotation carries the thread that recorded it; the innermost open range is per thread;
 * threads' names come from nvtxNameOsThread (cs_phases_name_thread), else from the kernel at
 * snapshot time (a thread still running) or as it ended; an unnamed thread (the main thread's
 * name, inherited) has none. */
static void test_threads_own_phases(void **state) {
  (void)state;
  assert_true(cs_phases_init());
  cs_phases_clear();
  pthread_barrier_t inside, leave, closed, finish;
  pthread_barrier_init(&inside, NULL, 4);
  pthread_barrier_init(&leave, NULL, 4);
  pthread_barrier_init(&closed, NULL, 3);
  pthread_barrier_init(&finish, NULL, 3);
  named_t n[3] = {{.name = "ended_named", .inside = &inside, .leave = &leave},
                  {.name = "running_named", .inside = &inside, .leave = &leave, .closed = &closed, .finish = &finish},
                  {.name = NULL, .inside = &inside, .leave = &leave, .closed = &closed, .finish = &finish}};
  pthread_t t[3];
  for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&t[i], NULL, ranges_of_own, &n[i]), 0);
  pthread_barrier_wait(&inside);
  /* every thread's innermost open range is its own, whoever recorded last */
  assert_string_equal(cs_phases_name_text(n[0].open_now), "ended_named");
  assert_string_equal(cs_phases_name_text(n[1].open_now), "running_named");
  assert_string_equal(cs_phases_name_text(n[2].open_now), "anon");
  assert_string_equal(cs_phases_name_text(cs_phases_open_on(n[1].tid)), "running_named");
  assert_int_equal(cs_phases_open_on((uint32_t)syscall(SYS_gettid)), 0); /* this thread opened none */
  /* a name given through NVTX wins over the kernel's */
  cs_phases_name_thread(n[2].tid, cs_phases_name("nvtx_named", SIZE_MAX));
  assert_string_equal(cs_phases_thread_name(n[2].tid), "nvtx_named");
  pthread_barrier_wait(&leave);
  pthread_barrier_wait(&closed); /* 1 and 2 closed their ranges, and still run */
  pthread_join(t[0], NULL);      /* ended: its name was kept as it ended */
  cs_phase_list_t list;
  assert_int_equal(cs_phases_copy(&list), 0);
  assert_int_equal(list.count, 12);
  for (int i = 0; i < 3; i++) {
    const char *order[4] = {"request", n[i].name ? n[i].name : "anon", n[i].name ? n[i].name : "anon", "request"};
    size_t k = 0;
    for (size_t j = 0; j < list.count; j++) {
      if (list.items[j].thread != n[i].tid) continue;
      assert_true(k < 4);
      assert_string_equal(list.items[j].name, order[k]);
      assert_int_equal(list.items[j].stage, k < 2 ? CS_PHASE_START : CS_PHASE_END);
      k++;
    }
    assert_int_equal(k, 4);
  }
  cs_snap_thread_names(&list);
  assert_string_equal(thread_name_in(&list, n[0].tid), "ended_named");
  assert_string_equal(thread_name_in(&list, n[1].tid), "running_named");
  assert_string_equal(thread_name_in(&list, n[2].tid), "nvtx_named");
  cs_phase_list_free(&list);
  /* forgotten, a thread has the kernel's name, which for a thread nobody named is the main
   * thread's: none */
  cs_phases_name_thread(n[2].tid, 0);
  assert_null(cs_phases_thread_name(n[2].tid));
  pthread_barrier_wait(&finish);
  pthread_join(t[1], NULL);
  pthread_join(t[2], NULL);
  assert_int_equal(cs_phases_copy(&list), 0);
  cs_snap_thread_names(&list);
  assert_string_equal(thread_name_in(&list, n[1].tid), "running_named");
  assert_string_equal(thread_name_in(&list, n[2].tid), "(none)");
  cs_phase_list_free(&list);
  /* a fork's child forgets its parent's threads and their names */
  cs_phases_name_thread(n[1].tid, cs_phases_name("x", SIZE_MAX));
  cs_phases_clear();
  assert_null(cs_phases_thread_name(n[1].tid));
  pthread_barrier_destroy(&inside);
  pthread_barrier_destroy(&leave);
  pthread_barrier_destroy(&closed);
  pthread_barrier_destroy(&finish);
}

/* A range recorded as another thread's (an NVTX start/end range ended elsewhere) is that thread's. */
static void test_record_on_another_thread(void **state) {
  (void)state;
  assert_true(cs_phases_init());
  cs_phases_clear();
  uint32_t io = cs_phases_name("io", SIZE_MAX), mine = cs_thread_id();
  cs_phases_record(io, CS_PHASE_START, 0);
  cs_phases_record_on(io, CS_PHASE_END, 0, 4242, cs_ticks_now());
  assert_int_equal(cs_phases_open_on(mine), io);
  cs_phases_record_on(io, CS_PHASE_END, 0, mine, cs_ticks_now());
  assert_int_equal(cs_phases_open_on(mine), 0);
  cs_phase_list_t list;
  assert_int_equal(cs_phases_copy(&list), 0);
  assert_int_equal(list.count, 3);
  assert_int_equal(list.items[0].thread, mine);
  assert_int_equal(list.items[1].thread, 4242);
  assert_int_equal(list.items[2].thread, mine);
  cs_phase_list_free(&list);
  cs_phases_clear();
}

static void test_env(void **state) {
  (void)state;
  assert_int_equal(cs_nvtx_env_decide(NULL, NULL, true), CS_NVTX_ENV_SET);
  assert_int_equal(cs_nvtx_env_decide("1", "", true), CS_NVTX_ENV_SET);
  assert_int_equal(cs_nvtx_env_decide(NULL, "/opt/nsys/libToolsInjection64.so", true), CS_NVTX_ENV_OTHER_TOOL);
  assert_int_equal(cs_nvtx_env_decide(NULL, "/old/build/libcudasnap.so", true), CS_NVTX_ENV_OURS);
  assert_int_equal(cs_nvtx_env_decide("0", NULL, true), CS_NVTX_ENV_OFF);
  assert_int_equal(cs_nvtx_env_decide("off", "/opt/nsys/libToolsInjection64.so", true), CS_NVTX_ENV_OFF);
  assert_int_equal(cs_nvtx_env_decide(NULL, "/lib/libcudasnap.so", false), CS_NVTX_ENV_STRAY);
  assert_int_equal(cs_nvtx_env_decide(NULL, "/opt/nsys/libToolsInjection64.so", false), CS_NVTX_ENV_NOTHING);
  assert_true(cs_nvtx_env_off("FALSE"));
  assert_false(cs_nvtx_env_off("maybe")); /* reported when the options are parsed; on */
  assert_false(cs_nvtx_env_names_cudasnap("/home/libcudasnap-fan/libx.so"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),   cmocka_unit_test(test_record_and_copy), cmocka_unit_test(test_bounded),
      cmocka_unit_test(test_threads), cmocka_unit_test(test_threads_own_phases),
      cmocka_unit_test(test_record_on_another_thread), cmocka_unit_test(test_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

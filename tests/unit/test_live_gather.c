/* SPDX-License-Identifier: Apache-2.0 */
/* The live record's figures (publish/live_gather.c, issue 45): the live bytes and blocks per
 * site that `top` and `metrics` show are those a walk of the allocators' blocks finds, on a mixed
 * workload over three allocators of two devices, and each hold of an allocator's lock by the
 * publication copies at most one page of counts and visits no block, however many blocks there are.
 *
 * What the publication does under each hold is seen through the linker's --wrap of the allocator
 * functions it calls (tests/unit/CMakeLists.txt): the test counts, between a lock taken and let
 * go, the blocks visited and the pages of counts copied. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "allocator/allocator.h"
#include "device/driver_watch.h"
#include "device/passthrough_mem.h"
#include "device/recorder.h"
#include "device/registry.h"
#include "publish/live_gather.h"
#include "record/intern.h"
#include "snapshot/stack_site.h"
#include "snapshot/symbolize.h"
#include "tests/fakes/fake_backend.h"

/* ---- what each hold of a lock does, through --wrap ---- */

typedef struct hold_watch_s {
  bool watching, holding;
  int holds;            /* locks taken */
  int pages, most_pages; /* pages copied in this hold, and in the hold that copied most */
  long blocks_visited;  /* in every hold */
} hold_watch_t;
static hold_watch_t watch;

bool __real_cs_allocator_lock_by(cs_allocator_t *a, uint64_t deadline_ns);
bool __wrap_cs_allocator_lock_by(cs_allocator_t *a, uint64_t deadline_ns);
bool __wrap_cs_allocator_lock_by(cs_allocator_t *a, uint64_t deadline_ns) {
  bool had = __real_cs_allocator_lock_by(a, deadline_ns);
  if (had && watch.watching) {
    watch.holding = true;
    watch.holds++;
    watch.pages = 0;
  }
  return had;
}

void __real_cs_allocator_unlock(cs_allocator_t *a);
void __wrap_cs_allocator_unlock(cs_allocator_t *a);
void __wrap_cs_allocator_unlock(cs_allocator_t *a) {
  if (watch.holding) {
    watch.holding = false;
    if (watch.pages > watch.most_pages) watch.most_pages = watch.pages;
  }
  __real_cs_allocator_unlock(a);
}

size_t __real_cs_allocator_stack_live_locked(cs_allocator_t *a, size_t page, cs_stack_live_t out[CS_STACK_LIVE_PAGE]);
size_t __wrap_cs_allocator_stack_live_locked(cs_allocator_t *a, size_t page, cs_stack_live_t out[CS_STACK_LIVE_PAGE]);
size_t __wrap_cs_allocator_stack_live_locked(cs_allocator_t *a, size_t page, cs_stack_live_t out[CS_STACK_LIVE_PAGE]) {
  if (watch.holding) watch.pages++;
  return __real_cs_allocator_stack_live_locked(a, page, out);
}

typedef struct counting_visit_s {
  cs_allocator_visit_fn visit;
  void *ctx;
} counting_visit_t;

static void count_then_visit(void *ctx, const cs_segment_info_t *s, const cs_block_info_t *b) {
  counting_visit_t *c = ctx;
  if (watch.holding) watch.blocks_visited++;
  c->visit(c->ctx, s, b);
}

void __real_cs_allocator_visit_locked(cs_allocator_t *a, cs_allocator_visit_fn visit, void *ctx);
void __wrap_cs_allocator_visit_locked(cs_allocator_t *a, cs_allocator_visit_fn visit, void *ctx);
void __wrap_cs_allocator_visit_locked(cs_allocator_t *a, cs_allocator_visit_fn visit, void *ctx) {
  counting_visit_t c = {.visit = visit, .ctx = ctx};
  __real_cs_allocator_visit_locked(a, count_then_visit, &c);
}

/* ---- the process's stack table and the driver's last answer, this test's own ---- */

static cs_intern_t *test_intern;

cs_intern_t *cs_record_intern(void) { return test_intern; }

/* no allocation through a history here: the phase is none */
uint32_t cs_record_alloc_thread(int device) {
  (void)device;
  return 0;
}

bool cs_driver_watch_last_used(int device, uint64_t *used, uint64_t *time_us) {
  (void)device, (void)used, (void)time_us;
  return false;
}

/* no memory past the cache here: a device has a row only with an allocator */
bool cs_passthrough_stats(int device, cs_passthrough_stat_t out[CS_PASSTHROUGH_KINDS]) {
  (void)device, (void)out;
  return false;
}

/* ---- stacks whose sites are this file's functions ---- */

/* noipa: GCC must neither rename these to "x.constprop.0" clones nor fold the identical site
 * functions into one; and a call followed by KEEP_FRAME is not a tail call, so the return address
 * stays in the caller. */
#ifdef __clang__
#define TEST_FRAME __attribute__((noinline))
#else
#define TEST_FRAME __attribute__((noinline, noipa))
#endif
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

TEST_FRAME static uintptr_t return_address(void) {
  uintptr_t r = (uintptr_t)__builtin_return_address(0);
  KEEP_FRAME();
  return r;
}

#define SITE_FUNCTION(name)                                                                        \
  TEST_FRAME static uintptr_t name(void) {                                                         \
    uintptr_t pc = return_address();                                                               \
    KEEP_FRAME();                                                                                  \
    return pc;                                                                                     \
  }
SITE_FUNCTION(site_alpha)
SITE_FUNCTION(site_beta)
SITE_FUNCTION(site_gamma)
SITE_FUNCTION(site_delta)

enum { MANY_STACKS = 2500 }; /* ids over three pages of counts */

typedef struct stacks_s {
  uint32_t alpha1, alpha2, beta, gamma; /* alpha1 and alpha2: two stacks of one site */
  uint32_t many[MANY_STACKS];           /* site_delta's, with distinct outer frames */
} stacks_t;
static stacks_t st;

static uint32_t intern2(uintptr_t inner, uintptr_t outer) {
  uintptr_t pcs[2] = {inner, outer};
  uint32_t id = cs_intern_stack(cs_record_intern(), pcs, outer ? 2 : 1);
  assert_true(id != 0);
  return id;
}

static void intern_stacks(void) {
  st.alpha1 = intern2(site_alpha(), site_beta());
  st.alpha2 = intern2(site_alpha(), site_gamma());
  st.beta = intern2(site_beta(), 0);
  st.gamma = intern2(site_gamma(), site_alpha());
  uintptr_t delta = site_delta();
  for (int i = 0; i < MANY_STACKS; i++) st.many[i] = intern2(delta, (uintptr_t)0x1000 + (uintptr_t)i * 16);
}

static int setup_stacks(void **state) {
  (void)state;
  test_intern = cs_intern_create(1 << 16);
  if (!test_intern) return -1;
  intern_stacks();
  return 0;
}

static int teardown_stacks(void **state) {
  (void)state;
  cs_intern_destroy(test_intern);
  return 0;
}

/* ---- allocators on fake devices, registered as the driver hooks register them ---- */

typedef struct test_alloc_s {
  fake_backend_t fb;
  cs_allocator_t *a;
  int device;
} test_alloc_t;

static test_alloc_t *test_alloc_new(int device, cs_free_mode_t mode) {
  test_alloc_t *t = calloc(1, sizeof *t);
  assert_non_null(t);
  fake_backend_init(&t->fb, (size_t)4 << 30);
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  conf.free_mode = mode;
  cs_backend_t backend = fake_backend_as_backend(&t->fb);
  t->a = cs_allocator_create(&conf, &backend, NULL);
  assert_non_null(t->a);
  t->device = device;
  assert_int_equal(cs_registry_add_allocator(device, t->a), 0);
  return t;
}

static void test_alloc_free(test_alloc_t *t) {
  cs_registry_remove_allocator(t->a);
  cs_allocator_destroy(t->a);
  free(t);
}

/* ---- the walk's figures by site: what the publication must show ---- */

enum { MAX_SITES = 16 };

typedef struct ref_site_s {
  char name[CS_LIVE_SITE_LEN];
  uint64_t bytes, blocks;
} ref_site_t;

typedef struct ref_s {
  cs_stack_live_t *by_id; /* ids of them */
  size_t ids;
  ref_site_t sites[MAX_SITES];
  size_t count;
} ref_t;

static void ref_visit(void *ctx, const cs_segment_info_t *s, const cs_block_info_t *b) {
  (void)s;
  ref_t *r = ctx;
  if (b->state != CS_BLOCK_ALLOCATED) return;
  assert_true(b->stack_id < r->ids);
  r->by_id[b->stack_id].bytes += b->requested;
  r->by_id[b->stack_id].blocks++;
}

/* A stack's site, named by the same rule and symbolizer as the publication (which the test does
 * not see: it names from the stack table). */
static void ref_name(cs_symbolizer_t *sym, uint32_t id, char *name, size_t size) {
  size_t n = 0;
  const uintptr_t *pcs = id ? cs_intern_get(cs_record_intern(), id, &n) : NULL;
  if (!pcs || !n) {
    snprintf(name, size, "(no stack)");
    return;
  }
  cs_frame_t f = cs_stack_site(sym, pcs, n);
  assert_non_null(f.name);
  snprintf(name, size, "%s %s:%d", f.name, f.filename ? f.filename : "??", f.line);
}

/* The live blocks of the allocators of one device by a walk of their blocks, by site. */
static void ref_of(ref_t *r, test_alloc_t **allocs, size_t n) {
  memset(r, 0, sizeof *r);
  r->ids = (size_t)cs_intern_count(cs_record_intern()) + 1;
  r->by_id = calloc(r->ids, sizeof *r->by_id);
  assert_non_null(r->by_id);
  for (size_t i = 0; i < n; i++) cs_allocator_visit(allocs[i]->a, ref_visit, r);
  cs_symbolizer_t *sym = cs_symbolizer_create();
  assert_non_null(sym);
  for (size_t id = 0; id < r->ids; id++) {
    if (!r->by_id[id].blocks) continue;
    char name[CS_LIVE_SITE_LEN];
    ref_name(sym, (uint32_t)id, name, sizeof name);
    size_t j = 0;
    while (j < r->count && strcmp(r->sites[j].name, name) != 0) j++;
    if (j == r->count) {
      assert_true(r->count < MAX_SITES);
      snprintf(r->sites[r->count++].name, CS_LIVE_SITE_LEN, "%s", name);
    }
    r->sites[j].bytes += r->by_id[id].bytes;
    r->sites[j].blocks += r->by_id[id].blocks;
  }
  cs_symbolizer_destroy(sym);
  free(r->by_id);
  r->by_id = NULL;
}

static const cs_live_device_t *device_in(const cs_live_device_t *out, size_t n, int device) {
  for (size_t i = 0; i < n; i++)
    if (out[i].device == device) return &out[i];
  return NULL;
}

/* The published device shows exactly the walk's sites and figures, largest first. */
static void assert_device_matches(const cs_live_device_t *d, test_alloc_t **allocs, size_t n) {
  assert_non_null(d);
  assert_int_equal(d->stale, 0);
  ref_t ref;
  ref_of(&ref, allocs, n);
  assert_int_equal(d->site_count, ref.count);
  uint64_t allocated = 0;
  for (size_t i = 0; i < n; i++) {
    cs_stats_t stats;
    cs_allocator_get_stats(allocs[i]->a, &stats);
    allocated += (uint64_t)stats.allocated_bytes[CS_STAT_ALL].current;
  }
  assert_int_equal(d->allocated_bytes, allocated);
  for (uint32_t i = 0; i < d->site_count; i++) {
    if (i > 0) assert_true(d->sites[i - 1].bytes >= d->sites[i].bytes);
    size_t j = 0;
    while (j < ref.count && strcmp(ref.sites[j].name, d->sites[i].name) != 0) j++;
    if (j == ref.count) fail_msg("published site \"%s\" is not the walk's", d->sites[i].name);
    assert_int_equal(d->sites[i].bytes, ref.sites[j].bytes);
    assert_int_equal(d->sites[i].blocks, ref.sites[j].blocks);
  }
}

static size_t gather(cs_live_gather_t *g, cs_live_device_t *out) {
  return cs_live_gather(g, out, NULL, 0);
}

static uint64_t next_random(uint64_t *seed) {
  *seed ^= *seed << 13, *seed ^= *seed >> 7, *seed ^= *seed << 17;
  return *seed;
}

enum { SLOTS = 3000 };

typedef struct slot_s {
  test_alloc_t *owner;
  uintptr_t addr;
} slot_t;

/* `steps` random steps over the allocators: allocate from a random stack in a random slot
 * (freeing what it held), or free one; the device of allocator 0 is now and then behind (its
 * fence-mode frees stay pending). */
static void mixed_steps(test_alloc_t **allocs, size_t n, slot_t *slots, uint64_t *seed, int steps) {
  for (int step = 0; step < steps; step++) {
    uint64_t r = next_random(seed);
    slot_t *s = &slots[(r >> 8) % SLOTS];
    if (s->addr) {
      assert_int_equal(cs_allocator_free(s->owner->a, s->addr), 0);
      s->addr = 0;
    }
    if (r % 4 == 0) continue; /* a free only */
    if (r % 64 == 1) fake_backend_complete_events(&allocs[0]->fb);
    test_alloc_t *t = allocs[(r >> 24) % n];
    uint32_t stacks[] = {0, st.alpha1, st.alpha2, st.beta, st.gamma, st.many[(r >> 40) % MANY_STACKS]};
    uint32_t stack = stacks[(r >> 32) % CS_ARRAY_SIZE(stacks)];
    size_t size = (r >> 48) % 3 == 0 ? (size_t)((r >> 20) % (4u << 20)) + 1 : (size_t)((r >> 20) % 20000) + 1;
    assert_int_equal(cs_allocator_malloc(t->a, size, 0, stack, &s->addr), 0);
    s->owner = t;
  }
}

/* The figures of a mixed workload are the walk's, publication after publication. */
static void test_sites_match_the_walk(void **state) {
  (void)state;
  test_alloc_t *dev0[2] = {test_alloc_new(0, CS_FREE_FENCE), test_alloc_new(0, CS_FREE_STREAM)};
  test_alloc_t *dev1[1] = {test_alloc_new(1, CS_FREE_SYNC)};
  test_alloc_t *all[3] = {dev0[0], dev0[1], dev1[0]};
  slot_t *slots = calloc(SLOTS, sizeof *slots);
  cs_live_device_t *out = calloc(CS_LIVE_MAX_DEVICES, sizeof *out);
  cs_live_gather_t *g = cs_live_gather_create();
  assert_true(slots && out && g);
  uint64_t seed = 0x2545F4914F6CDD1Du;
  for (int round = 0; round < 4; round++) {
    mixed_steps(all, 3, slots, &seed, 4000);
    /* a block freed while the device is behind: pending, no longer the program's, not counted */
    uintptr_t pending = 0;
    assert_int_equal(cs_allocator_malloc(dev0[0]->a, 1000, 0, st.alpha1, &pending), 0);
    assert_int_equal(cs_allocator_free(dev0[0]->a, pending), 0);
    cs_stats_t fenced;
    cs_allocator_get_stats(dev0[0]->a, &fenced);
    assert_true(fenced.active[CS_STAT_ALL].current > fenced.allocation[CS_STAT_ALL].current);
    size_t n = gather(g, out);
    assert_int_equal(n, 2);
    assert_device_matches(device_in(out, n, 0), dev0, 2);
    assert_device_matches(device_in(out, n, 1), dev1, 1);
    /* the workload names every kind of site: two stacks of one, the many, no stack */
    assert_true(device_in(out, n, 0)->site_count == 5);
  }
  for (size_t i = 0; i < SLOTS; i++)
    if (slots[i].addr) assert_int_equal(cs_allocator_free(slots[i].owner->a, slots[i].addr), 0);
  size_t n = gather(g, out);
  assert_int_equal(device_in(out, n, 0)->site_count, 0);
  assert_int_equal(device_in(out, n, 1)->site_count, 0);
  cs_live_gather_destroy(g);
  free(out);
  free(slots);
  for (size_t i = 0; i < 3; i++) test_alloc_free(all[i]);
}

/* One publication over an allocator holding `blocks` live blocks of two stacks (one of the last
 * page of ids): what its holds did. */
static hold_watch_t publish_over(size_t blocks) {
  test_alloc_t *t = test_alloc_new(0, CS_FREE_SYNC);
  uintptr_t *p = calloc(blocks, sizeof *p);
  assert_non_null(p);
  for (size_t i = 0; i < blocks; i++)
    assert_int_equal(cs_allocator_malloc(t->a, 512, 0, i % 2 ? st.beta : st.many[MANY_STACKS - 1], &p[i]), 0);
  cs_live_device_t *out = calloc(CS_LIVE_MAX_DEVICES, sizeof *out);
  cs_live_gather_t *g = cs_live_gather_create();
  assert_true(out && g);
  memset(&watch, 0, sizeof watch);
  watch.watching = true;
  size_t n = gather(g, out);
  watch.watching = false;
  hold_watch_t seen = watch;
  assert_int_equal(n, 1);
  assert_int_equal(out[0].site_count, 2);
  assert_int_equal(out[0].sites[0].blocks + out[0].sites[1].blocks, blocks);
  cs_live_gather_destroy(g);
  free(out);
  for (size_t i = 0; i < blocks; i++) assert_int_equal(cs_allocator_free(t->a, p[i]), 0);
  free(p);
  test_alloc_free(t);
  return seen;
}

/* Each hold copies one page of counts at most and visits no block; 100 times the blocks take
 * as many holds. */
static void test_holds_do_not_grow_with_the_blocks(void **state) {
  (void)state;
  hold_watch_t few = publish_over(1000), many = publish_over(100000);
  assert_int_equal(many.blocks_visited, 0);
  assert_int_equal(few.blocks_visited, 0);
  assert_true(many.most_pages <= 1);
  assert_int_equal(many.holds, few.holds);
  /* the ids span three pages: each is copied, one per hold */
  assert_true(many.holds >= 3);
}

/* A fork child's stack table starts again from id 1 (device/recorder.c clears it): the names
 * kept for the parent's ids are not the child's stacks'. */
static void test_sites_named_anew_after_the_table_is_cleared(void **state) {
  (void)state;
  test_alloc_t *t = test_alloc_new(0, CS_FREE_SYNC);
  cs_live_device_t *out = calloc(CS_LIVE_MAX_DEVICES, sizeof *out);
  cs_live_gather_t *g = cs_live_gather_create();
  assert_true(out && g);
  uintptr_t p = 0;
  assert_int_equal(cs_allocator_malloc(t->a, 4096, 0, st.alpha1, &p), 0);
  assert_int_equal(gather(g, out), 1);
  assert_int_equal(out[0].site_count, 1);
  assert_true(strncmp(out[0].sites[0].name, "site_alpha ", 11) == 0);
  assert_int_equal(cs_allocator_free(t->a, p), 0);

  cs_intern_clear(test_intern);
  uint32_t gamma = intern2(site_gamma(), 0);
  assert_int_equal(gamma, st.alpha1); /* the same id, another stack */
  assert_int_equal(cs_allocator_malloc(t->a, 4096, 0, gamma, &p), 0);
  assert_int_equal(gather(g, out), 1);
  assert_int_equal(out[0].site_count, 1);
  assert_true(strncmp(out[0].sites[0].name, "site_gamma ", 11) == 0);
  assert_int_equal(cs_allocator_free(t->a, p), 0);

  cs_live_gather_destroy(g);
  free(out);
  test_alloc_free(t);
  cs_intern_clear(test_intern); /* the stacks of the other tests, as they were */
  intern_stacks();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites_match_the_walk),
      cmocka_unit_test(test_holds_do_not_grow_with_the_blocks),
      cmocka_unit_test(test_sites_named_anew_after_the_table_is_cleared),
  };
  return cmocka_run_group_tests(tests, setup_stacks, teardown_stacks);
}

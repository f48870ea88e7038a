/* SPDX-License-Identifier: Apache-2.0 */
/* Stack interning: see intern.h for the contract.
 *
 * Design
 * ------
 * - Entries: {hash, n, pcs[n]} laid out back to back in arena chunks (64 KiB, or one entry's
 *   size when larger). An entry is written once, before its id is published, and never moves
 *   or changes until clear/destroy.
 * - Ids: dense from 1. `index` maps id -> entry through fixed chunks of CS_INTERN_INDEX_CHUNK
 *   pointers; the chunk-pointer array is sized from max_stacks at create, so no index ever moves
 *   and cs_intern_get is two loads.
 * - Table: open addressing with linear probing over 64-bit slots, 0 = empty, else
 *   (hash's upper 32 bits) << 32 | id. The upper hash bits act as a tag, so a probe that meets
 *   another stack rarely has to touch that stack's entry. The load factor stays <= 1/2, so a
 *   probe always ends at an empty slot.
 *
 * Concurrency
 * -----------
 * Lookups take no lock: load the newest table (acquire), probe slots (acquire), compare entries.
 * Everything else (insert, growth, the arena, the index) happens under `lock`. An insert writes
 * the entry and its index slot, then publishes `count` (release), then the table slot (release):
 * a reader that sees the slot or the count sees the complete entry, never a half-written one.
 *
 * Growth allocates a table twice as large, copies the live slots into it, and publishes it with
 * a release store. The superseded table is not freed (it would need hazard pointers or an epoch
 * to know when no reader still probes it); it stays on the `older` list until destroy. That costs
 * at most as much again as the newest table (sizes double), and a reader still probing an old
 * table sees a consistent, if incomplete, set: when it misses, it takes the lock and probes the
 * newest table before inserting, so a stack is never inserted twice. The table is sized so that
 * max_stacks stacks fit at load 1/2; once max_stacks ids are out, new stacks get id 0.
 *
 * Allocation happens only when a new stack arrives and the arena chunk, an index chunk or the
 * table is full: amortized, never per call. Failure to allocate gives id 0. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_assert.h"
#include "common/cs_compiler.h"
#include "record/intern.h"

enum {
  CS_INTERN_INITIAL_SLOTS = 1024,       /* 8 KiB: programs with few allocation sites stay small */
  CS_INTERN_INDEX_SHIFT = 12,           /* 4096 ids (32 KiB of pointers) per index chunk */
  CS_INTERN_INDEX_CHUNK = 1 << CS_INTERN_INDEX_SHIFT,
  CS_INTERN_ARENA_BYTES = 64 * 1024,    /* entries per chunk: ~200 stacks of depth 32 */
};

/* Ids are uint32_t and the table must hold 2 x max_stacks slots; 2^26 stacks (over 16 GiB of
 * PCs at depth 32) is far beyond any sensible bound, and keeps the chunk-pointer array small. */
#define CS_INTERN_MAX_STACKS ((size_t)1 << 26)
#define CS_INTERN_TAG_MASK UINT64_C(0xffffffff00000000)

typedef struct cs_intern_entry_s {
  uint64_t hash;   /* cs_intern_hash of pcs */
  size_t n;        /* PCs; > 0 */
  uintptr_t pcs[]; /* innermost first */
} cs_intern_entry_t;
_Static_assert(sizeof(cs_intern_entry_t) == 2 * sizeof(uintptr_t), "arena sizes in words");

typedef struct cs_intern_table_s {
  struct cs_intern_table_s *older; /* superseded tables, freed at destroy (see the top) */
  size_t mask;                     /* slots - 1; slots is a power of two */
  _Atomic uint64_t slots[];        /* 0 = empty, else tag << 32 | id */
} cs_intern_table_t;

typedef struct cs_intern_chunk_s {
  struct cs_intern_chunk_s *next; /* older chunks */
  size_t used;                    /* words of data[] handed out */
  size_t size;                    /* words of data[] */
  uintptr_t data[];               /* entries; uintptr_t keeps them aligned */
} cs_intern_chunk_t;

struct cs_intern_s {
  cs_intern_table_t *_Atomic table; /* newest table; acquire-loaded by lookups */
  uint32_t serial;                  /* this table's contents: new at create and at clear */
  _Atomic uint32_t count;           /* ids handed out; release-stored after the entry is whole */
  uint32_t max_stacks;              /* ids above this are never handed out */
  pthread_mutex_t lock;             /* inserts: table growth and slots, arena, index */
  cs_intern_chunk_t *arena;         /* newest arena chunk; under lock */
  cs_intern_mirror_fn mirror;       /* under lock; NULL: none */
  void *mirror_ctx;
  size_t index_chunks;              /* length of index[] */
  cs_intern_entry_t **index[];      /* id - 1 -> entry, CS_INTERN_INDEX_CHUNK per chunk */
};

/* ---- hashing ---- */

__extension__ typedef unsigned __int128 cs_intern_u128; /* __extension__: not ISO C */

/* 64x64 -> 128 multiply, folded: every input bit reaches many output bits (wyhash's mum). */
static inline uint64_t cs_intern_mix(uint64_t a, uint64_t b) {
  const cs_intern_u128 r = (cs_intern_u128)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* Four independent lanes so the multiplies overlap: ~1 ns per 4 PCs instead of per PC. */
static inline uint64_t cs_intern_hash(const uintptr_t *pcs, size_t n) {
  const uint64_t k = UINT64_C(0x9e3779b97f4a7c15);
  uint64_t a = UINT64_C(0xa0761d6478bd642f) ^ n, b = UINT64_C(0xe7037ed1a0b428db);
  uint64_t c = UINT64_C(0x8ebc6af09c88c6e3), d = UINT64_C(0x589965cc75374cc3);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a = cs_intern_mix(a ^ pcs[i], k);
    b = cs_intern_mix(b ^ pcs[i + 1], k);
    c = cs_intern_mix(c ^ pcs[i + 2], k);
    d = cs_intern_mix(d ^ pcs[i + 3], k);
  }
  for (; i < n; i++) a = cs_intern_mix(a ^ pcs[i], k);
  return cs_intern_mix(a ^ cs_intern_mix(b, c ^ k), d ^ UINT64_C(0x1d8e4e27c47d124f));
}

/* ---- id -> entry ---- */

static inline const cs_intern_entry_t *cs_intern_entry(const cs_intern_t *t, uint32_t id) {
  const uint32_t i = id - 1;
  return t->index[i >> CS_INTERN_INDEX_SHIFT][i & (CS_INTERN_INDEX_CHUNK - 1)];
}

/* ---- the thread's last stack ----
 *
 * Allocations come from a few call sites, and a thread mostly asks for the stack it asked for last:
 * its id is kept per thread, and a stack equal to that id's entry (compared PC by PC) is answered
 * without the hash and the table's probe, which cost about as much again as the comparison. One
 * word, serial << 32 | id, so that a signal handler interning a stack between the read and the use
 * cannot pair one table's serial with another's id. The serial names a table's contents: every
 * create and every clear takes a new one, so an id from a cleared or destroyed table (or from
 * another table) is never looked up in this one. */
static atomic_uint cs_intern_serials;
static CS_TLS _Atomic uint64_t cs_intern_last;

static uint32_t cs_intern_new_serial(void) {
  uint32_t serial;
  do serial = atomic_fetch_add_explicit(&cs_intern_serials, 1, memory_order_relaxed) + 1;
  while (serial == 0); /* 0 is no thread's last table */
  return serial;
}

#ifdef CS_TESTING
static CS_TLS unsigned long cs_intern_last_hits;
unsigned long cs_intern_test_last_hits(void) { return cs_intern_last_hits; }
#define CS_INTERN_COUNT_LAST_HIT() (cs_intern_last_hits++)
#else
#define CS_INTERN_COUNT_LAST_HIT() ((void)0)
#endif

/* ---- lookup (no lock) ---- */

static inline uint32_t cs_intern_find(const cs_intern_t *t, const cs_intern_table_t *tab,
                                      uint64_t h, const uintptr_t *pcs, size_t n) {
  const uint64_t tag = h & CS_INTERN_TAG_MASK;
  for (size_t i = (size_t)h & tab->mask;; i = (i + 1) & tab->mask) {
    const uint64_t s = atomic_load_explicit(&tab->slots[i], memory_order_acquire);
    if (s == 0) return 0;
    if ((s & CS_INTERN_TAG_MASK) != tag) continue;
    const uint32_t id = (uint32_t)s;
    const cs_intern_entry_t *e = cs_intern_entry(t, id);
    if (e->n == n && memcmp(e->pcs, pcs, n * sizeof *pcs) == 0) return id;
  }
}

/* ---- insert (under lock) ---- */

static cs_intern_table_t *cs_intern_table_new(size_t slots) {
  cs_intern_table_t *tab = calloc(1, sizeof *tab + slots * sizeof tab->slots[0]);
  if (!tab) return NULL;
  tab->mask = slots - 1;
  return tab; /* calloc's zeros are empty slots */
}

static void cs_intern_place(cs_intern_table_t *tab, uint64_t h, uint32_t id, memory_order mo) {
  size_t i = (size_t)h & tab->mask;
  while (atomic_load_explicit(&tab->slots[i], memory_order_relaxed) != 0) i = (i + 1) & tab->mask;
  atomic_store_explicit(&tab->slots[i], (h & CS_INTERN_TAG_MASK) | id, mo);
}

static cs_intern_table_t *cs_intern_grow(cs_intern_t *t, cs_intern_table_t *old) {
  cs_intern_table_t *tab = cs_intern_table_new((old->mask + 1) * 2);
  if (!tab) return NULL;
  for (size_t i = 0; i <= old->mask; i++) {
    const uint64_t s = atomic_load_explicit(&old->slots[i], memory_order_relaxed);
    if (s == 0) continue;
    /* relaxed: the release store of t->table below publishes the whole copy */
    cs_intern_place(tab, cs_intern_entry(t, (uint32_t)s)->hash, (uint32_t)s,
                    memory_order_relaxed);
  }
  tab->older = old;
  atomic_store_explicit(&t->table, tab, memory_order_release);
  return tab;
}

static cs_intern_entry_t *cs_intern_arena_alloc(cs_intern_t *t, size_t n) {
  if (n > (SIZE_MAX - sizeof(cs_intern_chunk_t)) / sizeof(uintptr_t) - 2) return NULL; /* absurd */
  const size_t words = sizeof(cs_intern_entry_t) / sizeof(uintptr_t) + n;
  cs_intern_chunk_t *c = t->arena;
  if (!c || c->size - c->used < words) {
    size_t size = (CS_INTERN_ARENA_BYTES - sizeof *c) / sizeof(uintptr_t);
    if (size < words) size = words;
    c = malloc(sizeof *c + size * sizeof(uintptr_t));
    if (!c) return NULL;
    c->next = t->arena;
    c->used = 0;
    c->size = size;
    t->arena = c;
  }
  cs_intern_entry_t *e = (cs_intern_entry_t *)(void *)&c->data[c->used];
  c->used += words;
  return e;
}

/* A stack the lock-free probe did not find. NOINLINE keeps the hit path small. */
static CS_NOINLINE uint32_t cs_intern_insert(cs_intern_t *t, uint64_t h, const uintptr_t *pcs,
                                             size_t n) {
  uint32_t id = 0;
  pthread_mutex_lock(&t->lock);
  /* Only inserters (under this lock) change t->table, so relaxed sees the newest. */
  cs_intern_table_t *tab = atomic_load_explicit(&t->table, memory_order_relaxed);
  id = cs_intern_find(t, tab, h, pcs, n); /* another thread may have inserted it meanwhile */
  if (id != 0) goto out;

  const uint32_t count = atomic_load_explicit(&t->count, memory_order_relaxed);
  if (count >= t->max_stacks) goto out;
  if (((size_t)count + 1) * 2 > tab->mask + 1) {
    tab = cs_intern_grow(t, tab);
    if (!tab) goto out;
  }

  const uint32_t new_id = count + 1;
  const size_t ichunk = (size_t)(new_id - 1) >> CS_INTERN_INDEX_SHIFT;
  cs_assert(ichunk < t->index_chunks);
  if (!t->index[ichunk]) {
    t->index[ichunk] = calloc(CS_INTERN_INDEX_CHUNK, sizeof(cs_intern_entry_t *));
    if (!t->index[ichunk]) goto out;
  }
  cs_intern_entry_t *e = cs_intern_arena_alloc(t, n);
  if (!e) goto out;
  e->hash = h;
  e->n = n;
  memcpy(e->pcs, pcs, n * sizeof *pcs);
  t->index[ichunk][(new_id - 1) & (CS_INTERN_INDEX_CHUNK - 1)] = e;
  if (t->mirror) t->mirror(t->mirror_ctx, new_id, pcs, n);

  /* count first, so cs_intern_get(id) works as soon as any thread can hold the id */
  atomic_store_explicit(&t->count, new_id, memory_order_release);
  cs_intern_place(tab, h, new_id, memory_order_release);
  id = new_id;
out:
  pthread_mutex_unlock(&t->lock);
  return id;
}

/* ---- API ---- */

uint32_t cs_intern_stack(cs_intern_t *t, const uintptr_t *pcs, size_t n) {
  if (CS_UNLIKELY(n == 0 || t == NULL)) return 0;
  /* This thread had the id from this table (so its entry is whole and stays where it is until a
   * clear, which changes the serial). */
  const uint64_t last = atomic_load_explicit(&cs_intern_last, memory_order_relaxed);
  if (CS_LIKELY((uint32_t)(last >> 32) == t->serial)) {
    const uint32_t last_id = (uint32_t)last;
    const cs_intern_entry_t *e = cs_intern_entry(t, last_id);
    if (CS_LIKELY(e->n == n && memcmp(e->pcs, pcs, n * sizeof *pcs) == 0)) {
      CS_INTERN_COUNT_LAST_HIT();
      return last_id;
    }
  }
  const uint64_t h = cs_intern_hash(pcs, n);
  const cs_intern_table_t *tab = atomic_load_explicit(&t->table, memory_order_acquire);
  uint32_t id = cs_intern_find(t, tab, h, pcs, n);
  if (CS_UNLIKELY(id == 0)) id = cs_intern_insert(t, h, pcs, n);
  if (CS_LIKELY(id != 0))
    atomic_store_explicit(&cs_intern_last, (uint64_t)t->serial << 32 | id, memory_order_relaxed);
  return id;
}

const uintptr_t *cs_intern_get(const cs_intern_t *t, uint32_t id, size_t *n) {
  if (n) *n = 0;
  if (!t || id == 0 || id > atomic_load_explicit(&t->count, memory_order_acquire)) return NULL;
  const cs_intern_entry_t *e = cs_intern_entry(t, id);
  if (n) *n = e->n;
  return e->pcs;
}

void cs_intern_set_mirror(cs_intern_t *t, cs_intern_mirror_fn fn, void *ctx) {
  if (!t) return;
  /* the stacks interned before it, in id order (a fork child's, before it made its recording file) */
  const uint32_t count = atomic_load_explicit(&t->count, memory_order_acquire);
  for (uint32_t id = 1; fn && id <= count; id++) {
    const cs_intern_entry_t *e = cs_intern_entry(t, id);
    fn(ctx, id, e->pcs, e->n);
  }
  t->mirror = fn;
  t->mirror_ctx = ctx;
}

uint32_t cs_intern_serial(const cs_intern_t *t) { return t ? t->serial : 0; }

uint32_t cs_intern_count(const cs_intern_t *t) {
  return t ? atomic_load_explicit(&t->count, memory_order_acquire) : 0;
}

static size_t cs_intern_pow2_at_least(size_t x) {
  size_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

cs_intern_t *cs_intern_create(size_t max_stacks) {
  if (max_stacks > CS_INTERN_MAX_STACKS) max_stacks = CS_INTERN_MAX_STACKS;
  const size_t index_chunks = (max_stacks + CS_INTERN_INDEX_CHUNK - 1) / CS_INTERN_INDEX_CHUNK;
  cs_intern_t *t = calloc(1, sizeof *t + index_chunks * sizeof t->index[0]);
  if (!t) return NULL;
  t->max_stacks = (uint32_t)max_stacks;
  t->index_chunks = index_chunks;
  size_t slots = cs_intern_pow2_at_least(max_stacks * 2);
  if (slots > CS_INTERN_INITIAL_SLOTS) slots = CS_INTERN_INITIAL_SLOTS;
  cs_intern_table_t *tab = cs_intern_table_new(slots);
  if (!tab || pthread_mutex_init(&t->lock, NULL) != 0) {
    free(tab);
    free(t);
    return NULL;
  }
  atomic_init(&t->table, tab);
  atomic_init(&t->count, 0);
  t->serial = cs_intern_new_serial();
  return t;
}

static void cs_intern_free_storage(cs_intern_t *t, cs_intern_table_t *keep) {
  cs_intern_table_t *tab = atomic_load_explicit(&t->table, memory_order_relaxed);
  while (tab) {
    cs_intern_table_t *older = tab->older;
    if (tab != keep) free(tab);
    tab = older;
  }
  for (cs_intern_chunk_t *c = t->arena, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  t->arena = NULL;
}

void cs_intern_destroy(cs_intern_t *t) {
  if (!t) return;
  cs_intern_free_storage(t, NULL);
  for (size_t i = 0; i < t->index_chunks; i++) free(t->index[i]);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

void cs_intern_clear(cs_intern_t *t) {
  if (!t) return;
  /* After fork another (now gone) thread of the parent may have held the lock: make it usable,
   * as the other modules' postfork handlers do. Nothing runs concurrently here (intern.h). */
  pthread_mutex_init(&t->lock, NULL);
  /* Keep the newest (largest) table, emptied; the index chunks are simply overwritten later. */
  cs_intern_table_t *tab = atomic_load_explicit(&t->table, memory_order_relaxed);
  cs_intern_free_storage(t, tab);
  tab->older = NULL;
  for (size_t i = 0; i <= tab->mask; i++)
    atomic_store_explicit(&tab->slots[i], 0, memory_order_relaxed);
  atomic_store_explicit(&t->count, 0, memory_order_release);
  t->serial = cs_intern_new_serial(); /* ids kept by threads name the old contents */
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Fragmentation on real workloads: replay the allocations and frees of PyTorch memory snapshots
 * through cudasnap's allocator over the simulated device, and compare the memory it reserves with
 * what PyTorch's own allocator reserved for the same requests.
 *
 *   bench_frag SNAPSHOT...
 *
 * For each device trace of each snapshot (read with cs_read_snapshot_file; files without
 * device_traces are skipped with a note):
 *   - the blocks live at the start of the trace are allocated first, in address order: the blocks
 *     active in the final state that no `alloc` of the trace produced, and the blocks the trace
 *     frees before (or without) allocating them; their sizes are the requested sizes of the
 *     final state or of the free;
 *   - then every `alloc` (its requested `size`, its stream) and every `free_requested` (or
 *     `free_completed`, in traces without free_requested), paired by address;
 *   - on a device as large as needed (1 TiB, so nothing is ever released under pressure), for the
 *     default (IPC-safe) policy and for split_large; and once more on a device exactly as large as
 *     PyTorch's peak reserved, counting the requests that would then have failed.
 * PyTorch's side comes from the same trace: reserved = the segments present before the trace
 * (final segments - segment_alloc + segment_free) plus the running sum of segment_alloc -
 * segment_free; allocated = the live requests rounded as PyTorch rounds them (512 B), which is a
 * lower bound: a block PyTorch did not split is larger than that.
 *
 * BENCH lines per trace (sizes in MiB): the peak of the requested bytes (the workload's own,
 * the same for every allocator), then for pytorch, default and split_large the peak allocated,
 * the peak reserved, reserved/allocated and reserved/requested, and the failed requests at
 * PyTorch's peak. Notes go to stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator/allocator.h"
#include "allocator/sim_backend.h"
#include "common/cs_error.h"
#include "reader/reader.h"

#define MiB (1024.0 * 1024.0)

typedef enum frag_kind_e { FRAG_ALLOC, FRAG_FREE, FRAG_SEGMENT_ALLOC, FRAG_SEGMENT_FREE, FRAG_OTHER } frag_kind_t;

typedef struct frag_event_s {
  frag_kind_t kind;
  uint64_t addr;
  uint64_t size;
  uint64_t stream;
} frag_event_t;

typedef struct frag_block_s {
  uint64_t addr, size, stream;
} frag_block_t;

typedef struct frag_trace_s {
  frag_event_t *events;
  size_t count;
  frag_block_t *start;      /* live at the start, by address */
  size_t start_count;
  uint64_t reserved_before; /* PyTorch's segments present before the trace */
} frag_trace_t;

/* ---- an address map (open addressing; keys are 512-aligned device addresses, never 0 or 1) ---- */

#define FRAG_TOMB UINT64_C(1)

typedef struct frag_map_s {
  uint64_t *keys, *values;
  size_t mask;
} frag_map_t;

static void frag_oom(void) {
  fprintf(stderr, "bench: out of host memory\n");
  exit(1);
}

/* Room for `n` insertions over its lifetime (tombstones are never reused). */
static void frag_map_init(frag_map_t *m, size_t n) {
  size_t cap = 64;
  while (cap < 4 * n) cap *= 2;
  m->keys = calloc(cap, sizeof *m->keys);
  m->values = calloc(cap, sizeof *m->values);
  if (!m->keys || !m->values) frag_oom();
  m->mask = cap - 1;
}

static void frag_map_free(frag_map_t *m) {
  free(m->keys);
  free(m->values);
}

static size_t frag_map_slot(const frag_map_t *m, uint64_t key) {
  size_t i = (size_t)((key >> 9) * UINT64_C(0x9E3779B97F4A7C15) >> 20) & m->mask;
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & m->mask;
  return i;
}

static bool frag_map_has(const frag_map_t *m, uint64_t key) { return m->keys[frag_map_slot(m, key)] == key; }

static void frag_map_put(frag_map_t *m, uint64_t key, uint64_t value) {
  size_t i = frag_map_slot(m, key);
  m->keys[i] = key;
  m->values[i] = value;
}

/* Removes key; returns its value, or 0 when absent. */
static uint64_t frag_map_take(frag_map_t *m, uint64_t key) {
  size_t i = frag_map_slot(m, key);
  if (m->keys[i] != key) return 0;
  m->keys[i] = FRAG_TOMB;
  return m->values[i];
}

/* ---- reading ---- */

static uint64_t frag_int(const cs_doc_t *doc, cs_val_t obj, const char *key) {
  int64_t v = 0;
  if (!cs_doc_int(doc, cs_doc_get(doc, obj, key), &v) || v < 0) return 0;
  return (uint64_t)v;
}

static const char *frag_str(const cs_doc_t *doc, cs_val_t obj, const char *key) {
  const char *s = cs_doc_str(doc, cs_doc_get(doc, obj, key), NULL);
  return s ? s : "";
}

static int frag_cmp_block(const void *x, const void *y) {
  const frag_block_t *a = x, *b = y;
  return (a->addr > b->addr) - (a->addr < b->addr);
}

static void frag_add_start(frag_trace_t *t, size_t *cap, uint64_t addr, uint64_t size, uint64_t stream) {
  if (t->start_count == *cap) {
    *cap = *cap ? *cap * 2 : 256;
    t->start = realloc(t->start, *cap * sizeof *t->start);
    if (!t->start) frag_oom();
  }
  t->start[t->start_count++] = (frag_block_t){addr, size ? size : 1, stream};
}

/* The trace of `device`, its start state and PyTorch's reserved bytes before it. */
static bool frag_load(const cs_doc_t *doc, int device, cs_val_t trace, frag_trace_t *t) {
  memset(t, 0, sizeof *t);
  size_t n = cs_doc_len(doc, trace);
  const cs_val_t *entries = cs_doc_items(doc, trace);
  if (n == 0) return false;
  t->events = calloc(n, sizeof *t->events);
  if (!t->events) frag_oom();
  bool has_free_requested = false;
  for (size_t i = 0; i < n; i++)
    if (strcmp(frag_str(doc, entries[i], "action"), "free_requested") == 0) has_free_requested = true;
  const char *free_action = has_free_requested ? "free_requested" : "free_completed";
  uint64_t segment_alloc = 0, segment_free = 0;
  for (size_t i = 0; i < n; i++) {
    cs_val_t e = entries[i];
    const char *action = frag_str(doc, e, "action");
    frag_event_t *ev = &t->events[t->count++];
    *ev = (frag_event_t){FRAG_OTHER, frag_int(doc, e, "addr"), frag_int(doc, e, "size"), frag_int(doc, e, "stream")};
    if (strcmp(action, "alloc") == 0) ev->kind = FRAG_ALLOC;
    else if (strcmp(action, free_action) == 0) ev->kind = FRAG_FREE;
    else if (strcmp(action, "segment_alloc") == 0) ev->kind = FRAG_SEGMENT_ALLOC, segment_alloc += ev->size;
    else if (strcmp(action, "segment_free") == 0) ev->kind = FRAG_SEGMENT_FREE, segment_free += ev->size;
  }

  /* Walk the trace once: which addresses it allocates, and which it frees while not live. */
  frag_map_t allocated, live;
  frag_map_init(&allocated, t->count);
  frag_map_init(&live, t->count);
  size_t cap = 0;
  for (size_t i = 0; i < t->count; i++) {
    const frag_event_t *ev = &t->events[i];
    if (ev->kind == FRAG_ALLOC) {
      frag_map_put(&allocated, ev->addr, 1);
      frag_map_put(&live, ev->addr, 1);
    } else if (ev->kind == FRAG_FREE && !frag_map_take(&live, ev->addr)) {
      frag_add_start(t, &cap, ev->addr, ev->size, ev->stream); /* allocated before the trace */
    }
  }
  uint64_t final_reserved = 0;
  cs_val_t segments = cs_doc_get(doc, cs_doc_root(doc), "segments");
  for (size_t i = 0; i < cs_doc_len(doc, segments); i++) {
    cs_val_t seg = cs_doc_at(doc, segments, i);
    if ((int)frag_int(doc, seg, "device") != device) continue;
    final_reserved += frag_int(doc, seg, "total_size");
    cs_val_t blocks = cs_doc_get(doc, seg, "blocks");
    for (size_t k = 0; k < cs_doc_len(doc, blocks); k++) {
      cs_val_t b = cs_doc_at(doc, blocks, k);
      if (strncmp(frag_str(doc, b, "state"), "active", 6) != 0) continue;
      uint64_t addr = frag_int(doc, b, "address");
      if (frag_map_has(&allocated, addr)) continue;
      uint64_t requested = frag_int(doc, b, "requested_size");
      frag_add_start(t, &cap, addr, requested ? requested : frag_int(doc, b, "size"), frag_int(doc, seg, "stream"));
    }
  }
  frag_map_free(&allocated);
  frag_map_free(&live);
  qsort(t->start, t->start_count, sizeof *t->start, frag_cmp_block);
  t->reserved_before = final_reserved + segment_free - segment_alloc;
  return true;
}

/* ---- PyTorch's side, from the trace ---- */

typedef struct frag_peaks_s {
  uint64_t requested, allocated, reserved;
  uint64_t failed; /* requests refused (bounded device only) */
} frag_peaks_t;

static uint64_t frag_round(uint64_t size) { return size < 512 ? 512 : (size + 511) / 512 * 512; }

static frag_peaks_t frag_pytorch(const frag_trace_t *t) {
  frag_peaks_t p = {0, 0, t->reserved_before, 0};
  uint64_t requested = 0, allocated = 0, reserved = t->reserved_before;
  frag_map_t live;
  frag_map_init(&live, t->count + t->start_count);
  for (size_t i = 0; i < t->start_count; i++) {
    frag_map_put(&live, t->start[i].addr, t->start[i].size);
    requested += t->start[i].size;
    allocated += frag_round(t->start[i].size);
  }
  p.requested = requested;
  p.allocated = allocated;
  for (size_t i = 0; i < t->count; i++) {
    const frag_event_t *ev = &t->events[i];
    switch (ev->kind) {
    case FRAG_ALLOC:
      frag_map_put(&live, ev->addr, ev->size);
      requested += ev->size;
      allocated += frag_round(ev->size);
      break;
    case FRAG_FREE: {
      uint64_t size = frag_map_take(&live, ev->addr);
      requested -= size;
      allocated -= size ? frag_round(size) : 0;
      break;
    }
    case FRAG_SEGMENT_ALLOC: reserved += ev->size; break;
    case FRAG_SEGMENT_FREE: reserved -= ev->size; break;
    case FRAG_OTHER: break;
    }
    if (requested > p.requested) p.requested = requested;
    if (allocated > p.allocated) p.allocated = allocated;
    if (reserved > p.reserved) p.reserved = reserved;
  }
  frag_map_free(&live);
  return p;
}

/* ---- cudasnap's side: the replay ---- */

static frag_peaks_t frag_replay(const frag_trace_t *t, bool split_large, size_t capacity) {
  cs_alloc_conf_t conf;
  cs_alloc_conf_init(&conf);
  conf.split_large = split_large;
  cs_sim_device_t dev;
  cs_sim_device_init(&dev, capacity);
  cs_backend_t backend = cs_sim_backend(&dev);
  cs_allocator_t *a = cs_allocator_create(&conf, &backend, NULL);
  if (!a) frag_oom();
  frag_map_t live;
  frag_map_init(&live, t->count + t->start_count);
  frag_peaks_t p = {0, 0, 0, 0};
  for (size_t i = 0; i < t->start_count + t->count; i++) {
    const frag_block_t *b = i < t->start_count ? &t->start[i] : NULL;
    const frag_event_t *ev = b ? NULL : &t->events[i - t->start_count];
    if (b || ev->kind == FRAG_ALLOC) {
      uint64_t addr = b ? b->addr : ev->addr;
      uintptr_t got = 0;
      int rc = cs_allocator_malloc(a, b ? b->size : ev->size, b ? b->stream : ev->stream, 0, &got);
      if (rc == -CS_ENOMEM) p.failed++;
      else if (rc != 0) {
        fprintf(stderr, "bench: replay allocation failed: %s\n", cs_strerror(rc));
        exit(1);
      }
      if (rc == 0) {
        uint64_t stale = frag_map_take(&live, addr); /* an inconsistent trace: drop the old one */
        if (stale) (void)cs_allocator_free(a, stale);
        frag_map_put(&live, addr, got);
      }
    } else if (ev->kind == FRAG_FREE) {
      uint64_t got = frag_map_take(&live, ev->addr);
      if (got && cs_allocator_free(a, got) != 0) {
        fprintf(stderr, "bench: replay free failed\n");
        exit(1);
      }
    }
  }
  cs_stats_t st;
  cs_allocator_get_stats(a, &st);
  p.requested = (uint64_t)st.requested_bytes[CS_STAT_ALL].peak;
  p.allocated = (uint64_t)st.allocated_bytes[CS_STAT_ALL].peak;
  p.reserved = (uint64_t)st.reserved_bytes[CS_STAT_ALL].peak;
  cs_allocator_destroy(a);
  frag_map_free(&live);
  return p;
}

/* ---- report ---- */

/* "cs336-kkaitlyn111_memory_ctx128_fullstep.pickle" -> "cs336-kkaitlyn111" */
static void frag_short_name(const char *path, int device, int devices, char *out, size_t len) {
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t n = strcspn(base, "_.");
  if (n == 0) n = strlen(base);
  int w = devices > 1 ? snprintf(out, len, "%.*s-dev%d", (int)n, base, device) : snprintf(out, len, "%.*s", (int)n, base);
  (void)w;
  for (char *c = out; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-')) *c = '-';
}

static void frag_print(const char *trace, const char *who, const frag_peaks_t *p, uint64_t requested) {
  printf("BENCH frag_%s_%s_allocated_peak %.1f MiB\n", trace, who, (double)p->allocated / MiB);
  printf("BENCH frag_%s_%s_reserved_peak %.1f MiB\n", trace, who, (double)p->reserved / MiB);
  printf("BENCH frag_%s_%s_reserved_over_allocated %.3f ratio\n", trace, who,
         p->allocated ? (double)p->reserved / (double)p->allocated : 0.0);
  printf("BENCH frag_%s_%s_reserved_over_requested %.3f ratio\n", trace, who,
         requested ? (double)p->reserved / (double)requested : 0.0);
}

static int frag_file(const char *path) {
  cs_read_error_t err;
  cs_snapshot_format_t format;
  cs_doc_t *doc = cs_read_snapshot_file(path, &format, NULL, &err);
  if (!doc) {
    fprintf(stderr, "bench: %s: %s (offset %zu)\n", path, err.message, err.offset);
    return 1;
  }
  cs_val_t traces = cs_doc_get(doc, cs_doc_root(doc), "device_traces");
  if (!cs_val_is_dict(cs_doc_root(doc)) || !cs_val_is_array(traces)) {
    fprintf(stderr, "bench: %s: no device_traces (a segments-only snapshot): skipped\n", path);
    cs_doc_free(doc);
    return 0;
  }
  int devices = (int)cs_doc_len(doc, traces);
  for (int d = 0; d < devices; d++) {
    frag_trace_t t;
    if (!frag_load(doc, d, cs_doc_at(doc, traces, (size_t)d), &t)) continue;
    char name[128];
    frag_short_name(path, d, devices, name, sizeof name);
    frag_peaks_t torch = frag_pytorch(&t);
    const size_t unbounded = (size_t)1 << 40;
    frag_peaks_t dflt = frag_replay(&t, false, unbounded);
    frag_peaks_t split = frag_replay(&t, true, unbounded);
    frag_peaks_t dflt_at = frag_replay(&t, false, torch.reserved);
    frag_peaks_t split_at = frag_replay(&t, true, torch.reserved);
    if (dflt.requested != torch.requested || split.requested != torch.requested)
      fprintf(stderr, "bench: %s: requested peaks differ: trace %" PRIu64 ", replays %" PRIu64 " and %" PRIu64 "\n",
              name, torch.requested, dflt.requested, split.requested);
    uint64_t start_bytes = 0;
    for (size_t i = 0; i < t.start_count; i++) start_bytes += t.start[i].size;
    fprintf(stderr, "bench: %s: %zu events, %zu blocks (%.1f MiB) live at the start, %.1f MiB reserved by PyTorch before the trace\n",
            name, t.count, t.start_count, (double)start_bytes / MiB, (double)t.reserved_before / MiB);
    printf("BENCH frag_%s_requested_peak %.1f MiB\n", name, (double)torch.requested / MiB);
    frag_print(name, "pytorch", &torch, torch.requested);
    frag_print(name, "default", &dflt, torch.requested);
    frag_print(name, "split_large", &split, torch.requested);
    printf("BENCH frag_%s_default_failed_at_pytorch_peak %" PRIu64 " requests\n", name, dflt_at.failed);
    printf("BENCH frag_%s_split_large_failed_at_pytorch_peak %" PRIu64 " requests\n", name, split_at.failed);
    free(t.events);
    free(t.start);
  }
  cs_doc_free(doc);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SNAPSHOT...\n", argv[0]);
    return 2;
  }
  int rc = 0;
  for (int i = 1; i < argc; i++) rc |= frag_file(argv[i]);
  return rc;
}

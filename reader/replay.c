/* SPDX-License-Identifier: Apache-2.0 */
/* The Allocator State History replay (contract in reader/replay.h). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "common/cs_error.h"
#include "reader/replay.h"

typedef struct cs_replay_seg_s {
  double addr, size;
  cs_replay_stream_t stream;
} cs_replay_seg_t;

/* One event of the annotated trace (pairs collapsed), with its block key. */
typedef struct cs_replay_ev_s {
  cs_replay_kind_t kind;
  double addr, size;
  cs_replay_stream_t stream;
  size_t raw;       /* index in the raw trace (the free_requested of a collapsed pair) */
  size_t raw2;      /* the free_completed of a collapsed pair, else raw */
  size_t key;       /* block key for block events */
} cs_replay_ev_t;

typedef struct cs_replay_s {
  /* l_segments, in the viewer's list order */
  cs_replay_seg_t *l;
  size_t nl, capl;
  /* segments_by_addr: sorted by (address, size); points at l when l is already in that order */
  const cs_replay_seg_t *v;
  cs_replay_seg_t *vbuf;
  size_t nv;
  bool overlap;
  /* live blocks: distinct addresses, a flag per address, and a Fenwick tree of the flags */
  double *keys;
  size_t nkeys;
  uint8_t *live;
  int32_t *bit; /* 1-based, nkeys + 1 */
  cs_replay_result_t *out;
  uint64_t work; /* elements touched by whole-list passes (views, re-sorts, full re-checks) */
} cs_replay_t;

/* Whole-list passes cost O(segments) per segment event (the viewer's own algorithm); 2e7 element
 * visits is a fraction of a second, and far above what real traces need (hundreds of segments times
 * thousands of segment events); crafted traces that keep thousands of segments unsorted or
 * overlapping exceed it. */
#ifndef CS_REPLAY_WORK_BUDGET /* the fuzz build, 40 times slower under sanitizers, sets less */
#define CS_REPLAY_WORK_BUDGET ((uint64_t)20 * 1000 * 1000)
#endif

/* ---------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------- */

static bool cs_replay_same_stream(cs_replay_stream_t a, cs_replay_stream_t b) {
  if (a.is_number != b.is_number) return false;
  return !a.is_number || a.v == b.v;
}

/* An address for messages: hex when it is a plain non-negative integer. */
static void cs_replay_fmt_addr(char *buf, size_t n, double a) {
  if (a >= 0 && a < 18446744073709551616.0 && a == floor(a))
    snprintf(buf, n, "0x%" PRIx64, (uint64_t)a);
  else
    snprintf(buf, n, "%.17g", a);
}

CS_PRINTF(3, 4) static void cs_replay_fail(cs_replay_t *r, size_t event, const char *fmt, ...) {
  r->out->ok = false;
  r->out->event = event;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->out->message, sizeof r->out->message, fmt, ap);
  va_end(ap);
}

static int cs_replay_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* First key >= a. */
static size_t cs_replay_lower_bound(const cs_replay_t *r, double a) {
  size_t lo = 0, hi = r->nkeys;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->keys[mid] < a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void cs_replay_bit_add(cs_replay_t *r, size_t i, int32_t d) {
  for (size_t j = i + 1; j <= r->nkeys; j += j & (~j + 1)) r->bit[j] += d;
}

/* Live blocks among keys [0, i). */
static int32_t cs_replay_bit_prefix(const cs_replay_t *r, size_t i) {
  int32_t s = 0;
  for (size_t j = i; j > 0; j -= j & (~j + 1)) s += r->bit[j];
  return s;
}

/* The smallest key index whose prefix count (inclusive) reaches k (k >= 1), or nkeys. */
static size_t cs_replay_bit_find(const cs_replay_t *r, int32_t k) {
  size_t pos = 0, step = 1;
  while (step * 2 <= r->nkeys) step *= 2;
  for (; step > 0; step /= 2) {
    if (pos + step <= r->nkeys && r->bit[pos + step] < k) {
      pos += step;
      k -= r->bit[pos];
    }
  }
  return pos; /* 0-based index of the k-th live key */
}

static void cs_replay_set_live(cs_replay_t *r, size_t k, bool on) {
  if ((r->live[k] != 0) == on) return;
  r->live[k] = on ? 1 : 0;
  cs_replay_bit_add(r, k, on ? 1 : -1);
}

/* ---------------------------------------------------------------------------------------------
 * Segments: the list, the sorted view, and the viewer's find_segment
 * ------------------------------------------------------------------------------------------- */

static int cs_replay_cmp_seg(const void *a, const void *b) {
  const cs_replay_seg_t *x = a, *y = b;
  if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
  if (x->size != y->size) return x->size < y->size ? -1 : 1;
  return 0;
}

/* Rebuilds segments_by_addr after the list changed, and whether any two segments overlap. */
static int cs_replay_view(cs_replay_t *r) {
  r->work += r->nl; /* the order check and the overlap scan below */
  bool sorted = true;
  for (size_t i = 1; i < r->nl && sorted; i++)
    if (cs_replay_cmp_seg(&r->l[i - 1], &r->l[i]) > 0) sorted = false;
  if (sorted) {
    r->v = r->l;
  } else {
    r->work += r->nl * (uint64_t)(1 + log2((double)r->nl + 1)); /* a qsort */
    free(r->vbuf);
    r->vbuf = malloc((r->nl ? r->nl : 1) * sizeof *r->vbuf);
    if (r->vbuf == NULL) return -CS_EHOSTMEM;
    memcpy(r->vbuf, r->l, r->nl * sizeof *r->vbuf);
    qsort(r->vbuf, r->nl, sizeof *r->vbuf, cs_replay_cmp_seg); /* equal (addr, size) are interchangeable */
    r->v = r->vbuf;
  }
  r->nv = r->nl;
  r->overlap = false;
  double max_end = -INFINITY;
  for (size_t i = 0; i < r->nv; i++) {
    if (i > 0 && r->v[i].addr < max_end) r->overlap = true;
    double end = r->v[i].addr + r->v[i].size;
    if (end > max_end) max_end = end;
  }
  return 0;
}

/* MemoryViz.js find_segment: a binary search that is a containment test only when segments do not
 * overlap. */
static bool cs_replay_find_segment(const cs_replay_t *r, double addr) {
  ptrdiff_t left = 0, right = (ptrdiff_t)r->nv - 1;
  while (left <= right) {
    ptrdiff_t mid = (left + right) / 2;
    const cs_replay_seg_t *s = &r->v[mid];
    double end = s->addr + s->size;
    if (addr < s->addr)
      right = mid - 1;
    else if (addr >= end)
      left = mid + 1;
    else
      return true;
  }
  return false;
}

static int cs_replay_insert(cs_replay_t *r, size_t at, cs_replay_seg_t s) {
  if (r->nl == r->capl) {
    size_t ncap = r->capl ? r->capl * 2 : 16;
    cs_replay_seg_t *nl = realloc(r->l, ncap * sizeof *nl);
    if (nl == NULL) return -CS_EHOSTMEM;
    r->l = nl;
    r->capl = ncap;
    r->v = NULL; /* stale until cs_replay_view */
  }
  memmove(&r->l[at + 1], &r->l[at], (r->nl - at) * sizeof *r->l);
  r->l[at] = s;
  r->nl++;
  return 0;
}

static void cs_replay_remove(cs_replay_t *r, size_t at) {
  memmove(&r->l[at], &r->l[at + 1], (r->nl - at - 1) * sizeof *r->l);
  r->nl--;
}

/* ---------------------------------------------------------------------------------------------
 * Placement checks
 * ------------------------------------------------------------------------------------------- */

/* First live block with address in [lo, hi) that find_segment misses; SIZE_MAX if none. */
static size_t cs_replay_check_range(const cs_replay_t *r, double lo, double hi) {
  if (!(lo < hi)) return SIZE_MAX;
  size_t i0 = cs_replay_lower_bound(r, lo), i1 = cs_replay_lower_bound(r, hi);
  int32_t before = cs_replay_bit_prefix(r, i0), upto = cs_replay_bit_prefix(r, i1);
  for (int32_t k = before + 1; k <= upto; k++) {
    size_t idx = cs_replay_bit_find(r, k);
    if (!cs_replay_find_segment(r, r->keys[idx])) return idx;
  }
  return SIZE_MAX;
}

static size_t cs_replay_check_all(cs_replay_t *r) {
  r->work += r->nkeys;
  for (size_t k = 0; k < r->nkeys; k++)
    if (r->live[k] && !cs_replay_find_segment(r, r->keys[k])) return k;
  return SIZE_MAX;
}

static void cs_replay_fail_block(cs_replay_t *r, size_t event, size_t key, const char *when) {
  char a[32];
  cs_replay_fmt_addr(a, sizeof a, r->keys[key]);
  cs_replay_fail(r, event, "%s, block %s lies in no segment: the viewer throws ('null.occupied')", when, a);
}

/* ---------------------------------------------------------------------------------------------
 * Undoing one event (MemoryView.simulate_memory)
 * ------------------------------------------------------------------------------------------- */

/* Ranges of address space a segment event took away, to re-check. */
typedef struct cs_replay_cut_s {
  double lo[2], hi[2];
  int n;
} cs_replay_cut_t;

static void cs_replay_cut_add(cs_replay_cut_t *c, double lo, double hi) {
  if (lo < hi && c->n < 2) {
    c->lo[c->n] = lo;
    c->hi[c->n] = hi;
    c->n++;
  }
}

/* Undo segment_free (merge = false) or segment_unmap (merge = true): map_segment. */
static int cs_replay_map(cs_replay_t *r, const cs_replay_ev_t *e, bool merge) {
  cs_replay_seg_t seg = {e->addr, e->size, e->stream};
  size_t idx = r->nl;
  bool found = false;
  for (size_t i = 0; i < r->nl; i++)
    if (r->l[i].addr > seg.addr) {
      idx = i;
      found = true;
      break;
    }
  if (!merge) {
    /* splice(-1, 0, seg): before the last element when nothing lies above */
    if (!found) idx = r->nl > 0 ? r->nl - 1 : 0;
    return cs_replay_insert(r, idx, seg);
  }
  int rc = cs_replay_insert(r, idx, seg);
  if (rc != 0) return rc;
  if (idx + 1 < r->nl) {
    cs_replay_seg_t *s = &r->l[idx], *next = &r->l[idx + 1];
    if (s->addr + s->size == next->addr && cs_replay_same_stream(s->stream, next->stream)) {
      s->size += next->size;
      cs_replay_remove(r, idx + 1);
    }
  }
  if (idx > 0) {
    cs_replay_seg_t *prev = &r->l[idx - 1], *s = &r->l[idx];
    if (prev->addr + prev->size == s->addr && cs_replay_same_stream(prev->stream, s->stream)) {
      prev->size += s->size;
      cs_replay_remove(r, idx);
    }
  }
  return 0;
}

/* Undo segment_alloc (merge = false) or segment_map (merge = true): unmap_segment. Returns 1 when
 * the viewer throws (segment_map with no containing segment). */
static int cs_replay_unmap(cs_replay_t *r, const cs_replay_ev_t *e, bool merge, cs_replay_cut_t *cut) {
  if (!merge) {
    size_t idx = SIZE_MAX;
    for (size_t i = 0; i < r->nl; i++)
      if (r->l[i].addr == e->addr) {
        idx = i;
        break;
      }
    if (idx == SIZE_MAX) {
      /* splice(-1, 1): the last segment goes */
      if (r->out->segment_alloc_unmatched++ == 0) r->out->first_segment_alloc_unmatched = e->raw;
      if (r->nl == 0) return 0;
      idx = r->nl - 1;
    }
    cs_replay_cut_add(cut, r->l[idx].addr, r->l[idx].addr + r->l[idx].size);
    cs_replay_remove(r, idx);
    return 0;
  }
  double seg_addr = e->addr, seg_size = e->size, seg_end = seg_addr + seg_size;
  size_t idx = SIZE_MAX;
  for (size_t i = 0; i < r->nl; i++) {
    double e_end = r->l[i].addr + r->l[i].size;
    if (r->l[i].addr <= seg_addr && seg_end <= e_end) {
      idx = i;
      break;
    }
  }
  if (idx == SIZE_MAX) return 1;
  cs_replay_seg_t *ex = &r->l[idx];
  double old_addr = ex->addr, old_end = ex->addr + ex->size;
  if (ex->addr == seg_addr) {
    ex->addr += seg_size;
    ex->size -= seg_size;
    cs_replay_cut_add(cut, old_addr, ex->addr);
    if (ex->size == 0) {
      cs_replay_cut_add(cut, ex->addr, old_end);
      cs_replay_remove(r, idx);
    } else {
      cs_replay_cut_add(cut, ex->addr + ex->size, old_end); /* rounding slivers only */
    }
  } else if (old_end == seg_end) {
    ex->size -= seg_size;
    cs_replay_cut_add(cut, ex->addr + ex->size, old_end);
  } else {
    ex->size = seg_addr - ex->addr;
    cs_replay_seg_t right = {seg_end, old_end - seg_end, e->stream};
    cs_replay_cut_add(cut, ex->addr + ex->size, seg_end);
    cs_replay_cut_add(cut, right.addr + right.size, old_end);
    int rc = cs_replay_insert(r, idx + 1, right);
    if (rc != 0) return rc;
  }
  return 0;
}

/* Undo event e (index i of the annotated trace). Returns 0, 1 when the viewer throws (out filled),
 * or a negative error. */
static int cs_replay_undo(cs_replay_t *r, const cs_replay_ev_t *e) {
  char a[32];
  switch (e->kind) {
  case CS_REPLAY_FREE:
  case CS_REPLAY_FREE_COMPLETED:
    cs_replay_set_live(r, e->key, true);
    if (!cs_replay_find_segment(r, r->keys[e->key])) {
      cs_replay_fmt_addr(a, sizeof a, r->keys[e->key]);
      if (e->kind == CS_REPLAY_FREE)
        cs_replay_fail(r, e->raw,
                       "undoing this free (free_requested + free_completed [%zu]) re-creates block %s, which lies in "
                       "no segment at that point: the viewer throws ('null.occupied')",
                       e->raw2, a);
      else
        cs_replay_fail(r, e->raw,
                       "undoing this free_completed re-creates block %s, which lies in no segment at that point: the "
                       "viewer throws ('null.occupied')",
                       a);
      return 1;
    }
    return 0;
  case CS_REPLAY_FREE_REQUESTED:
    if (!r->live[e->key]) {
      cs_replay_fmt_addr(a, sizeof a, e->addr);
      cs_replay_fail(r, e->raw,
                     "free_requested of %s, not followed by its free_completed, refers to no block at that point "
                     "(not pending at snapshot time, not re-created by a later free): the viewer throws",
                     a);
      return 1;
    }
    return 0;
  case CS_REPLAY_ALLOC:
    cs_replay_set_live(r, e->key, false);
    return 0;
  case CS_REPLAY_SEGMENT_FREE:
  case CS_REPLAY_SEGMENT_UNMAP: {
    bool was_overlap = r->overlap;
    int rc = cs_replay_map(r, e, e->kind == CS_REPLAY_SEGMENT_UNMAP);
    if (rc == 0) rc = cs_replay_view(r);
    if (rc != 0) return rc;
    if (r->overlap && !r->out->overlap) {
      r->out->overlap = true;
      r->out->first_overlap = e->raw;
    }
    if (was_overlap || r->overlap) {
      size_t k = cs_replay_check_all(r);
      if (k != SIZE_MAX) {
        cs_replay_fail_block(r, e->raw, k, "after undoing this event (segments overlap)");
        return 1;
      }
    }
    return 0;
  }
  case CS_REPLAY_SEGMENT_ALLOC:
  case CS_REPLAY_SEGMENT_MAP: {
    bool was_overlap = r->overlap;
    cs_replay_cut_t cut = {.n = 0};
    int rc = cs_replay_unmap(r, e, e->kind == CS_REPLAY_SEGMENT_MAP, &cut);
    if (rc == 1) {
      char sz[32];
      cs_replay_fmt_addr(a, sizeof a, e->addr);
      snprintf(sz, sizeof sz, "%.17g", e->size);
      cs_replay_fail(r, e->raw,
                     "segment_map of %s (+%s bytes) lies in no segment at that point: the viewer throws", a, sz);
      return 1;
    }
    if (rc == 0) rc = cs_replay_view(r);
    if (rc != 0) return rc;
    if (r->overlap && !r->out->overlap) {
      r->out->overlap = true;
      r->out->first_overlap = e->raw;
    }
    size_t k = SIZE_MAX;
    if (was_overlap || r->overlap) {
      k = cs_replay_check_all(r);
    } else {
      for (int c = 0; c < cut.n && k == SIZE_MAX; c++) k = cs_replay_check_range(r, cut.lo[c], cut.hi[c]);
    }
    if (k != SIZE_MAX) {
      cs_replay_fail_block(r, e->raw, k,
                           e->kind == CS_REPLAY_SEGMENT_MAP ? "after undoing this segment_map"
                                                            : "after undoing this segment_alloc");
      return 1;
    }
    return 0;
  }
  case CS_REPLAY_OTHER:
  default:
    return 0;
  }
}

/* ---------------------------------------------------------------------------------------------
 * Entry point
 * ------------------------------------------------------------------------------------------- */

/* JavaScript's stable sort of the final segments by address. */
typedef struct cs_replay_sortseg_s {
  const cs_replay_segment_t *s;
  size_t pos;
} cs_replay_sortseg_t;

static int cs_replay_cmp_sortseg(const void *a, const void *b) {
  const cs_replay_sortseg_t *x = a, *y = b;
  if (x->s->addr != y->s->addr) return x->s->addr < y->s->addr ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static bool cs_replay_is_block_kind(cs_replay_kind_t k) {
  return k == CS_REPLAY_ALLOC || k == CS_REPLAY_FREE || k == CS_REPLAY_FREE_REQUESTED ||
         k == CS_REPLAY_FREE_COMPLETED;
}

int cs_replay_device(const cs_replay_input_t *in, cs_replay_result_t *out) {
  memset(out, 0, sizeof *out);
  out->ok = true;
  out->event = SIZE_MAX;
  cs_replay_t r;
  memset(&r, 0, sizeof r);
  r.out = out;
  int rc = -CS_EHOSTMEM;
  cs_replay_ev_t *ev = NULL;

  /* annotate_snapshot: collapse free_requested + free_completed of the same address into `free` */
  size_t nev = 0;
  ev = malloc((in->nevents ? in->nevents : 1) * sizeof *ev);
  if (ev == NULL) goto done;
  for (size_t i = 0; i < in->nevents; i++) {
    const cs_replay_event_t *e = &in->events[i];
    if (e->kind == CS_REPLAY_FREE_COMPLETED && nev > 0 && ev[nev - 1].kind == CS_REPLAY_FREE_REQUESTED &&
        ev[nev - 1].addr == e->addr) {
      ev[nev - 1].kind = CS_REPLAY_FREE;
      ev[nev - 1].raw2 = i;
      continue;
    }
    ev[nev++] = (cs_replay_ev_t){e->kind, e->addr, e->size, e->stream, i, i, 0};
  }

  /* Block keys: every address a block can have. */
  size_t nkeys = in->nblocks;
  for (size_t i = 0; i < nev; i++)
    if (cs_replay_is_block_kind(ev[i].kind)) nkeys++;
  r.keys = malloc((nkeys ? nkeys : 1) * sizeof *r.keys);
  if (r.keys == NULL) goto done;
  size_t nk = 0;
  for (size_t i = 0; i < in->nblocks; i++) r.keys[nk++] = in->blocks[i];
  for (size_t i = 0; i < nev; i++)
    if (cs_replay_is_block_kind(ev[i].kind)) r.keys[nk++] = ev[i].addr;
  qsort(r.keys, nk, sizeof *r.keys, cs_replay_cmp_double);
  size_t u = 0;
  for (size_t i = 0; i < nk; i++)
    if (u == 0 || r.keys[i] != r.keys[u - 1]) r.keys[u++] = r.keys[i];
  r.nkeys = u;
  r.live = calloc(u ? u : 1, 1);
  r.bit = calloc(u + 1, sizeof *r.bit);
  if (r.live == NULL || r.bit == NULL) goto done;
  for (size_t i = 0; i < nev; i++)
    if (cs_replay_is_block_kind(ev[i].kind)) ev[i].key = cs_replay_lower_bound(&r, ev[i].addr);

  /* The final state: segments sorted by address (a stable sort), active blocks live. */
  r.capl = in->nsegments + 16;
  r.l = malloc(r.capl * sizeof *r.l);
  cs_replay_sortseg_t *ss = malloc((in->nsegments ? in->nsegments : 1) * sizeof *ss);
  if (r.l == NULL || ss == NULL) {
    free(ss);
    goto done;
  }
  for (size_t i = 0; i < in->nsegments; i++) ss[i] = (cs_replay_sortseg_t){&in->segments[i], i};
  qsort(ss, in->nsegments, sizeof *ss, cs_replay_cmp_sortseg);
  for (size_t i = 0; i < in->nsegments; i++)
    r.l[r.nl++] = (cs_replay_seg_t){ss[i].s->addr, ss[i].s->size, ss[i].s->stream};
  free(ss);
  if (cs_replay_view(&r) != 0) goto done;
  if (r.overlap) {
    out->overlap = true;
    out->first_overlap = SIZE_MAX;
  }
  for (size_t i = 0; i < in->nblocks; i++) cs_replay_set_live(&r, cs_replay_lower_bound(&r, in->blocks[i]), true);
  for (size_t i = 0; i < in->nblocks; i++) {
    if (!cs_replay_find_segment(&r, in->blocks[i])) {
      char a[32];
      cs_replay_fmt_addr(a, sizeof a, in->blocks[i]);
      cs_replay_fail(&r, SIZE_MAX,
                     "in the final state, active block %s lies in no segment (block sizes run past the segment?): "
                     "the viewer throws ('null.occupied')",
                     a);
      rc = 0;
      goto done;
    }
  }

  /* Undo events n-1 .. 1; after each, the state of the previous event must place. */
  for (size_t i = nev > 0 ? nev - 1 : 0; i >= 1; i--) {
    if (r.work > CS_REPLAY_WORK_BUDGET) {
      out->budget_exhausted = true;
      out->stopped_at = ev[i].raw;
      break;
    }
    int st = cs_replay_undo(&r, &ev[i]);
    if (st < 0) goto done;
    out->steps++;
    if (st == 1) break;
  }
  rc = 0;

done:
  free(ev);
  free(r.keys);
  free(r.live);
  free(r.bit);
  free(r.l);
  free(r.vbuf);
  return rc;
}

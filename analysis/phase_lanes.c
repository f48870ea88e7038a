/* SPDX-License-Identifier: Apache-2.0 */
/* Phases against the memory timeline (contract in analysis/phase_lanes.h). */
#include "analysis/phase_lanes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/snapview.h"
#include "common/cs_format.h"
#include "common/cs_text.h"

typedef struct cs_ann_s {
  const char *name;
  int64_t time_us;
  size_t lane;
  bool start;
} cs_ann_t;

typedef struct cs_open_s {
  const char *name;
  size_t lane;
  size_t top;     /* index into totals of its lane's top-level phase */
  size_t span;    /* index into spans, or SIZE_MAX */
} cs_open_t;

typedef struct cs_total_s {
  const char *name;
  uint64_t bytes;
} cs_total_t;

typedef struct cs_phase_walk_s {
  const cs_ann_t *anns;
  size_t count, next;
  const cs_phase_lanes_t *lanes;
  cs_open_t *open;        /* in start order, every lane's; room for count */
  size_t nopen;
  cs_total_t *totals;     /* per top-level name; room for count */
  size_t ntotals;
  uint64_t bytes;         /* live now */
  size_t events, peak_after;
  cs_open_t *at_peak;     /* the open ones when the peak was reached (room for count) */
  size_t nat_peak;
  int64_t peak_thread;    /* of the entry that reached it */
  const char *target;     /* cs_phases_peak_of: the phase looked for (NULL: none) */
  bool target_seen;
  uint64_t target_bytes;  /* the most bytes live while it was open, */
  size_t target_after;    /* first reached after this many entries */
  cs_phase_span_t *spans; /* cs_phases_spans: room for max_spans (NULL: not wanted) */
  size_t nspans, max_spans, spans_left_out;
  bool missing_time;
} cs_phase_walk_t;

/* ---- lanes ---------------------------------------------------------------------------------- */

void cs_phase_lanes_free(cs_phase_lanes_t *lanes) {
  free(lanes->items);
  free(lanes->by_thread);
  *lanes = (cs_phase_lanes_t){.items = NULL, .count = 0, .by_thread = NULL};
}

size_t cs_phase_lanes_own(const cs_phase_lanes_t *lanes, int64_t thread) {
  size_t lo = 0, hi = lanes->by_thread ? lanes->count : 0;
  while (lo < hi) { /* the first lane whose thread is not below */
    size_t mid = lo + (hi - lo) / 2;
    if (lanes->items[lanes->by_thread[mid]].thread < thread) lo = mid + 1;
    else hi = mid;
  }
  if (lo < lanes->count && lanes->by_thread && lanes->items[lanes->by_thread[lo]].thread == thread)
    return lanes->by_thread[lo];
  if (thread == 0 && lanes->count == 1) return 0; /* a thread not recorded, and only one has phases */
  return SIZE_MAX;
}

/* order (lane indexes) sorted by the lanes' threads, which are distinct: a merge through tmp. */
static void cs_lanes_sort(const cs_phase_lanes_t *lanes, size_t *order, size_t *tmp, size_t n) {
  if (n < 2) return;
  size_t half = n / 2;
  cs_lanes_sort(lanes, order, tmp, half);
  cs_lanes_sort(lanes, order + half, tmp, n - half);
  size_t i = 0, j = half, k = 0;
  while (i < half && j < n)
    tmp[k++] = lanes->items[order[j]].thread < lanes->items[order[i]].thread ? order[j++] : order[i++];
  while (i < half) tmp[k++] = order[i++];
  while (j < n) tmp[k++] = order[j++];
  memcpy(order, tmp, n * sizeof *order);
}

bool cs_phase_lanes_plain(const cs_phase_lanes_t *lanes, size_t own) {
  return lanes->count <= 1 && (lanes->count == 0 || own == 0);
}

void cs_phase_lane_label(const cs_phase_lane_t *lane, char *buf, size_t len) {
  if (len == 0) return;
  buf[0] = '\0';
  if (lane->thread == 0) return;
  if (lane->name && lane->name[0]) snprintf(buf, len, "thread %lld (%s)", (long long)lane->thread, lane->name);
  else snprintf(buf, len, "thread %lld", (long long)lane->thread);
  cs_text_label(buf);
}

int64_t cs_phases_entry_thread(const cs_doc_t *doc, cs_val_t entry) {
  int64_t thread;
  return cs_view_int_key(doc, entry, CS_KEY_THREAD, &thread) ? thread : 0;
}

/* Lane numbers of threads, by open addressing while the annotations are read. */
typedef struct cs_lane_map_s {
  int64_t *thread;
  size_t *lane; /* + 1; 0: free */
  size_t mask;
} cs_lane_map_t;

static size_t cs_lane_slot(const cs_lane_map_t *m, int64_t thread) {
  size_t i = (size_t)((uint64_t)thread * 0x9e3779b97f4a7c15ull >> 20) & m->mask;
  while (m->lane[i] != 0 && m->thread[i] != thread) i = (i + 1) & m->mask;
  return i;
}

/* ---- the walk ------------------------------------------------------------------------------- */

static size_t cs_phase_total(cs_phase_walk_t *w, const char *name) {
  for (size_t i = 0; i < w->ntotals; i++)
    if (strcmp(w->totals[i].name, name) == 0) return i;
  w->totals[w->ntotals] = (cs_total_t){.name = name, .bytes = 0};
  return w->ntotals++;
}

static void cs_phase_touch(cs_phase_walk_t *w) {
  for (size_t i = 0; i < w->nopen; i++) {
    cs_total_t *t = &w->totals[w->open[i].top];
    if (w->bytes > t->bytes) t->bytes = w->bytes;
  }
}

/* While the target phase is open: a new high of its live bytes? */
static void cs_phase_target(cs_phase_walk_t *w) {
  if (!w->target) return;
  bool open = false;
  for (size_t i = 0; i < w->nopen && !open; i++) open = strcmp(w->open[i].name, w->target) == 0;
  if (!open || (w->target_seen && w->bytes <= w->target_bytes)) return;
  w->target_seen = true;
  w->target_bytes = w->bytes;
  w->target_after = w->events;
}

static void cs_phase_apply(cs_phase_walk_t *w, const cs_ann_t *a) {
  if (a->start) {
    size_t depth = 0, top = SIZE_MAX;
    for (size_t i = 0; i < w->nopen; i++) {
      if (w->open[i].lane != a->lane) continue;
      if (depth++ == 0) top = w->open[i].top;
    }
    if (depth == 0) top = cs_phase_total(w, a->name);
    size_t span = SIZE_MAX;
    if (w->spans && w->nspans < w->max_spans) {
      span = w->nspans++;
      w->spans[span] = (cs_phase_span_t){.name = a->name, .lane = a->lane, .depth = depth, .start_state = w->events,
                                         .end_state = SIZE_MAX, .start_us = a->time_us, .end_us = -1};
    } else if (w->spans) {
      w->spans_left_out++;
    }
    w->open[w->nopen++] = (cs_open_t){.name = a->name, .lane = a->lane, .top = top, .span = span};
    cs_phase_touch(w);
    cs_phase_target(w);
    return;
  }
  /* an END closes the latest open phase of its name in its lane; one with no START (cut off) is
   * ignored */
  for (size_t i = w->nopen; i-- > 0;) {
    if (w->open[i].lane != a->lane || strcmp(w->open[i].name, a->name) != 0) continue;
    bool was_top = true;
    for (size_t k = 0; k < i && was_top; k++) was_top = w->open[k].lane != a->lane;
    if (w->open[i].span != SIZE_MAX) {
      w->spans[w->open[i].span].end_state = w->events;
      w->spans[w->open[i].span].end_us = a->time_us;
    }
    memmove(&w->open[i], &w->open[i + 1], (w->nopen - 1 - i) * sizeof *w->open);
    w->nopen--;
    /* the phases it held take its place at the top level of its lane */
    if (was_top) {
      size_t top = SIZE_MAX;
      for (size_t k = i; k < w->nopen; k++) {
        if (w->open[k].lane != a->lane) continue;
        if (top == SIZE_MAX) top = cs_phase_total(w, w->open[k].name);
        w->open[k].top = top;
      }
    }
    return;
  }
}

/* Annotations up to time t: STARTs at t included, ENDs at t not yet (events at t are inside). */
static void cs_phase_advance(cs_phase_walk_t *w, int64_t t, bool all) {
  while (w->next < w->count) {
    const cs_ann_t *a = &w->anns[w->next];
    if (!all && (a->time_us > t || (a->time_us == t && !a->start))) break;
    cs_phase_apply(w, a);
    w->next++;
  }
}

/* "OUTER > INNER" of one lane's open phases (malloc'd; "" when none), NULL without memory. */
static char *cs_phase_chain(const cs_open_t *open, size_t nopen, size_t lane) {
  size_t len = 1;
  for (size_t i = 0; i < nopen; i++)
    if (open[i].lane == lane) len += strlen(open[i].name) + 3;
  char *s = malloc(len);
  if (!s) return NULL;
  s[0] = '\0';
  for (size_t i = 0; i < nopen; i++) {
    if (open[i].lane != lane) continue;
    if (s[0]) strcat(s, " > ");
    strcat(s, open[i].name);
  }
  cs_text_label(s); /* phase names from a program: one line of the tool's, whatever they hold */
  return s;
}

static void cs_phase_each(void *ctx, const cs_doc_t *doc, cs_val_t entry, uint64_t live_bytes) {
  cs_phase_walk_t *w = ctx;
  int64_t t;
  if (!cs_view_int_key(doc, entry, CS_KEY_TIME_US, &t)) {
    w->missing_time = true;
    return;
  }
  cs_phase_advance(w, t, false);
  w->bytes = live_bytes;
  cs_phase_touch(w);
  ++w->events;
  cs_phase_target(w);
  if (w->events == w->peak_after && w->at_peak) {
    memcpy(w->at_peak, w->open, w->nopen * sizeof *w->open);
    w->nat_peak = w->nopen;
    w->peak_thread = cs_phases_entry_thread(doc, entry);
  }
}

static int cs_total_cmp(const void *x, const void *y) {
  const cs_total_t *a = x, *b = y;
  if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
  return strcmp(a->name, b->name);
}

static int cs_ann_cmp(const void *x, const void *y) {
  const cs_ann_t *a = x, *b = y;
  return (a->time_us > b->time_us) - (a->time_us < b->time_us);
}

/* The well-formed annotations, by time (a stable order: equal times keep the file's order), and
 * their lanes. NULL with *count 0 when there are none; *failed when memory ran out. */
static cs_ann_t *cs_phase_read(const cs_doc_t *doc, size_t *count, cs_phase_lanes_t *lanes, bool *failed) {
  cs_val_t list = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_EXTERNAL_ANNOTATIONS);
  *count = 0;
  *lanes = (cs_phase_lanes_t){.items = NULL, .count = 0, .by_thread = NULL};
  size_t n = cs_val_is_array(list) ? cs_doc_len(doc, list) : 0;
  if (n == 0) return NULL;
  cs_ann_t *anns = malloc(n * sizeof *anns);
  int64_t *threads = malloc(n * sizeof *threads);
  const char **names = malloc(n * sizeof *names);
  size_t slots = 16;
  while (slots < 2 * n) slots *= 2;
  cs_lane_map_t map = {.thread = malloc(slots * sizeof *map.thread), .lane = calloc(slots, sizeof *map.lane),
                       .mask = slots - 1};
  lanes->items = malloc(n * sizeof *lanes->items);
  lanes->by_thread = malloc(n * sizeof *lanes->by_thread);
  if (!anns || !threads || !names || !map.thread || !map.lane || !lanes->items || !lanes->by_thread) {
    free(anns);
    anns = NULL;
    *failed = true;
    goto out;
  }
  const cs_val_t *items = cs_doc_items(doc, list);
  for (size_t i = 0; i < n; i++) {
    cs_val_t a = items[i];
    const char *name = cs_view_str_key(doc, a, CS_KEY_NAME), *stage = cs_view_str_key(doc, a, CS_KEY_STAGE);
    int64_t t;
    if (!name || !stage || !cs_view_int_key(doc, a, CS_KEY_TIME_US, &t)) continue;
    bool start = strcmp(stage, "START") == 0;
    if (!start && strcmp(stage, "END") != 0) continue;
    size_t k = (*count)++;
    threads[k] = cs_phases_entry_thread(doc, a);
    names[k] = cs_view_str_key(doc, a, CS_KEY_THREAD_NAME);
    anns[k] = (cs_ann_t){.name = name, .time_us = t, .lane = k, .start = start};
  }
  /* insertion sort keeps equal times in order; files are nearly sorted already (.lane holds each
   * one's index until the lanes are numbered) */
  for (size_t i = 1; i < *count; i++) {
    cs_ann_t x = anns[i];
    size_t j = i;
    while (j > 0 && cs_ann_cmp(&anns[j - 1], &x) > 0) {
      anns[j] = anns[j - 1];
      j--;
    }
    anns[j] = x;
  }
  /* lanes in the order of their first annotations; a thread's name is the last it was given */
  for (size_t i = 0; i < *count; i++) {
    size_t at = anns[i].lane;
    size_t s = cs_lane_slot(&map, threads[at]);
    if (map.lane[s] == 0) {
      map.thread[s] = threads[at];
      map.lane[s] = lanes->count + 1;
      lanes->items[lanes->count++] = (cs_phase_lane_t){.thread = threads[at], .name = NULL};
    }
    anns[i].lane = map.lane[s] - 1;
    if (names[at]) lanes->items[anns[i].lane].name = names[at];
  }
  for (size_t i = 0; i < lanes->count; i++) lanes->by_thread[i] = i;
  cs_lanes_sort(lanes, lanes->by_thread, map.lane, lanes->count); /* the map is done with: room */
  /* marks (a START and an END of one name at one time, in one lane) are moments, not phases:
   * left out */
  size_t kept = 0;
  for (size_t i = 0; i < *count; i++) {
    if (!anns[i].name) continue;
    for (size_t j = i + 1; anns[i].start && j < *count && anns[j].time_us == anns[i].time_us; j++) {
      if (anns[j].name && !anns[j].start && anns[j].lane == anns[i].lane && strcmp(anns[j].name, anns[i].name) == 0) {
        anns[j].name = NULL;
        anns[i].name = NULL;
        break;
      }
    }
    if (anns[i].name) anns[kept++] = anns[i];
  }
  *count = kept;
out:
  if (*failed) cs_phase_lanes_free(lanes);
  free(threads);
  free(names);
  free(map.thread);
  free(map.lane);
  return anns;
}

/* The walk over a device's trace with the annotations read (peak_after: where to keep the open
 * phases; SIZE_MAX: nowhere). 0, or -1 without memory. */
static int cs_phase_walk(const cs_doc_t *doc, int device, cs_phase_walk_t *w, size_t peak_after) {
  w->peak_after = peak_after;
  w->open = malloc(w->count * sizeof *w->open);
  w->totals = malloc(w->count * sizeof *w->totals);
  if (peak_after != SIZE_MAX) w->at_peak = malloc(w->count * sizeof *w->at_peak);
  if (!w->open || !w->totals || (peak_after != SIZE_MAX && !w->at_peak)) return -1;
  return cs_peak_walk(doc, device, cs_phase_each, w, &w->bytes);
}

static void cs_phase_walk_free(cs_phase_walk_t *w) {
  free(w->at_peak);
  free(w->open);
  free(w->totals);
}

/* What every view starts with: the annotations read into w and *lanes, then the walk over the
 * device's trace (peak_after as cs_phase_walk's; w's own fields set before). 1: walked; 0: the
 * file has no annotation; -1: no memory. cs_phase_close frees what it took, whatever it answered. */
static int cs_phase_open(const cs_doc_t *doc, int device, cs_phase_walk_t *w, cs_phase_lanes_t *lanes,
                         size_t peak_after) {
  bool failed = false;
  w->anns = cs_phase_read(doc, &w->count, lanes, &failed);
  w->lanes = lanes;
  if (w->count == 0) return failed ? -1 : 0;
  return cs_phase_walk(doc, device, w, peak_after) == 0 ? 1 : -1;
}

static void cs_phase_close(cs_phase_walk_t *w, cs_phase_lanes_t *lanes) {
  cs_phase_walk_free(w);
  free((cs_ann_t *)w->anns);
  cs_phase_lanes_free(lanes);
}

/* ---- the views ------------------------------------------------------------------------------ */

static int cs_phases_print_peak(cs_phase_walk_t *w, const cs_peak_t *peak, const cs_phase_lanes_t *lanes) {
  char bytes[64], label[512];
  cs_format_bytes(peak->bytes, bytes, sizeof bytes);
  if (peak->after == 0) {
    printf("peak %s at the trace's start\n", bytes);
    return 0;
  }
  size_t own = cs_phase_lanes_own(lanes, w->peak_thread);
  char *chain = cs_phase_chain(w->at_peak, w->nat_peak, own);
  if (!chain) return -1;
  if (cs_phase_lanes_plain(lanes, own)) {
    if (chain[0]) printf("peak %s at event %zu, during %s\n", bytes, peak->after, chain);
    else printf("peak %s at event %zu, outside any phase\n", bytes, peak->after);
    free(chain);
    return 0;
  }
  /* the thread of the peak's entry and its own phases, then every other thread's open then */
  if (w->peak_thread == 0) {
    printf("peak %s at event %zu, on a thread not recorded\n", bytes, peak->after);
  } else {
    cs_phase_lane_t entry_lane = {.thread = w->peak_thread, .name = own != SIZE_MAX ? lanes->items[own].name : NULL};
    cs_phase_lane_label(&entry_lane, label, sizeof label);
    if (chain[0]) printf("peak %s at event %zu, on %s, during %s\n", bytes, peak->after, label, chain);
    else printf("peak %s at event %zu, on %s, outside any phase\n", bytes, peak->after, label);
  }
  free(chain);
  /* the open phases grouped by lane (a counting sort keeps their start order within a lane) */
  size_t *first = calloc(lanes->count + 1, sizeof *first);
  const cs_open_t **grouped = malloc((w->nat_peak ? w->nat_peak : 1) * sizeof *grouped);
  if (!first || !grouped) {
    free(first);
    free(grouped);
    return -1;
  }
  for (size_t i = 0; i < w->nat_peak; i++) first[w->at_peak[i].lane + 1]++;
  for (size_t lane = 0; lane < lanes->count; lane++) first[lane + 1] += first[lane];
  size_t *next = first; /* filled in place: first[lane] moves to its group's end */
  for (size_t i = 0; i < w->nat_peak; i++) grouped[next[w->at_peak[i].lane]++] = &w->at_peak[i];
  for (size_t lane = 0, at = 0; lane < lanes->count; at = next[lane++]) {
    if (lane == own || at == next[lane]) continue;
    cs_phase_lane_label(&lanes->items[lane], label, sizeof label);
    printf("  open on %s: ", label[0] ? label : "no thread recorded");
    for (size_t k = at; k < next[lane]; k++) {
      if (k > at) fputs(" > ", stdout);
      cs_text_fput(stdout, grouped[k]->name);
    }
    printf("\n");
  }
  free(first);
  free(grouped);
  return 0;
}

int cs_phases_summary(const cs_doc_t *doc, int device, const cs_peak_t *peak, uint64_t top) {
  cs_phase_lanes_t lanes;
  cs_phase_walk_t w = {0};
  const int opened = cs_phase_open(doc, device, &w, &lanes, peak->after);
  int rc = opened < 0 ? -1 : 0;
  if (opened == 1 && !w.missing_time && w.events > 0) {
    rc = cs_phases_print_peak(&w, peak, &lanes);
    cs_phase_advance(&w, 0, true);
    qsort(w.totals, w.ntotals, sizeof *w.totals, cs_total_cmp);
    printf("largest live bytes inside each top-level phase:\n");
    for (size_t i = 0; i < w.ntotals && i < top; i++) {
      char bytes[64];
      cs_format_bytes(w.totals[i].bytes, bytes, sizeof bytes);
      fputs("  ", stdout);
      cs_text_fput(stdout, w.totals[i].name);
      printf(": %s\n", bytes);
    }
  }
  cs_phase_close(&w, &lanes);
  return rc;
}

int cs_phases_at_peak(const cs_doc_t *doc, int device, const cs_peak_t *peak, char **out) {
  *out = NULL;
  if (peak->after == 0) return 0;
  cs_phase_lanes_t lanes;
  cs_phase_walk_t w = {0};
  const int opened = cs_phase_open(doc, device, &w, &lanes, peak->after);
  int rc = opened < 0 ? -1 : 0;
  if (opened == 1 && !w.missing_time && w.events >= peak->after) {
    size_t own = cs_phase_lanes_own(&lanes, w.peak_thread);
    char *chain = own != SIZE_MAX ? cs_phase_chain(w.at_peak, w.nat_peak, own) : NULL;
    if (own != SIZE_MAX && !chain) rc = -1;
    char label[512] = "";
    if (chain && chain[0] && !cs_phase_lanes_plain(&lanes, own))
      cs_phase_lane_label(&lanes.items[own], label, sizeof label);
    if (label[0]) {
      size_t len = strlen(chain) + strlen(label) + 5;
      char *with = malloc(len);
      if (with) snprintf(with, len, "%s on %s", chain, label);
      else rc = -1;
      free(chain);
      chain = with;
    }
    if (chain && chain[0]) *out = chain;
    else free(chain);
  }
  cs_phase_close(&w, &lanes);
  return rc;
}

int cs_phases_peak_of(const cs_doc_t *doc, int device, const char *name, cs_peak_t *out, bool *found) {
  *found = false;
  cs_phase_lanes_t lanes;
  cs_phase_walk_t w = {.target = name};
  const int opened = cs_phase_open(doc, device, &w, &lanes, SIZE_MAX);
  if (opened == 1 && !w.missing_time && w.target_seen) {
    *found = true;
    *out = (cs_peak_t){.bytes = w.target_bytes, .after = w.target_after, .events = w.events};
  }
  cs_phase_close(&w, &lanes);
  return opened < 0 ? -1 : 0;
}

int cs_phases_spans(const cs_doc_t *doc, int device, cs_phase_span_t *spans, size_t max_spans, size_t *count,
                    size_t *left_out, cs_phase_lanes_t *lanes_out) {
  *count = 0;
  *left_out = 0;
  if (lanes_out) *lanes_out = (cs_phase_lanes_t){.items = NULL, .count = 0};
  cs_phase_lanes_t lanes;
  cs_phase_walk_t w = {.spans = spans, .max_spans = max_spans};
  const int opened = cs_phase_open(doc, device, &w, &lanes, SIZE_MAX);
  if (opened == 1 && w.missing_time) w.nspans = 0; /* a trace without times cannot place them */
  if (opened == 1) {
    cs_phase_advance(&w, 0, true); /* phases after the last entry */
    for (size_t i = 0; i < w.nspans; i++)
      if (spans[i].end_state == SIZE_MAX) spans[i].end_state = w.events; /* still open */
    *count = w.nspans;
    *left_out = w.spans_left_out;
    if (lanes_out) { /* the caller's now: not freed below */
      *lanes_out = lanes;
      lanes = (cs_phase_lanes_t){.items = NULL, .count = 0, .by_thread = NULL};
    }
  }
  cs_phase_close(&w, &lanes);
  return opened < 0 ? -1 : 0;
}

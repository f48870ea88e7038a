/* Phases against the memory timeline (contract in analysis/phases.h). */
#include "analysis/phases.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/snapview.h"
#include "common/cs_format.h"

typedef struct cs_ann_s {
  const char *name;
  int64_t time_us;
  bool start;
} cs_ann_t;

typedef struct cs_open_s {
  const char *name;
  size_t top;     /* index into totals of its top-level phase */
  size_t span;    /* index into spans, or SIZE_MAX */
} cs_open_t;

typedef struct cs_total_s {
  const char *name;
  uint64_t bytes;
} cs_total_t;

typedef struct cs_phase_walk_s {
  const cs_ann_t *anns;
  size_t count, next;
  cs_open_t *open;        /* in start order; room for count */
  size_t nopen;
  cs_total_t *totals;     /* per top-level name; room for count */
  size_t ntotals;
  uint64_t bytes;         /* live now */
  size_t events, peak_after;
  char *at_peak;          /* the open chain when the peak was reached (malloc'd) */
  const char *target;     /* cs_phases_peak_of: the phase looked for (NULL: none) */
  bool target_seen;
  uint64_t target_bytes;  /* the most bytes live while it was open, */
  size_t target_after;    /* first reached after this many entries */
  cs_phase_span_t *spans; /* cs_phases_spans: room for max_spans (NULL: not wanted) */
  size_t nspans, max_spans, spans_left_out;
  int64_t last_time;      /* of the last trace entry applied */
  bool missing_time;
  bool oom;
} cs_phase_walk_t;

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
    size_t top = w->nopen == 0 ? cs_phase_total(w, a->name) : w->open[0].top;
    size_t span = SIZE_MAX;
    if (w->spans && w->nspans < w->max_spans) {
      span = w->nspans++;
      w->spans[span] = (cs_phase_span_t){.name = a->name, .depth = w->nopen, .start_state = w->events,
                                         .end_state = SIZE_MAX, .start_us = a->time_us, .end_us = -1};
    } else if (w->spans) {
      w->spans_left_out++;
    }
    w->open[w->nopen++] = (cs_open_t){.name = a->name, .top = top, .span = span};
    cs_phase_touch(w);
    cs_phase_target(w);
    return;
  }
  /* an END closes the latest open phase of its name; one with no START (cut off) is ignored */
  for (size_t i = w->nopen; i-- > 0;) {
    if (strcmp(w->open[i].name, a->name) != 0) continue;
    if (w->open[i].span != SIZE_MAX) {
      w->spans[w->open[i].span].end_state = w->events;
      w->spans[w->open[i].span].end_us = a->time_us;
    }
    memmove(&w->open[i], &w->open[i + 1], (w->nopen - 1 - i) * sizeof *w->open);
    w->nopen--;
    /* the phases it held take its place at the top level */
    if (i == 0 && w->nopen > 0) {
      size_t top = cs_phase_total(w, w->open[0].name);
      for (size_t k = 0; k < w->nopen; k++) w->open[k].top = top;
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

static char *cs_phase_chain(const cs_phase_walk_t *w) {
  size_t len = 1;
  for (size_t i = 0; i < w->nopen; i++) len += strlen(w->open[i].name) + 3;
  char *s = malloc(len);
  if (!s) return NULL;
  s[0] = '\0';
  for (size_t i = 0; i < w->nopen; i++) {
    if (i) strcat(s, " > ");
    strcat(s, w->open[i].name);
  }
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
  if (w->events == w->peak_after) {
    free(w->at_peak);
    w->at_peak = cs_phase_chain(w);
    if (!w->at_peak) w->oom = true;
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

/* The well-formed annotations, by time (a stable order: equal times keep the file's order). */
static cs_ann_t *cs_phase_read(const cs_doc_t *doc, size_t *count) {
  cs_val_t list = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_EXTERNAL_ANNOTATIONS);
  *count = 0;
  size_t n = cs_val_is_array(list) ? cs_doc_len(doc, list) : 0;
  if (n == 0) return NULL;
  cs_ann_t *anns = malloc(n * sizeof *anns);
  if (!anns) return NULL;
  const cs_val_t *items = cs_doc_items(doc, list);
  for (size_t i = 0; i < n; i++) {
    cs_val_t a = items[i];
    const char *name = cs_view_str_key(doc, a, CS_KEY_NAME), *stage = cs_view_str_key(doc, a, CS_KEY_STAGE);
    int64_t t;
    if (!name || !stage || !cs_view_int_key(doc, a, CS_KEY_TIME_US, &t)) continue;
    bool start = strcmp(stage, "START") == 0;
    if (!start && strcmp(stage, "END") != 0) continue;
    anns[(*count)++] = (cs_ann_t){.name = name, .time_us = t, .start = start};
  }
  /* insertion sort keeps equal times in order; files are nearly sorted already */
  for (size_t i = 1; i < *count; i++) {
    cs_ann_t x = anns[i];
    size_t j = i;
    while (j > 0 && cs_ann_cmp(&anns[j - 1], &x) > 0) {
      anns[j] = anns[j - 1];
      j--;
    }
    anns[j] = x;
  }
  /* marks (a START and an END of one name at one time) are moments, not phases: left out */
  size_t kept = 0;
  for (size_t i = 0; i < *count; i++) {
    if (!anns[i].name) continue;
    for (size_t j = i + 1; anns[i].start && j < *count && anns[j].time_us == anns[i].time_us; j++) {
      if (anns[j].name && !anns[j].start && strcmp(anns[j].name, anns[i].name) == 0) {
        anns[j].name = NULL;
        anns[i].name = NULL;
        break;
      }
    }
    if (anns[i].name) anns[kept++] = anns[i];
  }
  *count = kept;
  return anns;
}

int cs_phases_summary(const cs_doc_t *doc, int device, const cs_peak_t *peak, uint64_t top) {
  size_t count = 0;
  cs_ann_t *anns = cs_phase_read(doc, &count);
  if (count == 0) {
    free(anns);
    return 0;
  }
  cs_phase_walk_t w = {.anns = anns, .count = count, .peak_after = peak->after};
  w.open = malloc(count * sizeof *w.open);
  w.totals = malloc(count * sizeof *w.totals);
  int rc = -1;
  if (w.open && w.totals) rc = cs_peak_walk(doc, device, cs_phase_each, &w, &w.bytes);
  if (rc == 0 && w.oom) rc = -1;
  if (rc == 0 && !w.missing_time && w.events > 0) {
    char bytes[64];
    cs_format_bytes(peak->bytes, bytes, sizeof bytes);
    if (peak->after == 0) printf("peak %s at the trace's start\n", bytes);
    else if (w.at_peak && w.at_peak[0]) printf("peak %s at event %zu, during %s\n", bytes, peak->after, w.at_peak);
    else printf("peak %s at event %zu, outside any phase\n", bytes, peak->after);
    cs_phase_advance(&w, 0, true);
    qsort(w.totals, w.ntotals, sizeof *w.totals, cs_total_cmp);
    printf("largest live bytes inside each top-level phase:\n");
    for (size_t i = 0; i < w.ntotals && i < top; i++) {
      cs_format_bytes(w.totals[i].bytes, bytes, sizeof bytes);
      printf("  %s: %s\n", w.totals[i].name, bytes);
    }
  }
  free(w.at_peak);
  free(w.open);
  free(w.totals);
  free(anns);
  return rc;
}

int cs_phases_peak_of(const cs_doc_t *doc, int device, const char *name, cs_peak_t *out, bool *found) {
  *found = false;
  size_t count = 0;
  cs_ann_t *anns = cs_phase_read(doc, &count);
  if (count == 0) {
    free(anns);
    return 0;
  }
  cs_phase_walk_t w = {.anns = anns, .count = count, .peak_after = SIZE_MAX, .target = name};
  w.open = malloc(count * sizeof *w.open);
  w.totals = malloc(count * sizeof *w.totals);
  int rc = -1;
  if (w.open && w.totals) rc = cs_peak_walk(doc, device, cs_phase_each, &w, &w.bytes);
  if (rc == 0 && !w.missing_time && w.target_seen) {
    *found = true;
    *out = (cs_peak_t){.bytes = w.target_bytes, .after = w.target_after, .events = w.events};
  }
  free(w.at_peak);
  free(w.open);
  free(w.totals);
  free(anns);
  return rc;
}

int cs_phases_spans(const cs_doc_t *doc, int device, cs_phase_span_t *spans, size_t max_spans, size_t *count,
                    size_t *left_out) {
  *count = 0;
  *left_out = 0;
  size_t n = 0;
  cs_ann_t *anns = cs_phase_read(doc, &n);
  if (n == 0) {
    free(anns);
    return 0;
  }
  cs_phase_walk_t w = {.anns = anns, .count = n, .peak_after = SIZE_MAX, .spans = spans, .max_spans = max_spans};
  w.open = malloc(n * sizeof *w.open);
  w.totals = malloc(n * sizeof *w.totals);
  int rc = -1;
  if (w.open && w.totals) rc = cs_peak_walk(doc, device, cs_phase_each, &w, &w.bytes);
  if (rc == 0 && w.missing_time) w.nspans = 0; /* a trace without times cannot place them */
  if (rc == 0) {
    cs_phase_advance(&w, 0, true); /* phases after the last entry */
    for (size_t i = 0; i < w.nspans; i++)
      if (spans[i].end_state == SIZE_MAX) spans[i].end_state = w.events; /* still open */
    *count = w.nspans;
    *left_out = w.spans_left_out;
  }
  free(w.at_peak);
  free(w.open);
  free(w.totals);
  free(anns);
  return rc;
}

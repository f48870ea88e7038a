/* SPDX-License-Identifier: Apache-2.0 */
/* The report's "memory over time" for one device: allocated bytes split by the top allocation
 * sites, and reserved bytes, after every trace entry, down-sampled so that the page draws a few
 * thousand points however long the trace.
 *
 * Allocated bytes replay the trace as the peak does (analysis/peak.h: requested bytes, the same blocks
 * live at the start), so the timeline's highest point is `summary`'s peak. Reserved bytes are the
 * device's segments at the snapshot with the trace's segment_alloc/segment_map entries undone and
 * segment_free/segment_unmap redone, walked forward.
 *
 * Down-sampling keeps the shape: the states 0..N (state i: after i entries) fall into at most
 * CS_REPORT_BUCKETS buckets of consecutive states, and each bucket keeps the states where
 * allocated bytes were lowest and highest and where reserved bytes were highest, so every peak
 * and every trough the eye would see is a point, and the peak itself is one exactly. */
#ifndef CS_REPORT_TIMELINE_H
#define CS_REPORT_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/sites.h"
#include "model/doc.h"
#include "report/report_stacks.h"

enum {
  CS_REPORT_TOP_SITES = 8,                       /* sites with a band of their own */
  CS_REPORT_BANDS = CS_REPORT_TOP_SITES + 1,     /* and one for every other site */
  CS_REPORT_BUCKETS = 1200,
  CS_REPORT_MAX_MARKERS = 2000,
};

typedef struct cs_report_point_s {
  size_t state;                     /* trace entries applied */
  int64_t time_us;                  /* of the last entry applied (state 0: the first); -1 none */
  int64_t reserved;                 /* bytes */
  uint64_t bands[CS_REPORT_BANDS];  /* allocated bytes per band */
} cs_report_point_t;

typedef enum cs_report_marker_kind_e {
  CS_REPORT_MARK_OOM = 0,
  CS_REPORT_MARK_SNAPSHOT = 1,
} cs_report_marker_kind_t;

typedef struct cs_report_marker_s {
  cs_report_marker_kind_t kind;
  size_t state;        /* the entry's position, from 1 */
  int64_t time_us;     /* -1 when the entry has none */
  int64_t size;        /* oom: the rounded request; snapshot: the active bytes */
  int64_t device_free; /* oom: the driver's free bytes then; -1 when not given */
} cs_report_marker_t;

typedef struct cs_report_timeline_s {
  size_t events;                          /* entries in the device's trace */
  bool has_time;                          /* every entry has a time_us */
  size_t nbands;                          /* top sites with a band (<= CS_REPORT_TOP_SITES) */
  uint32_t band_site[CS_REPORT_TOP_SITES]; /* their positions in the site table */
  cs_report_point_t *points;              /* by state, at most 3 per bucket */
  size_t npoints;
  cs_report_marker_t *markers;            /* by state: every OOM, snapshots up to the limit */
  size_t nmarkers;
  size_t markers_left_out;                /* beyond CS_REPORT_MAX_MARKERS */
  int64_t reserved_peak;                  /* the highest reserved bytes, and after which entry */
  size_t reserved_peak_state;
} cs_report_timeline_t;

/* Build the timeline of `device`. `top` lists the sites with a band of their own, most bytes at
 * the peak first (the first CS_REPORT_TOP_SITES are taken); every block's site and stack is
 * registered in r. Returns 0, or -1 without host memory; free *out either way. */
int cs_report_timeline(const cs_doc_t *doc, int device, const cs_sites_t *top, cs_report_stacks_t *r,
                       cs_report_timeline_t *out);
void cs_report_timeline_free(cs_report_timeline_t *t);

#endif

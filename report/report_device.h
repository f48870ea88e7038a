/* SPDX-License-Identifier: Apache-2.0 */
/* One device's part of the report's data (report/report_data.h): the peak, the timeline, the sites
 * at the peak and at the snapshot, the segment map, the memory_summary table and the
 * reconciliation of the snapshot's statistics with its segments. Everything the page draws is
 * computed here; the page only lays it out.
 *
 * Written as one JSON dict (the page's report.js reads it; the member list is there):
 *   device, events, has_time, dropped,
 *   peak {bytes, after, time_us}, reserved_peak {bytes, after},
 *   bands [site...], timeline {state, time, reserved, bands: [[bytes per point]...]},
 *   markers [[kind, state, time_us, size, device_free]...], markers_left_out,
 *   peak_sites / live_sites [[site, bytes, blocks]...], *_more [sites, bytes, blocks],
 *   live {bytes, blocks}, inside {rounding, gaps},
 *   segments [[address, total_size, pool, stream, [size, requested, state, stack, count, ...]]...],
 *   table, table_note, reconcile [[what, snapshot, computed, note]...]. */
#ifndef CS_REPORT_DEVICE_H
#define CS_REPORT_DEVICE_H

#include "memviz/emit.h"
#include "model/doc.h"
#include "report/report_stacks.h"

enum {
  CS_REPORT_MAX_SITES = 200,       /* rows of a site list; the rest are summed in one */
  CS_REPORT_MAX_BLOCKS = 200000,   /* blocks of a device's segment map before runs are merged */
};

/* Write device's dict. Sites and stacks go to r. Returns 0, or -1 without host memory. */
int cs_report_device(const cs_doc_t *doc, int device, cs_report_stacks_t *r, cs_emitter_t *e);

#endif

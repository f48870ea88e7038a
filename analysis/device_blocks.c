/* SPDX-License-Identifier: Apache-2.0 */
/* A device's use and its blocks at the snapshot (contract in analysis/device_blocks.h). */
#include "analysis/device_blocks.h"

#include <string.h>

#include "analysis/snapstats.h"
#include "analysis/snapview.h"

bool cs_device_used(const cs_doc_t *doc, int device) {
  cs_val_t trace = cs_view_trace(doc, device);
  size_t n = cs_doc_len(doc, trace);
  const cs_val_t *entries = cs_doc_items(doc, trace);
  for (size_t i = 0; i < n; i++) {
    const char *action = cs_view_str_key(doc, entries[i], CS_KEY_ACTION);
    if (action == NULL || strcmp(action, "snapshot") != 0) return true;
  }
  cs_stats_t stats, zero;
  memset(&zero, 0, sizeof zero);
  if (cs_snapstats_from_cudasnap(doc, device, &stats) >= 0) {
    stats.max_split_size = 0; /* a setting, not a sign of use */
    if (memcmp(&stats, &zero, sizeof stats) != 0) return true;
  }
  cs_val_t segments = cs_view_segments(doc);
  size_t nsegments = cs_doc_len(doc, segments);
  const cs_val_t *segment = cs_doc_items(doc, segments);
  for (size_t i = 0; i < nsegments; i++) {
    if (cs_view_segment_device(doc, segment[i]) == device) return true;
  }
  return false;
}

int cs_device_blocks(const cs_doc_t *doc, int device, cs_device_blocks_t *out) {
  out->rounding = out->gaps = 0;
  cs_sites_init(&out->live);
  cs_site_cache_t cache;
  cs_site_cache_init(&cache, doc);
  int rc = 0;
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  for (cs_view_device_blocks_begin(&it, doc, device); rc == 0 && cs_view_device_blocks_next(&it, &b);) {
    if (b.state == CS_VIEW_INACTIVE) {
      out->gaps += (uint64_t)b.size;
      continue;
    }
    if (b.requested < b.size) out->rounding += (uint64_t)(b.size - b.requested);
    if (b.state != CS_VIEW_ALLOCATED) continue;
    cs_site_t site = cs_site_cache_of(&cache, b.frames);
    rc = cs_sites_add(&out->live, &site, (uint64_t)b.requested);
  }
  cs_site_cache_free(&cache);
  return rc;
}

void cs_device_blocks_free(cs_device_blocks_t *b) { cs_sites_free(&b->live); }

/* A device's use and its blocks at the snapshot (contract in cli/device_blocks.h). */
#include "cli/device_blocks.h"

#include <string.h>

#include "cli/snapstats.h"
#include "cli/snapview.h"

bool cs_device_used(const cJSON *root, int device) {
  const cJSON *entry;
  cJSON_ArrayForEach(entry, cs_view_trace(root, device)) {
    const char *action = cs_view_str(entry, "action");
    if (action == NULL || strcmp(action, "snapshot") != 0) return true;
  }
  cs_stats_t stats, zero;
  memset(&zero, 0, sizeof zero);
  if (cs_snapstats_from_cudasnap(root, device, &stats) >= 0) {
    stats.max_split_size = 0; /* a setting, not a sign of use */
    if (memcmp(&stats, &zero, sizeof stats) != 0) return true;
  }
  const cJSON *segment;
  cJSON_ArrayForEach(segment, cs_view_segments(root)) {
    if (cs_view_segment_device(segment) == device) return true;
  }
  return false;
}

int cs_device_blocks(const cJSON *root, int device, cs_device_blocks_t *out) {
  out->rounding = out->gaps = 0;
  cs_sites_init(&out->live);
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  for (cs_view_device_blocks_begin(&it, root, device); cs_view_device_blocks_next(&it, &b);) {
    if (b.state == CS_VIEW_INACTIVE) {
      out->gaps += (uint64_t)b.size;
      continue;
    }
    if (b.requested < b.size) out->rounding += (uint64_t)(b.size - b.requested);
    if (b.state != CS_VIEW_ALLOCATED) continue;
    cs_site_t site = cs_site_of(b.frames);
    if (cs_sites_add(&out->live, &site, (uint64_t)b.requested) != 0) return -1;
  }
  return 0;
}

void cs_device_blocks_free(cs_device_blocks_t *b) { cs_sites_free(&b->live); }

/* Forward trace replay for the peak (contract in cli/peak.h). */
#include "cli/peak.h"

#include <string.h>

#include "cli/live_map.h"
#include "cli/snapview.h"

typedef enum cs_peak_kind_e {
  CS_PEAK_OTHER = 0,
  CS_PEAK_ALLOC,
  CS_PEAK_FREE,          /* free_completed, or a legacy free */
  CS_PEAK_FREE_REQUESTED,
} cs_peak_kind_t;

typedef struct cs_peak_event_s {
  cs_peak_kind_t kind;
  int64_t addr;
  uint64_t size;
  const cJSON *frames;
} cs_peak_event_t;

/* An entry without an integer addr and a non-negative integer size changes nothing. */
static cs_peak_event_t cs_peak_event(const cJSON *entry) {
  cs_peak_event_t ev = {.kind = CS_PEAK_OTHER};
  const char *action = cs_view_str(entry, "action");
  int64_t size;
  if (action == NULL || !cs_view_int(entry, "addr", &ev.addr) || !cs_view_int(entry, "size", &size) || size < 0)
    return ev;
  if (strcmp(action, "alloc") == 0) ev.kind = CS_PEAK_ALLOC;
  else if (strcmp(action, "free_completed") == 0 || strcmp(action, "free") == 0) ev.kind = CS_PEAK_FREE;
  else if (strcmp(action, "free_requested") == 0) ev.kind = CS_PEAK_FREE_REQUESTED;
  ev.size = (uint64_t)size;
  const cJSON *frames = cJSON_GetObjectItemCaseSensitive(entry, "frames");
  ev.frames = cJSON_IsArray(frames) ? frames : NULL;
  return ev;
}

/* The blocks live when the trace starts (see peak.h). */
static int cs_peak_start(const cJSON *root, int device, const cJSON *trace, cs_live_map_t *live) {
  cs_live_map_t seen; /* every address the trace allocates or frees; bytes unused */
  cs_live_map_init(&seen);
  int rc = 0;
  const cJSON *entry;
  cJSON_ArrayForEach(entry, trace) {
    cs_peak_event_t ev = cs_peak_event(entry);
    if (ev.kind == CS_PEAK_OTHER || cs_live_map_get(&seen, ev.addr) != NULL) continue;
    if (cs_live_map_put(&seen, ev.addr, 0, NULL) != 0) rc = -1;
    /* Freed before any alloc: live from before the trace. The stack is the free's (with
     * PyTorch's context="alloc", and in cudasnap's traces, that is the allocating one). */
    if (ev.kind != CS_PEAK_ALLOC && cs_live_map_put(live, ev.addr, ev.size, ev.frames) != 0) rc = -1;
  }
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  for (cs_view_device_blocks_begin(&it, root, device); cs_view_device_blocks_next(&it, &b);) {
    if (b.state == CS_VIEW_INACTIVE || cs_live_map_get(&seen, b.addr) != NULL) continue;
    if (cs_live_map_put(live, b.addr, (uint64_t)b.requested, b.frames) != 0) rc = -1;
  }
  cs_live_map_free(&seen);
  return rc;
}

int cs_peak_initial(const cJSON *root, int device, cs_live_map_t *live) {
  return cs_peak_start(root, device, cs_view_trace(root, device), live);
}

int cs_peak_apply(const cJSON *entry, cs_live_map_t *live, cs_peak_change_t *change) {
  cs_peak_change_t none;
  if (change == NULL) change = &none;
  change->ended = change->began = false;
  cs_peak_event_t ev = cs_peak_event(entry);
  if (ev.kind != CS_PEAK_ALLOC && ev.kind != CS_PEAK_FREE) return 0;
  const cs_live_t *was = cs_live_map_get(live, ev.addr);
  if (was != NULL) {
    change->ended = true;
    change->ended_block = *was;
  }
  if (ev.kind == CS_PEAK_FREE) {
    cs_live_map_remove(live, ev.addr);
    return 0;
  }
  if (cs_live_map_put(live, ev.addr, ev.size, ev.frames) != 0) return -1;
  change->began = true;
  change->began_block = *cs_live_map_get(live, ev.addr);
  return 0;
}

/* Apply the first `limit` entries to live; *peak gets the highest point on the way. */
static int cs_peak_replay(const cJSON *trace, size_t limit, cs_live_map_t *live, cs_peak_t *peak) {
  *peak = (cs_peak_t){.bytes = live->bytes, .after = 0, .events = 0};
  size_t i = 0;
  const cJSON *entry;
  cJSON_ArrayForEach(entry, trace) {
    peak->events++;
    if (i == limit) continue;
    i++;
    if (cs_peak_apply(entry, live, NULL) != 0) return -1;
    if (live->bytes > peak->bytes) {
      peak->bytes = live->bytes;
      peak->after = i;
    }
  }
  return 0;
}

int cs_peak_live_at(const cJSON *root, int device, size_t after, cs_sites_t *sites) {
  const cJSON *trace = cs_view_trace(root, device);
  cs_live_map_t live;
  cs_live_map_init(&live);
  cs_peak_t at;
  int rc = cs_peak_start(root, device, trace, &live);
  if (rc == 0) rc = cs_peak_replay(trace, after, &live, &at);
  for (size_t i = 0; rc == 0 && i < live.nslots; i++) {
    const cs_live_t *l = &live.slots[i];
    if (!l->used) continue;
    cs_site_t site = cs_site_of(l->frames);
    rc = cs_sites_add(sites, &site, l->bytes);
  }
  cs_live_map_free(&live);
  return rc;
}

int cs_peak_find(const cJSON *root, int device, cs_peak_t *peak, cs_sites_t *sites) {
  const cJSON *trace = cs_view_trace(root, device);
  /* Two passes: one to find when the peak was, one to stop there and see what was live. */
  cs_live_map_t live;
  cs_live_map_init(&live);
  int rc = cs_peak_start(root, device, trace, &live);
  if (rc == 0) rc = cs_peak_replay(trace, SIZE_MAX, &live, peak);
  cs_live_map_free(&live);
  if (rc == 0) rc = cs_peak_live_at(root, device, peak->after, sites);
  return rc;
}

int cs_peak_walk(const cJSON *root, int device, cs_peak_each_fn each, void *ctx, uint64_t *start_bytes) {
  cs_live_map_t live;
  cs_live_map_init(&live);
  int rc = cs_peak_initial(root, device, &live);
  *start_bytes = live.bytes;
  const cJSON *entry;
  cJSON_ArrayForEach(entry, cs_view_trace(root, device)) {
    if (rc != 0) break;
    rc = cs_peak_apply(entry, &live, NULL);
    if (rc == 0) each(ctx, entry, live.bytes);
  }
  cs_live_map_free(&live);
  return rc;
}

/* Snapshot tree accessors (contract in cli/snapview.h). */
#include "cli/snapview.h"

#include <string.h>

#include "reader/reader.h"

bool cs_view_int(const cJSON *obj, const char *key, int64_t *out) {
  return cs_reader_int_exact(cJSON_GetObjectItemCaseSensitive(obj, key), out) != 0;
}

const char *cs_view_str(const cJSON *obj, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsString(item) ? item->valuestring : NULL;
}

const cJSON *cs_view_segments(const cJSON *root) {
  if (cJSON_IsArray(root)) return root; /* legacy: the list of segments itself */
  const cJSON *segments = cJSON_GetObjectItemCaseSensitive(root, "segments");
  return cJSON_IsArray(segments) ? segments : NULL;
}

const cJSON *cs_view_trace(const cJSON *root, int device) {
  const cJSON *traces = cJSON_GetObjectItemCaseSensitive(root, "device_traces");
  const cJSON *trace = cJSON_IsArray(traces) ? cJSON_GetArrayItem(traces, device) : NULL;
  return cJSON_IsArray(trace) ? trace : NULL;
}

int cs_view_segment_device(const cJSON *segment) {
  int64_t device;
  if (!cs_view_int(segment, "device", &device) || device < 0 || device >= CS_VIEW_MAX_DEVICES) return -1;
  return (int)device;
}

static int cs_view_max(int a, int b) { return a > b ? a : b; }

static int cs_view_list_len(const cJSON *list) {
  int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
  return n < CS_VIEW_MAX_DEVICES ? n : CS_VIEW_MAX_DEVICES;
}

int cs_view_device_count(const cJSON *root) {
  int count = cs_view_list_len(cJSON_GetObjectItemCaseSensitive(root, "device_traces"));
  const cJSON *cudasnap = cJSON_GetObjectItemCaseSensitive(root, "cudasnap");
  count = cs_view_max(count, cs_view_list_len(cJSON_GetObjectItemCaseSensitive(cudasnap, "memory_stats")));
  const cJSON *segment;
  cJSON_ArrayForEach(segment, cs_view_segments(root)) {
    count = cs_view_max(count, cs_view_segment_device(segment) + 1);
  }
  return count;
}

static cs_view_state_t cs_view_state(const char *state) {
  if (state != NULL && strcmp(state, "active_allocated") == 0) return CS_VIEW_ALLOCATED;
  if (state != NULL && strcmp(state, "active_pending_free") == 0) return CS_VIEW_PENDING;
  return CS_VIEW_INACTIVE;
}

void cs_view_blocks_begin(cs_view_blocks_t *it, const cJSON *segment) {
  const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(segment, "blocks");
  it->next = cJSON_IsArray(blocks) ? blocks->child : NULL;
  if (!cs_view_int(segment, "address", &it->addr)) it->addr = 0;
}

bool cs_view_blocks_next(cs_view_blocks_t *it, cs_view_block_t *out) {
  for (; it->next != NULL; it->next = it->next->next) {
    const cJSON *block = it->next;
    int64_t size;
    if (!cs_view_int(block, "size", &size) || size < 0) continue;
    *out = (cs_view_block_t){.item = block, .addr = it->addr, .size = size, .requested = size,
                             .state = cs_view_state(cs_view_str(block, "state"))};
    int64_t requested;
    if (cs_view_int(block, "requested_size", &requested) && requested >= 0) out->requested = requested;
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(block, "frames");
    out->frames = cJSON_IsArray(frames) ? frames : NULL;
    /* Wrapping arithmetic: hostile sizes must not be undefined behaviour. */
    it->addr = (int64_t)((uint64_t)it->addr + (uint64_t)size);
    it->next = it->next->next;
    return true;
  }
  return false;
}

void cs_view_device_blocks_begin(cs_view_device_blocks_t *it, const cJSON *root, int device) {
  const cJSON *segments = cs_view_segments(root);
  it->next_segment = segments != NULL ? segments->child : NULL;
  it->device = device;
  it->blocks = (cs_view_blocks_t){.next = NULL, .addr = 0};
}

bool cs_view_device_blocks_next(cs_view_device_blocks_t *it, cs_view_block_t *out) {
  while (!cs_view_blocks_next(&it->blocks, out)) {
    const cJSON *segment = it->next_segment;
    if (segment == NULL) return false;
    it->next_segment = segment->next;
    if (cs_view_segment_device(segment) == it->device) cs_view_blocks_begin(&it->blocks, segment);
  }
  return true;
}

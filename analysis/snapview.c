/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot model accessors (contract in analysis/snapview.h). */
#include "analysis/snapview.h"

#include <string.h>

bool cs_view_int(const cs_doc_t *doc, cs_val_t obj, const char *key, int64_t *out) {
  return cs_doc_int(doc, cs_doc_get(doc, obj, key), out);
}

bool cs_view_int_key(const cs_doc_t *doc, cs_val_t obj, cs_doc_key_t key, int64_t *out) {
  return cs_doc_int(doc, cs_doc_get_key(doc, obj, key), out);
}

const char *cs_view_str(const cs_doc_t *doc, cs_val_t obj, const char *key) {
  return cs_doc_str(doc, cs_doc_get(doc, obj, key), NULL);
}

const char *cs_view_str_key(const cs_doc_t *doc, cs_val_t obj, cs_doc_key_t key) {
  return cs_doc_str(doc, cs_doc_get_key(doc, obj, key), NULL);
}

cs_val_t cs_view_segments(const cs_doc_t *doc) {
  cs_val_t root = cs_doc_root(doc);
  if (cs_val_is_array(root)) return root; /* legacy: the list of segments itself */
  cs_val_t segments = cs_doc_get_key(doc, root, CS_KEY_SEGMENTS);
  return cs_val_is_array(segments) ? segments : CS_VAL_ABSENT;
}

cs_val_t cs_view_trace(const cs_doc_t *doc, int device) {
  cs_val_t traces = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_DEVICE_TRACES);
  if (!cs_val_is_array(traces) || device < 0 || (size_t)device >= cs_doc_len(doc, traces)) return CS_VAL_ABSENT;
  cs_val_t trace = cs_doc_at(doc, traces, (size_t)device);
  return cs_val_is_array(trace) ? trace : CS_VAL_ABSENT;
}

int cs_view_segment_device(const cs_doc_t *doc, cs_val_t segment) {
  int64_t device;
  if (!cs_view_int_key(doc, segment, CS_KEY_DEVICE, &device) || device < 0 || device >= CS_VIEW_MAX_DEVICES)
    return -1;
  return (int)device;
}

int cs_view_segment_sign(const char *action) {
  if (strcmp(action, "segment_alloc") == 0 || strcmp(action, "segment_map") == 0) return 1;
  if (strcmp(action, "segment_free") == 0 || strcmp(action, "segment_unmap") == 0) return -1;
  return 0;
}

static int cs_view_max(int a, int b) { return a > b ? a : b; }

static int cs_view_list_len(const cs_doc_t *doc, cs_val_t list) {
  size_t n = cs_val_is_array(list) ? cs_doc_len(doc, list) : 0;
  return n < CS_VIEW_MAX_DEVICES ? (int)n : CS_VIEW_MAX_DEVICES;
}

int cs_view_device_count(const cs_doc_t *doc) {
  cs_val_t root = cs_doc_root(doc);
  int count = cs_view_list_len(doc, cs_doc_get_key(doc, root, CS_KEY_DEVICE_TRACES));
  cs_val_t cudasnap = cs_doc_get_key(doc, root, CS_KEY_CUDASNAP);
  count = cs_view_max(count, cs_view_list_len(doc, cs_doc_get_key(doc, cudasnap, CS_KEY_MEMORY_STATS)));
  cs_val_t segments = cs_view_segments(doc);
  size_t n = cs_doc_len(doc, segments);
  const cs_val_t *segment = cs_doc_items(doc, segments);
  for (size_t i = 0; i < n; i++) count = cs_view_max(count, cs_view_segment_device(doc, segment[i]) + 1);
  return count;
}

static cs_view_state_t cs_view_state(const char *state) {
  if (state != NULL && strcmp(state, "active_allocated") == 0) return CS_VIEW_ALLOCATED;
  if (state != NULL && strcmp(state, "active_pending_free") == 0) return CS_VIEW_PENDING;
  return CS_VIEW_INACTIVE;
}

void cs_view_blocks_begin(cs_view_blocks_t *it, const cs_doc_t *doc, cs_val_t segment) {
  cs_val_t blocks = cs_doc_get_key(doc, segment, CS_KEY_BLOCKS);
  it->doc = doc;
  it->segment = segment;
  it->next = 0;
  it->count = cs_val_is_array(blocks) ? cs_doc_len(doc, blocks) : 0;
  it->blocks = it->count > 0 ? cs_doc_items(doc, blocks) : NULL;
  if (!cs_view_int_key(doc, segment, CS_KEY_ADDRESS, &it->addr)) it->addr = 0;
}

bool cs_view_blocks_next(cs_view_blocks_t *it, cs_view_block_t *out) {
  const cs_doc_t *doc = it->doc;
  while (it->next < it->count) {
    cs_val_t block = it->blocks[it->next++];
    int64_t size;
    if (!cs_view_int_key(doc, block, CS_KEY_SIZE, &size) || size < 0) continue;
    *out = (cs_view_block_t){.item = block, .segment = it->segment, .addr = it->addr, .size = size,
                             .requested = size, .state = cs_view_state(cs_view_str_key(doc, block, CS_KEY_STATE))};
    int64_t requested;
    if (cs_view_int_key(doc, block, CS_KEY_REQUESTED_SIZE, &requested) && requested >= 0) out->requested = requested;
    cs_val_t frames = cs_doc_get_key(doc, block, CS_KEY_FRAMES);
    out->frames = cs_val_is_array(frames) ? frames : CS_VAL_ABSENT;
    /* Wrapping arithmetic: hostile sizes must not be undefined behaviour. */
    it->addr = (int64_t)((uint64_t)it->addr + (uint64_t)size);
    return true;
  }
  return false;
}

void cs_view_device_blocks_begin(cs_view_device_blocks_t *it, const cs_doc_t *doc, int device) {
  cs_val_t segments = cs_view_segments(doc);
  it->nsegments = cs_doc_len(doc, segments);
  it->segments = it->nsegments > 0 ? cs_doc_items(doc, segments) : NULL;
  it->next_segment = 0;
  it->device = device;
  it->blocks = (cs_view_blocks_t){.doc = doc, .segment = CS_VAL_ABSENT, .blocks = NULL, .next = 0, .count = 0,
                                  .addr = 0};
}

bool cs_view_device_blocks_next(cs_view_device_blocks_t *it, cs_view_block_t *out) {
  const cs_doc_t *doc = it->blocks.doc;
  while (!cs_view_blocks_next(&it->blocks, out)) {
    if (it->next_segment == it->nsegments) return false;
    cs_val_t segment = it->segments[it->next_segment++];
    if (cs_view_segment_device(doc, segment) == it->device) cs_view_blocks_begin(&it->blocks, doc, segment);
  }
  return true;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* memory_stats counters from a snapshot (contract in analysis/snapstats.h). */
#include "analysis/snapstats.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/snapview.h"

/* ------------------------------------------------------------------------------------------------
 * From cudasnap.memory_stats
 * ---------------------------------------------------------------------------------------------- */

/* cs_stats_t is the 122 int64 counters and nothing else (stats.c asserts it), and
 * cs_stats_flatten names them in memory_stats() order. Flattening a struct whose i-th counter
 * holds i therefore tells, for each key, which counter it names: stats.def stays the only list of
 * keys. */
_Static_assert(sizeof(cs_stats_t) == CS_STATS_KEY_COUNT * sizeof(int64_t), "cs_stats_t is not 122 counters");

int cs_snapstats_from_cudasnap(const cs_doc_t *doc, int device, cs_stats_t *out) {
  memset(out, 0, sizeof *out);
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  cs_val_t all = cs_doc_get_key(doc, cudasnap, CS_KEY_MEMORY_STATS);
  if (!cs_val_is_array(all) || device < 0 || (size_t)device >= cs_doc_len(doc, all)) return -1;
  cs_val_t dict = cs_doc_at(doc, all, (size_t)device);
  if (!cs_val_is_dict(dict)) return -1;

  int64_t counters[CS_STATS_KEY_COUNT];
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) counters[i] = (int64_t)i;
  cs_stats_t numbered;
  memcpy(&numbered, counters, sizeof numbered);
  cs_stat_kv_t keys[CS_STATS_KEY_COUNT];
  cs_stats_flatten(&numbered, keys, CS_STATS_KEY_COUNT);

  memset(counters, 0, sizeof counters);
  int found = 0;
  for (size_t i = 0; i < CS_STATS_KEY_COUNT; i++) {
    if (cs_view_int(doc, dict, keys[i].key, &counters[keys[i].value])) found++;
  }
  memcpy(out, counters, sizeof *out);
  return found;
}

/* ------------------------------------------------------------------------------------------------
 * From the segments
 * ---------------------------------------------------------------------------------------------- */

static void cs_snapstats_add(cs_stat_t pools[CS_STAT_POOLS], bool small, int64_t n) {
  pools[CS_STAT_ALL].current += n;
  pools[small ? CS_STAT_SMALL_POOL : CS_STAT_LARGE_POOL].current += n;
}

void cs_snapstats_from_segments(const cs_doc_t *doc, int device, cs_stats_t *out) {
  memset(out, 0, sizeof *out);
  cs_val_t settings = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_ALLOCATOR_SETTINGS);
  int64_t max_split = -1; /* PyTorch writes -1 for unlimited */
  if (!cs_view_int(doc, settings, "max_split_size", &max_split) || max_split <= 0) max_split = -1;
  out->max_split_size = max_split;

  cs_val_t segments = cs_view_segments(doc);
  size_t nsegments = cs_doc_len(doc, segments);
  const cs_val_t *segment_items = cs_doc_items(doc, segments);
  for (size_t i = 0; i < nsegments; i++) {
    cs_val_t segment = segment_items[i];
    if (cs_view_segment_device(doc, segment) != device) continue;
    /* memory passed through the cache (cudasnap.kind other than cached) is not the allocator's */
    const char *kind = cs_view_str(doc, cs_doc_get_key(doc, segment, CS_KEY_CUDASNAP), "kind");
    if (kind != NULL && strcmp(kind, "cached") != 0) continue;
    const char *type = cs_view_str_key(doc, segment, CS_KEY_SEGMENT_TYPE);
    bool small = type != NULL && strcmp(type, "small") == 0;
    int64_t total = 0;
    if (!cs_view_int_key(doc, segment, CS_KEY_TOTAL_SIZE, &total) || total < 0) total = 0;
    cs_snapstats_add(out->reserved_bytes, small, total);
    cs_snapstats_add(out->segment, small, 1);
    if (max_split > 0 && total >= max_split) out->oversize_segments.current++;

    cs_view_blocks_t it;
    cs_view_block_t b;
    int blocks = 0;
    for (cs_view_blocks_begin(&it, doc, segment); cs_view_blocks_next(&it, &b);) blocks++;
    for (cs_view_blocks_begin(&it, doc, segment); cs_view_blocks_next(&it, &b);) {
      if (b.state == CS_VIEW_INACTIVE) {
        /* Free memory sharing its segment with other blocks: empty_cache cannot return it. */
        if (blocks > 1) {
          cs_snapstats_add(out->inactive_split, small, 1);
          cs_snapstats_add(out->inactive_split_bytes, small, b.size);
        }
        continue;
      }
      cs_snapstats_add(out->active, small, 1);
      cs_snapstats_add(out->active_bytes, small, b.size);
      cs_snapstats_add(out->requested_bytes, small, b.requested);
      if (b.state != CS_VIEW_ALLOCATED) continue;
      cs_snapstats_add(out->allocation, small, 1);
      cs_snapstats_add(out->allocated_bytes, small, b.size);
      if (max_split > 0 && b.size >= max_split) out->oversize_allocations.current++;
    }
  }
}

/* ------------------------------------------------------------------------------------------------
 * Marking the unknown columns
 * ---------------------------------------------------------------------------------------------- */

/* Column positions in a line of the table, counted from its leading '|' (section 5.5: " label:21 |
 * value:10 | value:10 | value:10 | value:10 "). */
enum {
  CS_ROW_BAR = 24,     /* the '|' after the label */
  CS_ROW_PEAK = 39,    /* first character of the Peak Usage value; Tot Alloc and Tot Freed follow */
  CS_ROW_STEP = 13,    /* from one value to the next: 10 characters and " | " */
  CS_ROW_VALUE = 10,
};

/* A value of 0 reads "     0 B  " or "      0   ": keep its place, show "?" instead. */
static void cs_snapstats_unknown_value(char *field) {
  for (size_t i = 0; i < CS_ROW_VALUE; i++) field[i] = field[i] == '0' ? '?' : ' ';
}

static void cs_snapstats_unknown_after(char *text, const char *label) {
  char *at = strstr(text, label);
  if (at != NULL && at[strlen(label)] == '0') at[strlen(label)] = '?';
}

void cs_snapstats_mark_unknown(char *text) {
  cs_snapstats_unknown_after(text, "CUDA OOMs: ");
  cs_snapstats_unknown_after(text, "cudaMalloc retries: ");
  for (char *line = text; *line != '\0';) {
    char *end = strchr(line, '\n');
    size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
    bool header = len > 15 && memcmp(line + 9, "Metric", 6) == 0;
    if (!header && len > CS_ROW_PEAK + 2 * CS_ROW_STEP + CS_ROW_VALUE && line[CS_ROW_BAR] == '|') {
      for (int column = 0; column < 3; column++) {
        cs_snapstats_unknown_value(line + CS_ROW_PEAK + column * CS_ROW_STEP);
      }
    }
    line += len + (end != NULL);
  }
}

/* ------------------------------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------------------------------- */

char *cs_snapstats_table(const cs_doc_t *doc, int device, int *found) {
  cs_stats_t stats;
  *found = cs_snapstats_from_cudasnap(doc, device, &stats);
  if (*found < 0) cs_snapstats_from_segments(doc, device, &stats);
  size_t len = cs_stats_summary(&stats, device, false, NULL, 0) + 1;
  char *text = malloc(len);
  if (text == NULL) return NULL;
  cs_stats_summary(&stats, device, false, text, len);
  if (*found < 0) cs_snapstats_mark_unknown(text);
  return text;
}

/* Read-only views of a snapshot tree (snapshot-format.md section 2) for the subcommands that
 * interpret one: summary and diff.
 *
 * The tree has passed the reader and the refusal of meaningless numbers (cli/load.h), not the
 * viewer's other rules: any key may be missing or of the wrong type. Each accessor says what it
 * makes of that, and none of them fails: a snapshot too broken to render still gets a summary of
 * whatever it does hold. A legacy snapshot (a bare list of
 * segments, torch.cuda.memory_snapshot()) is read as one with no traces. */
#ifndef CS_CLI_SNAPVIEW_H
#define CS_CLI_SNAPVIEW_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* An integer member of obj, exactly (cs_reader_int_exact); false when absent or not an integer. */
bool cs_view_int(const cJSON *obj, const char *key, int64_t *out);

/* A string member of obj, or NULL. */
const char *cs_view_str(const cJSON *obj, const char *key);

/* The segments list, or NULL. */
const cJSON *cs_view_segments(const cJSON *root);

/* device_traces[device], or NULL when there is no such list. */
const cJSON *cs_view_trace(const cJSON *root, int device);

/* How many devices the snapshot speaks of: traces, segments' device ordinals and the cudasnap
 * statistics, whichever reaches furthest (at most CS_VIEW_MAX_DEVICES). */
int cs_view_device_count(const cJSON *root);
enum { CS_VIEW_MAX_DEVICES = 1024 };

/* The `device` of a segment, -1 when it has none (the viewer never shows such segments). */
int cs_view_segment_device(const cJSON *segment);

typedef enum cs_view_state_e {
  CS_VIEW_ALLOCATED = 0, /* active_allocated: the program holds it */
  CS_VIEW_PENDING = 1,   /* active_pending_free: freed, waiting on other streams */
  CS_VIEW_INACTIVE = 2,  /* inactive, or a state the viewer does not know (it shows those as free) */
} cs_view_state_t;

/* One block of a segment, as the viewer sees it. */
typedef struct cs_view_block_s {
  const cJSON *item;
  int64_t addr;          /* segment address + the sizes before it (the viewer ignores `address`) */
  int64_t size;
  int64_t requested;     /* requested_size, or size for legacy blocks without it (or a bad one) */
  cs_view_state_t state;
  const cJSON *frames;   /* NULL when absent */
} cs_view_block_t;

/* Walks the blocks of one segment: cs_view_blocks_begin, then cs_view_blocks_next until false.
 * Blocks whose size is not a non-negative integer are skipped (the viewer draws NaN geometry). */
typedef struct cs_view_blocks_s {
  const cJSON *next;
  int64_t addr;
} cs_view_blocks_t;

void cs_view_blocks_begin(cs_view_blocks_t *it, const cJSON *segment);
bool cs_view_blocks_next(cs_view_blocks_t *it, cs_view_block_t *out);

/* Walks the blocks of every segment of one device, segment after segment, the same way. */
typedef struct cs_view_device_blocks_s {
  const cJSON *next_segment;
  int device;
  cs_view_blocks_t blocks;
} cs_view_device_blocks_t;

void cs_view_device_blocks_begin(cs_view_device_blocks_t *it, const cJSON *root, int device);
bool cs_view_device_blocks_next(cs_view_device_blocks_t *it, cs_view_block_t *out);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Read-only views of a snapshot model (snapshot-format.md section 2; model/doc.h) for the
 * subcommands that interpret one: summary, diff and report.
 *
 * The model has passed the reader and the refusal of meaningless numbers (cli/load.h), not the
 * viewer's other rules: any key may be missing or of the wrong type. Each accessor says what it
 * makes of that, and none of them fails: a snapshot too broken to render still gets a summary of
 * whatever it does hold. A legacy snapshot (a bare list of
 * segments, torch.cuda.memory_snapshot()) is read as one with no traces. */
#ifndef CS_ANALYSIS_SNAPVIEW_H
#define CS_ANALYSIS_SNAPVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"

/* An integer member of obj, exactly (cs_doc_int); false when absent or not an integer. The _key
 * forms take the keys every snapshot uses (CS_KEY_*), found by id with no hashing. */
bool cs_view_int(const cs_doc_t *doc, cs_val_t obj, const char *key, int64_t *out);
bool cs_view_int_key(const cs_doc_t *doc, cs_val_t obj, cs_doc_key_t key, int64_t *out);

/* A string member of obj, or NULL. */
const char *cs_view_str(const cs_doc_t *doc, cs_val_t obj, const char *key);
const char *cs_view_str_key(const cs_doc_t *doc, cs_val_t obj, cs_doc_key_t key);

/* The segments list; CS_VAL_ABSENT when there is none. */
cs_val_t cs_view_segments(const cs_doc_t *doc);

/* device_traces[device]; CS_VAL_ABSENT when there is no such list. */
cs_val_t cs_view_trace(const cs_doc_t *doc, int device);

/* How many devices the snapshot speaks of: traces, segments' device ordinals and the cudasnap
 * statistics, whichever reaches furthest (at most CS_VIEW_MAX_DEVICES). */
int cs_view_device_count(const cs_doc_t *doc);
enum { CS_VIEW_MAX_DEVICES = 1024 };

/* The `device` of a segment, -1 when it has none (the viewer never shows such segments). */
int cs_view_segment_device(const cs_doc_t *doc, cs_val_t segment);

/* How a trace action changes the reserved bytes by its size: +1 for segment_alloc and segment_map
 * (an expandable segment's pages), -1 for segment_free and segment_unmap, 0 for any other. */
int cs_view_segment_sign(const char *action);

typedef enum cs_view_state_e {
  CS_VIEW_ALLOCATED = 0, /* active_allocated: the program holds it */
  CS_VIEW_PENDING = 1,   /* active_pending_free: freed, waiting on other streams */
  CS_VIEW_INACTIVE = 2,  /* inactive, or a state the viewer does not know (it shows those as free) */
} cs_view_state_t;

/* One block of a segment, as the viewer sees it. */
typedef struct cs_view_block_s {
  cs_val_t item;
  cs_val_t segment;      /* the segment it is in */
  int64_t addr;          /* segment address + the sizes before it (the viewer ignores `address`) */
  int64_t size;
  int64_t requested;     /* requested_size, or size for legacy blocks without it (or a bad one) */
  cs_view_state_t state;
  cs_val_t frames;       /* a list (or tuple); CS_VAL_ABSENT when absent or not one */
} cs_view_block_t;

/* Walks the blocks of one segment: cs_view_blocks_begin, then cs_view_blocks_next until false.
 * Blocks whose size is not a non-negative integer are skipped (the viewer draws NaN geometry). */
typedef struct cs_view_blocks_s {
  const cs_doc_t *doc;
  cs_val_t segment;
  const cs_val_t *blocks;
  size_t next, count;
  int64_t addr;
} cs_view_blocks_t;

void cs_view_blocks_begin(cs_view_blocks_t *it, const cs_doc_t *doc, cs_val_t segment);
bool cs_view_blocks_next(cs_view_blocks_t *it, cs_view_block_t *out);

/* Walks the blocks of every segment of one device, segment after segment, the same way. */
typedef struct cs_view_device_blocks_s {
  const cs_val_t *segments;
  size_t next_segment, nsegments;
  int device;
  cs_view_blocks_t blocks;
} cs_view_device_blocks_t;

void cs_view_device_blocks_begin(cs_view_device_blocks_t *it, const cs_doc_t *doc, int device);
bool cs_view_device_blocks_next(cs_view_device_blocks_t *it, cs_view_block_t *out);

#endif

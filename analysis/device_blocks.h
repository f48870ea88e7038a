/* SPDX-License-Identifier: Apache-2.0 */
/* What `summary` and `report` both say about one device of a snapshot: whether it holds anything
 * worth a section, and what its blocks hold at the snapshot (live bytes by allocation site, free
 * bytes inside its segments). */
#ifndef CS_ANALYSIS_DEVICE_BLOCKS_H
#define CS_ANALYSIS_DEVICE_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/sites.h"
#include "model/doc.h"

/* Segments, trace entries or statistics other than zeros? Snapshots list every visible device,
 * used or not, and the `snapshot` mark a dump leaves in every device's trace is no sign of use. */
bool cs_device_used(const cs_doc_t *doc, int device);

/* One walk over a device's blocks. */
typedef struct cs_device_blocks_s {
  cs_sites_t live;   /* active_allocated blocks by site, requested bytes */
  uint64_t rounding; /* size - requested_size of active blocks */
  uint64_t gaps;     /* inactive blocks */
} cs_device_blocks_t;

/* Fill *out (initialized here; cs_device_blocks_free it, also after a failure). Returns 0, or -1
 * without host memory. */
int cs_device_blocks(const cs_doc_t *doc, int device, cs_device_blocks_t *out);
void cs_device_blocks_free(cs_device_blocks_t *b);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a snapshot's live figures are lower bounds: a snapshot recovered from a recording
 * (`cudasnap recover`) is its events replayed, so when the recording's histories had dropped their
 * oldest events (cudasnap.dropped_events > 0), a block allocated before them and untouched since
 * is missing, and every live figure (blocks, bytes, sites, reserved) can only be lower than the
 * process's. A dump copies the allocator's state itself: its live figures are whole whatever its
 * history dropped. summary, check, ranks and the report say so. */
#ifndef CS_ANALYSIS_LOWER_BOUND_H
#define CS_ANALYSIS_LOWER_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"

/* True when doc's live figures are lower bounds; *dropped: the events dropped, *kept: the history
 * size per context then (allocator_settings.trace_alloc_max_entries, 0 when unknown). */
bool cs_lower_bound(const cs_doc_t *doc, uint64_t *dropped, uint64_t *kept);

/* The warning, one sentence without a newline: the live figures are lower bounds, N events were
 * dropped, CUDASNAP_MAX_ENTRIES keeps more. */
void cs_lower_bound_text(uint64_t dropped, uint64_t kept, char *buf, size_t len);

#endif

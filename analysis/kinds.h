/* SPDX-License-Identifier: Apache-2.0 */
/* Which kind of memory a trace entry or an address of a device is: `cache` for the caching
 * allocator's blocks and segments, else the kind of memory passed through (docs/memory-kinds.md:
 * `device`, `pitch`, `managed`, `async`, `array`, `vmm_mapped`, `ipc_imported`, `graph`).
 *
 * A segment of the snapshot carries its kind (`cudasnap.kind`). So does each trace entry of memory
 * passed through in a file that says so (`cudasnap.trace_kinds`, cudasnap's files since they
 * did): there an entry without a kind is the cache's, whether its segment is still there or not.
 * In older cudasnap files an entry has the kind of the segment of the final state that covers its
 * address, and one that no segment covers any more is `unknown` (a pass-through segment freed
 * before the snapshot cannot be told from a released cache segment there). In a PyTorch snapshot
 * all memory is the cache's. */
#ifndef CS_ANALYSIS_KINDS_H
#define CS_ANALYSIS_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"

extern const char cs_kind_cache[];   /* "cache" */
extern const char cs_kind_unknown[]; /* "unknown" */

typedef struct cs_kind_range_s {
  int64_t addr, end;  /* [addr, end) */
  const char *kind;   /* "cache", or a string of the doc */
  int64_t stream;     /* the segment's stream; 0 when it has none */
} cs_kind_range_t;

typedef struct cs_kinds_s {
  const cs_doc_t *doc;
  cs_kind_range_t *ranges; /* by address */
  size_t count;
  const char *uncovered;   /* the kind of an address no segment covers */
  bool trace_kinds;        /* the trace's entries name their kinds (cudasnap.trace_kinds) */
} cs_kinds_t;

/* The segments of `device`. Returns 0, or -1 without host memory. */
int cs_kinds_init(cs_kinds_t *k, const cs_doc_t *doc, int device);
void cs_kinds_free(cs_kinds_t *k);

/* The segment covering addr, or NULL. */
const cs_kind_range_t *cs_kinds_find(const cs_kinds_t *k, int64_t addr);
/* Its kind, or k->uncovered. The strings are the same pointers for the same kind (interned by the
 * doc, or the literals here), so callers may key tables on them. */
const char *cs_kinds_of(const cs_kinds_t *k, int64_t addr);

/* A trace entry's own kind (`cudasnap.kind`), NULL when it names none: in a file whose trace names
 * kinds, the cache's; in any other, not known from the entry. */
const char *cs_kinds_entry_own(const cs_doc_t *doc, cs_val_t entry);

/* The kind of a trace entry of the device at addr (its `addr`): its own, where the trace names
 * kinds, else cs_kinds_of. */
const char *cs_kinds_of_entry(const cs_kinds_t *k, cs_val_t entry, int64_t addr);

/* Are trace entries or segments of this kind the cache's reserved bytes? The cache's are; memory
 * passed through never is; `unknown` (a segment gone, in a file whose trace names no kinds) is
 * counted, as it may have been the cache's. */
static inline bool cs_kinds_reserved(const char *kind) { return kind == cs_kind_cache || kind == cs_kind_unknown; }

/* The kind of a segment of the snapshot, as above. */
const char *cs_kinds_segment(const cs_doc_t *doc, cs_val_t segment);

/* Does the file's trace name the kinds of its entries (cudasnap.trace_kinds)? */
bool cs_kinds_in_trace(const cs_doc_t *doc);

#endif

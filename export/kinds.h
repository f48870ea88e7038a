/* Which kind of memory an address of a device's trace is: `cache` for the caching allocator's
 * blocks, else the kind of memory passed through (docs/memory-kinds.md: `device`, `pitch`,
 * `managed`, `async`, `array`, `vmm_mapped`, `ipc_imported`, `graph`).
 *
 * Trace entries carry no kind; a segment of the snapshot does (`cudasnap.kind`). An address is
 * given the kind of the segment of the final state that covers it. One that no segment covers any
 * more (its segment was freed before the snapshot) is `cache` in a PyTorch snapshot, where all
 * memory is the cache's, and `unknown` in a cudasnap one, where a pass-through segment freed
 * before the snapshot cannot be told from a released cache segment. */
#ifndef CS_EXPORT_KINDS_H
#define CS_EXPORT_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"

typedef struct cs_kind_range_s {
  int64_t addr, end;  /* [addr, end) */
  const char *kind;   /* "cache", or a string of the doc */
  int64_t stream;     /* the segment's stream; 0 when it has none */
} cs_kind_range_t;

typedef struct cs_kinds_s {
  cs_kind_range_t *ranges; /* by address */
  size_t count;
  const char *uncovered;   /* the kind of an address no segment covers */
} cs_kinds_t;

/* The segments of `device`. Returns 0, or -1 without host memory. */
int cs_kinds_init(cs_kinds_t *k, const cs_doc_t *doc, int device);
void cs_kinds_free(cs_kinds_t *k);

/* The segment covering addr, or NULL. */
const cs_kind_range_t *cs_kinds_find(const cs_kinds_t *k, int64_t addr);
/* Its kind, or k->uncovered. The strings are the same pointers for the same kind (interned by the
 * doc, or the literals here), so callers may key tables on them. */
const char *cs_kinds_of(const cs_kinds_t *k, int64_t addr);

/* The kind of a segment of the snapshot, as above. */
const char *cs_kinds_segment(const cs_doc_t *doc, cs_val_t segment);

extern const char cs_kind_cache[]; /* "cache" */

#endif

/* The out-of-memory answer: what failed and why, from a snapshot's last `oom` trace entry (PyTorch's
 * and cudasnap's both write one: size, stream, device_free, frames, time) and what the snapshot
 * knows around it: the driver's total (cudasnap.memory), the cache's segments, the live sites.
 * Every view of an OOM snapshot leads with it (summary, check, the report's first screen, ranks'
 * OOM column, Perfetto's OOM event). */
#ifndef CS_ANALYSIS_OOM_H
#define CS_ANALYSIS_OOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/sites.h"
#include "model/doc.h"

typedef enum cs_oom_verdict_e {
  CS_OOM_FRAGMENTED,  /* enough free inside the cache's segments, no free block big enough */
  CS_OOM_OUTSIDE,     /* the device's memory held outside the cache would have made room */
  CS_OOM_EXHAUSTED,   /* the cache holds the memory, allocated: the top sites hold it */
  CS_OOM_UNDECIDED,   /* not fragmentation, and without the driver's total nothing more is known */
} cs_oom_verdict_t;

enum { CS_OOM_HOLDERS = 3 };

typedef struct cs_oom_s {
  bool found;            /* an oom trace entry was found; nothing below is set otherwise */
  uint64_t count;        /* oom entries in all traces */
  int device;
  size_t index;          /* the entry's index in its device's trace */
  uint64_t requested;    /* the size asked */
  int64_t stream;
  int64_t time_us;       /* -1: unknown */
  bool free_known;       /* device_free, the driver's free bytes at the failure */
  uint64_t driver_free;
  bool total_known;      /* cudasnap.memory[].driver_total (a device's total does not change) */
  uint64_t driver_total;
  cs_site_t site;        /* who asked (name NULL: no stack) */
  bool pytorch;          /* PyTorch's own snapshot (no cudasnap metadata): its setting is
                            PYTORCH_CUDA_ALLOC_CONF, not CUDASNAP_ALLOC_CONF */
  /* The cache, from the snapshot's segments of the device (its own; not memory passed through). */
  uint64_t reserved, allocated, cached_free, largest_free;
  size_t events_after;   /* trace entries after the OOM that change blocks or segments: the cache's
                            figures are the snapshot's, not the failure's, when > 0 */
  uint64_t reserved_then; /* reserved at the failure: reserved less the segment events since */
  uint64_t outside;      /* total - free - reserved_then: other kinds, the context, other processes */
  cs_oom_verdict_t verdict;
  cs_site_total_t holders[CS_OOM_HOLDERS]; /* exhaustion: the top live sites at the snapshot */
  size_t nholders;
} cs_oom_t;

/* Find doc's last OOM (by time, else the last device's last) and fill *out; out->found false when
 * the snapshot has no oom entry. Returns 0, or -1 without host memory. */
int cs_oom_find(const cs_doc_t *doc, cs_oom_t *out);

/* "Tried to allocate 48.00 MiB; 24.00 MiB free of 80.00 GiB": PyTorch's words. */
void cs_oom_headline(const cs_oom_t *o, char *buf, size_t len);

/* The verdict in one sentence (with the setting that helps, for fragmentation). */
void cs_oom_verdict_text(const cs_oom_t *o, char *buf, size_t len);

/* The answer as lines, each begun with `indent`: the headline with device and stream, the site and
 * up to `callers` of its user callers, the cache, the verdict, the holders. */
void cs_oom_write(FILE *out, const cs_doc_t *doc, const cs_oom_t *o, const char *indent, size_t callers);

#endif

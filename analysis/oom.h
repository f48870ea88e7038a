/* SPDX-License-Identifier: Apache-2.0 */
/* The out-of-memory answer: what failed and why, from a snapshot's last `oom` trace entry (PyTorch's
 * and cudasnap's both write one: size, stream, device_free, frames, time) and what the snapshot
 * knows around it: the driver's total (cudasnap.memory), the cache's segments, the live sites.
 * Every view of a snapshot with an OOM leads with it (summary, check, the report's first screen,
 * ranks' OOM column, Perfetto's OOM event).
 *
 * The answer is about the moment of the OOM, so that every snapshot taken after it (the OOM
 * snapshot, a later dump, the one at exit) and `cudasnap recover` give the same one
 * (docs/snapshots.md, "The out-of-memory answer"):
 *   - the cache's reserved bytes then: the segments of the snapshot, with the cache's segment
 *     events since undone; memory passed through is never the cache's (analysis/kinds.h);
 *   - its blocks then (allocated, free, the largest free block): as cudasnap recorded them when it
 *     answered (the oom entry's `cudasnap.cache`), else the snapshot's own where no event came
 *     after the OOM, else not known;
 *   - the blocks live then, by site, and the memory passed through live then: the trace replayed
 *     forward to the OOM (analysis/peak.h). */
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
  CS_OOM_UNDECIDED,   /* not fragmentation (or not known), and without the driver's total nothing more */
} cs_oom_verdict_t;

/* cudasnap's settings that would have made room for a fragmented OOM (docs/configuration.md). */
enum {
  CS_OOM_HELPS_IPC_SMALL = 1,       /* CUDASNAP_ALLOC_CONF=ipc_small:True */
  CS_OOM_HELPS_NO_SPLIT_LARGE = 2,  /* CUDASNAP_ALLOC_CONF without split_large:True */
  CS_OOM_HELPS_TOGETHER = 4,        /* both, and neither alone */
};

enum { CS_OOM_HOLDERS = 3, CS_OOM_KINDS = 16 };

/* Bytes of one kind of memory passed through. */
typedef struct cs_oom_kind_s {
  const char *kind;
  uint64_t bytes;
} cs_oom_kind_t;

typedef struct cs_oom_s {
  bool found;            /* an oom trace entry was found; nothing below is set otherwise */
  uint64_t count;        /* oom entries in all traces */
  bool last;             /* this is the last of them (cs_oom_find's) */
  int device;
  size_t index;          /* the entry's index in its device's trace */
  uint64_t requested;    /* the size asked */
  int64_t stream;
  int64_t time_us;       /* -1: unknown */
  const char *kind;      /* the kind of memory passed through the failed call asked for (its
                            entry's cudasnap.kind); NULL: the cache's */
  bool free_known;       /* device_free, the driver's free bytes at the failure */
  uint64_t driver_free;
  bool total_known;      /* cudasnap.memory[].driver_total (a device's total does not change) */
  uint64_t driver_total;
  cs_site_t site;        /* who asked (name NULL: no stack) */
  bool pytorch;          /* PyTorch's own snapshot (no cudasnap metadata): its setting is
                            PYTORCH_CUDA_ALLOC_CONF, not CUDASNAP_ALLOC_CONF */
  size_t events_after;   /* trace entries after the OOM that change blocks or segments */
  /* The cache at the OOM (its own memory, never memory passed through). */
  uint64_t reserved;     /* its segments' bytes */
  bool blocks_known;     /* the four below are known */
  bool recorded;         /* ... from the figures cudasnap recorded as it answered */
  uint64_t allocated, cached_free, largest_free, small_free;
  /* The device at the OOM. */
  uint64_t outside;      /* total - free - reserved (when both are known): memory passed through,
                            the context and modules, other processes */
  uint64_t passthrough;  /* memory passed through live then (where the trace names kinds) */
  cs_oom_kind_t kinds[CS_OOM_KINDS]; /* of which each kind, most bytes first */
  size_t nkinds;
  bool split_large, ipc_small; /* the cache's settings (allocator_settings) */
  unsigned helps;        /* CS_OOM_HELPS_*: for fragmentation, the settings that would have made room */
  cs_oom_verdict_t verdict;
  cs_site_total_t holders[CS_OOM_HOLDERS]; /* the cache's top live sites at the OOM */
  size_t nholders;
} cs_oom_t;

/* Find doc's last OOM (by time, else the last device's last) and fill *out; out->found false when
 * the snapshot has no oom entry. Returns 0, or -1 without host memory. */
int cs_oom_find(const cs_doc_t *doc, cs_oom_t *out);

/* The same about the oom entry `index` of device's trace (out->found false when it is none). */
int cs_oom_at(const cs_doc_t *doc, int device, size_t index, cs_oom_t *out);

/* "Tried to allocate 48.00 MiB; 24.00 MiB free of 80.00 GiB": PyTorch's words. */
void cs_oom_headline(const cs_oom_t *o, char *buf, size_t len);

/* How a verdict speaks of the sites that held the cache: in the sentence itself, or announced
 * for lines that follow it (cs_oom_write). Either way the sentence is whole: it ends with the sites,
 * with their announcement only when there are some, or says that no block was live. */
typedef enum cs_oom_sites_e { CS_OOM_SITES_INLINE, CS_OOM_SITES_BELOW } cs_oom_sites_t;

/* The verdict in one sentence (with the settings that would have helped, for fragmentation). */
void cs_oom_verdict_text(const cs_oom_t *o, cs_oom_sites_t sites, char *buf, size_t len);

/* The answer as lines, each begun with `indent`: the headline with device and stream, the site and
 * up to `callers` of its user callers, the cache, the device outside it, the verdict, the holders. */
void cs_oom_write(FILE *out, const cs_doc_t *doc, const cs_oom_t *o, const char *indent, size_t callers);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* What a snapshot holds once copied (cs_snap_state_t: segments, blocks, the merged history, the
 * driver's answers, memory passed through) and what is written with it (cs_snapshot_meta_t): the
 * types every part of the snapshot reads, apart from the functions that fill and write them
 * (snapshot/snapshot.h), so that the writer's parts (snap_summary.c, snap_pools.c) depend on the
 * data only. */
#ifndef CS_SNAP_STATE_H
#define CS_SNAP_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocator/allocator.h"
#include "common/cs_options.h"
#include "memviz/passthrough.h"
#include "phases/phases.h"
#include "phases/pools.h"
#include "record/ring.h"
#include "snapshot/job.h"
#include "stats/stats.h"

enum { CS_SNAP_MAX_DEVICES = 64 };
/* Rings whose histories are merged by time; the histories of more rings follow the last one's. */
enum { CS_SNAP_MAX_HISTORIES = 64 };

typedef struct cs_snap_segment_s {
  int device;
  uintptr_t addr;
  size_t size;
  uintptr_t stream;
  bool small;
  uint32_t stack_id;
  size_t first_block;  /* index into blocks */
  size_t block_count;
  int kind;            /* -1: the cache's; else the cs_passthrough_kind_t of memory passed through */
  bool expandable;     /* VMM mappings inside one reserved range (is_expandable) */
} cs_snap_segment_t;

typedef struct cs_snap_block_s {
  size_t size;
  size_t requested;
  cs_block_state_t state;
  uint32_t stack_id;
  const char *user_metadata; /* a pool region's NVTX name (snapshot/snap_pools.h), else NULL */
} cs_snap_block_t;

/* Pass-through memory that is not drawn: physical VMM handles, reservations, pinned host memory
 * (for the leak report and the reconciliation). */
typedef struct cs_snap_other_s {
  cs_passthrough_kind_t kind;
  int device;          /* -1: none */
  size_t size;
  uint32_t stack_id;
} cs_snap_other_t;

/* The driver's answer for one device (device/driver_query.c asks it). */
typedef struct cs_snap_driver_s {
  bool driver_known;       /* cuMemGetInfo answered for this device */
  uint64_t driver_total, driver_free;
  bool pools_known;        /* stream-ordered pools' attributes answered */
  uint64_t pool_reserved, pool_used;
  bool graph_known;        /* the graph memory pool's attributes answered */
  uint64_t graph_reserved, graph_used;
} cs_snap_driver_t;

/* The driver's last answer before the snapshot, for a snapshot that does not ask (a crash, a
 * termination signal): cudasnap.memory[].driver_last. */
typedef struct cs_snap_driver_last_s {
  bool known;              /* an earlier answer was kept */
  uint64_t time_us;        /* wall clock when the driver gave it */
  uint64_t accounted;      /* bytes then: the cache's and the kinds the driver counts directly */
  cs_snap_driver_t answer;
} cs_snap_driver_last_t;

/* The driver at the peak of the memory cudasnap sees on a device (the cache's segments plus
 * device memory passed through): cudasnap.memory[].driver_at_peak. The driver is asked at most
 * once per CS_DRIVER_WATCH_INTERVAL_MS (device/driver_watch.h), so the answer may be of an
 * earlier, lower point: answer_seen < peak_seen then. */
typedef struct cs_snap_driver_peak_s {
  uint64_t peak_seen;      /* bytes; the highest seen, 0: none yet */
  uint64_t peak_time_us;   /* wall clock when it was first reached */
  bool answered;           /* an answer was taken on the way up (or at the peak) */
  uint64_t answer_seen;    /* bytes seen when it was taken; == peak_seen: at the peak */
  uint64_t answer_accounted; /* of those, the cache's and the kinds the driver counts directly
                                (not stream-ordered or graph allocations: in the pools' bytes) */
  uint64_t answer_time_us; /* wall clock */
  cs_snap_driver_t answer;
} cs_snap_driver_peak_t;

/* What a device's memory is made of at the snapshot (the reconciliation, docs/memory-kinds.md). */
typedef struct cs_snap_device_memory_s {
  cs_snap_driver_t driver;  /* asked right after the copy, unless driver_not_asked */
  cs_snap_driver_last_t last; /* filled only when the driver was not asked */
  cs_snap_driver_peak_t peak;
  uint64_t kind_bytes[CS_PASSTHROUGH_KINDS];
  uint64_t kind_count[CS_PASSTHROUGH_KINDS];
} cs_snap_device_memory_t;

/* A history entry's user_metadata (an NVTX region's name on its alloc), by the entry's index. */
typedef struct cs_snap_entry_note_s {
  size_t index;
  const char *user_metadata;
} cs_snap_entry_note_t;

typedef struct cs_snap_state_s {
  cs_snap_segment_t *segments;
  size_t segment_count, segment_capacity;
  cs_snap_block_t *blocks;
  size_t block_count, block_capacity;
  cs_ring_entry_t *entries;   /* the history, oldest first; times in wall-clock us */
  size_t entry_count, entry_capacity;
  uint32_t *copy_threads;     /* entry_capacity: where a copy puts its entries' threads */
  cs_snap_entry_note_t *entry_notes; /* by index, ascending; the strings outlive the state */
  size_t entry_note_count;
  uint64_t dropped;           /* history entries the rings had to drop */
  size_t history_start[CS_SNAP_MAX_HISTORIES]; /* where each ring's copy starts in entries */
  int history_count;          /* rings copied; more than one are merged by time */
  cs_stream_table_t streams;  /* of the entries' stream indexes */
  cs_stats_t stats[CS_SNAP_MAX_DEVICES];
  cs_snap_other_t *others;    /* pass-through memory not drawn */
  size_t other_count, other_capacity;
  cs_snap_device_memory_t memory[CS_SNAP_MAX_DEVICES + 1]; /* the last: no device (host) */
  cs_passthrough_stat_t passthrough[CS_SNAP_MAX_DEVICES + 1][CS_PASSTHROUGH_KINDS];
  bool has_passthrough;       /* pass-through was recorded (the figures above are filled) */
  /* Why the driver was not asked for its side of the reconciliation ("crash", "termination
   * signal"), NULL when it was asked (a device without an answer then had no usable context). */
  const char *driver_not_asked;
  int device_count;           /* device_traces has this many lists */
  int error;                  /* -CS_EHOSTMEM when a copy could not grow */
} cs_snap_state_t;

/* Who wrote the snapshot, and why: the `cudasnap` key and `allocator_settings`. */
/* Whether the program went on allocating successfully after an out-of-memory snapshot's OOM. */
typedef enum cs_oom_recovery_e {
  CS_OOM_RECOVERY_UNKNOWN = 0, /* not known when written (or not an OOM snapshot) */
  CS_OOM_RECOVERED = 1,        /* an allocation succeeded after it */
  CS_OOM_NOT_RECOVERED = 2,    /* none had when the process ended */
} cs_oom_recovery_t;

typedef struct cs_snapshot_meta_s {
  const char *version;
  long pid;
  const char *const *argv;    /* NULL-terminated, may be NULL */
  const char *host;
  const cs_job_t *job;        /* cudasnap.job (NULL: not written) */
  const char *trigger;        /* exit, signal, oom, api, crash, term */
  int dump_number;
  uint64_t time_us;           /* wall clock, us since the epoch */
  const cs_options_t *options;
  const char *alloc_conf_text; /* CUDASNAP_ALLOC_CONF as given ("" if unset) */
  const cs_phase_list_t *phases; /* external_annotations (NULL: none) */
  const cs_pool_list_t *pools;    /* cudasnap.pools: NVTX-declared pools (NULL: none) */
  const char *best_effort;    /* NULL, or what a snapshot taken as the process ended left out */
  cs_oom_recovery_t oom_recovered; /* trigger oom only: cudasnap.oom_recovered, omitted if unknown */
  uint64_t oom_coalesced;     /* trigger oom only: later OOMs folded into this snapshot */
  /* Called now and then while writing (NULL: not), with the items written and their total. */
  void (*progress)(void *ctx, size_t done, size_t total);
  void *progress_ctx;
} cs_snapshot_meta_t;

/* Number of history entries and of live blocks, for the one-line report. */
static inline size_t cs_snap_state_events(const cs_snap_state_t *s) { return s->entry_count; }

/* True when there is nothing to show (no segment, no history): the viewer cannot open such a file
 * (snapshot-format.md section 3.6). */
static inline bool cs_snap_state_empty(const cs_snap_state_t *s) {
  return s->segment_count == 0 && s->entry_count == 0;
}

#endif

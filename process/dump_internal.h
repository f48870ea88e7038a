/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the snapshot writer (dump_write.c) and the triggers (dump_trigger.c); not for other
 * files, which use process/dump.h. */
#ifndef CS_DUMP_INTERNAL_H
#define CS_DUMP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "phases/pools.h"
#include "process/dump.h"
#include "snapshot/snapshot.h"

/* What one dump does. */
typedef struct cs_dump_how_s {
  cs_trigger_t trigger;
  const char *path; /* NULL: named from CUDASNAP_OUTPUT */
  bool snapshot;    /* write the file (else only the leak report) */
  bool leaks;       /* the leak report after it */
  bool ending;      /* the process ends: no CUDA call, no `snapshot` entry in the histories */
  char *written;    /* when not NULL: the name the file was written under, NUL-terminated */
  size_t written_len;
} cs_dump_how_t;

/* The state one dump writes, copied at its moment. */
typedef struct cs_dump_copy_s {
  cs_snap_state_t *state;     /* on the heap (70 KB); NULL: no host memory */
  cs_pool_list_t pools;
  uint64_t left_out;          /* devices left out: their allocator's lock was not had in time */
  bool passthrough_left_out;  /* the memory passed through, likewise */
  bool pools_left_out;        /* the NVTX pools, likewise */
  uint64_t time_us;           /* when copied, us since the epoch */
  int64_t allocations;        /* successful allocations so far, every device (an OOM's recovery) */
} cs_dump_copy_t;

/* What an OOM snapshot says of its OOM (cs_snapshot_meta_t). */
typedef struct cs_dump_oom_note_s {
  cs_oom_recovery_t recovered;
  uint64_t coalesced;
} cs_dump_oom_note_t;


/* Copy the state how asks for: 0, or -1 when host memory ran out (reported). No dump lock. */
int cs_dump_copy_take(cs_dump_copy_t *c, const cs_dump_how_t *how);
void cs_dump_copy_free(cs_dump_copy_t *c);

/* Write a copy (under the dump lock): 0 when a file was written, else -1 (reported). */
int cs_dump_run_copy(cs_dump_copy_t *c, const cs_dump_how_t *how, const cs_dump_oom_note_t *oom);

/* Copy and write, under the dump lock: 0 (with how->written: the name's length) or -1. */
int cs_dump_run(const cs_dump_how_t *how);

/* Progress of any dump (cs_dump_progress). */
void cs_dump_tick(void);

/* The final snapshot: true for the one caller that is to write it. */
bool cs_dump_final_begin(void);
void cs_dump_final_end(void);

/* fork: the writer's state in the child. */
void cs_dump_write_postfork_child(void);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a recording file (CUDASNAP_RECORD; format and guarantees in record/recfile.h), for
 * `cudasnap recover`. Only the format header is shared with the library; no record/ code.
 *
 * The file may end anywhere and hold anything: every offset, count and length is checked against
 * the bytes there are before it is used, and what does not hold up is one line saying so. Ring
 * entries are taken in push order and only when whole: an entry whose tag is not its push
 * number's is damaged (counted, left out); the entry the process was writing when it died is
 * counted as lost at the end. */
#ifndef CS_RECORDING_H
#define CS_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cs_alloc_conf.h"
#include "record/ring_entry.h"

typedef struct cs_rec_ring_s {
  int device;               /* CS_RECFILE_RING_PASSTHROUGH: the ring of memory passed through */
  bool passthrough;
  uint64_t capacity;
  uint64_t published;       /* entries the ring said it had pushed */
  cs_ring_entry_t *entries; /* whole entries, oldest first; when: us since the epoch, stream: index,
                               stack_id: without the kind's bits */
  int8_t *kinds;            /* the pass-through ring's: each entry's kind (memviz/passthrough.h);
                               NULL for a context's ring (the cache's memory) */
  size_t count;
  uint64_t dropped;         /* older entries the ring had overwritten */
  uint64_t damaged;         /* entries of the ring's window whose tag did not match (left out) */
  uint64_t lost_at_end;     /* 1 when an entry was being written at the end, else 0 */
} cs_rec_ring_t;

typedef struct cs_rec_stack_s {
  uint32_t n;               /* 0: unknown id (its stack did not reach the file) */
  const uint64_t *pcs;      /* into the file's bytes, innermost first */
} cs_rec_stack_t;

typedef struct cs_rec_module_s {
  uint64_t lo, hi, bias;
  const char *path;         /* into the file's bytes */
  const unsigned char *build_id; /* into the file's bytes; build_id_len 0: none recorded */
  size_t build_id_len;
} cs_rec_module_t;

typedef struct cs_recording_s {
  unsigned char *data;      /* the file's bytes */
  size_t len;
  uint32_t version;         /* the format's: 1 recorded the cache's memory only */
  long pid;
  const char *exe;
  const char *argv[64];     /* NULL-terminated */
  uint64_t max_entries;
  bool tsc;
  bool conf_known;          /* the allocator's settings that size blocks were recorded: */
  cs_alloc_conf_t conf;     /* max_split_size, roundup_power2_divisions, split_large, ipc_small
                               (the other fields: defaults) */
  cs_rec_ring_t *rings;
  size_t ring_count;
  cs_rec_stack_t *stacks;   /* by id - 1 */
  size_t stack_count;
  cs_rec_module_t *modules;
  size_t module_count;
} cs_recording_t;

/* Parse a recording held in memory (rec takes data, which must come from malloc, and frees it).
 * 0, or -1 with the problem in why (the data is freed then too). */
int cs_recording_parse(unsigned char *data, size_t len, cs_recording_t *rec, char *why, size_t why_len);

/* Read and parse the file at path; problems as for cs_recording_parse (or the read's error). */
int cs_recording_read(const char *path, cs_recording_t *rec, char *why, size_t why_len);

void cs_recording_free(cs_recording_t *rec);

/* The PCs of a stack id, or NULL (n = 0). */
const uint64_t *cs_recording_stack(const cs_recording_t *rec, uint32_t id, size_t *n);

#endif

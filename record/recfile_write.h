/* SPDX-License-Identifier: Apache-2.0 */
/* Writing the recording file (record/recfile.h has the format and what a death leaves in it).
 *
 * One per process, made at activation when CUDASNAP_RECORD is set. The file is mapped once, at its
 * largest size (header, module records, the stack log's bound, CS_RECFILE_MAX_RINGS ring
 * sections); the file itself grows as sections come into use, each backed on disk when it is
 * added (fallocate), so a full disk is reported then and never turns into a SIGBUS in the
 * program later. Rings are pushed to as usual (record/ring.h); the stack log is written by the
 * intern table's mirror, under its insert lock; the module map when new stacks appear and the
 * loader's module count has changed. Nothing here is on the allocation hot path except what
 * ring.c does. */
#ifndef CS_RECFILE_WRITE_H
#define CS_RECFILE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cs_alloc_conf.h"
#include "record/ring.h"

typedef struct cs_recfile_writer_s cs_recfile_writer_t;

typedef struct cs_recfile_params_s {
  uint64_t max_entries;  /* each ring's capacity */
  uint32_t stack_depth;  /* PCs per stack at most */
  size_t max_stacks;     /* the intern table's bound */
  bool argv;             /* keep the command line in the header (CUDASNAP_ARGV), else argc 0 */
  const cs_alloc_conf_t *conf; /* the allocator's settings, for the blocks' sizes; NULL: none */
} cs_recfile_params_t;

/* Lay the file out in `fd` (an empty file the caller names; the writer keeps a duplicate of fd)
 * and map it. NULL with *err set (an errno) when it cannot be; the caller reports it. */
cs_recfile_writer_t *cs_recfile_create(int fd, const cs_recfile_params_t *params, int *err);

/* Give r a ring section of the file for `device` (cs_ring_init_mapped). False when none is left
 * or the disk refuses the space: the caller keeps the ring in memory. Cold: at context creation,
 * under the caller's lock (one call at a time). */
bool cs_recfile_add_ring(cs_recfile_writer_t *w, cs_ring_t *r, int device);

/* The intern table's mirror (record/intern.h): appends the stack to the log. */
void cs_recfile_add_stack(void *writer, uint32_t id, const uintptr_t *pcs, size_t n);

/* Record the modules loaded now that are not recorded yet, when the loader's count of loads and
 * unloads has changed since the last call. Cheap when it has not (one dl_iterate_phdr callback).
 * Skipped when another thread is at it. Call with no lock held: it takes the loader's. */
void cs_recfile_note_modules(cs_recfile_writer_t *w);

/* In a fork child: the mapping becomes private anonymous memory (zeros) in place, so whatever the
 * child pushes never reaches the parent's file. The writer is then inert. */
void cs_recfile_detach(cs_recfile_writer_t *w);

/* In a fork child that activates anew: a new file in fd, mapped where the detached writer's
 * mapping was, so that the rings the child kept (cleared at the fork, pointing there) record into
 * it, with what they recorded since the fork; old is freed. NULL with *err set when that cannot be
 * (old stays, detached). */
cs_recfile_writer_t *cs_recfile_reopen(cs_recfile_writer_t *old, int fd, int *err);

/* Unmap and free (tests; the library keeps its writer until the process ends). */
void cs_recfile_close(cs_recfile_writer_t *w);

#endif

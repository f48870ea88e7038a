/* SPDX-License-Identifier: Apache-2.0 */
/* Who wrote a snapshot within its job: the process's rank, local rank and the job's size and id,
 * from the launcher's variables (torchrun, Open MPI, MPICH/PMI, Slurm), and the machine's name.
 * Written into every snapshot as `cudasnap.job` (docs/ranks.md), so that `cudasnap ranks` can tell
 * the ranks of a job apart without trusting file names.
 *
 * Read once, when the options are (process/runtime.c): the environment of a running program may
 * change, and a snapshot must not call getenv on the way. */
#ifndef CS_SNAPSHOT_JOB_H
#define CS_SNAPSHOT_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "memviz/emit.h"

typedef struct cs_job_s {
  int64_t rank;        /* -1: not known (no variable set, or not a number) */
  int64_t local_rank;  /* -1: not known */
  int64_t world_size;  /* -1: not known */
  char job_id[128];    /* "": not known */
  char host[256];      /* gethostname(); "" when it failed */
} cs_job_t;

/* Fill job from a NULL-terminated "NAME=value" array (environ in the library, synthetic arrays in
 * the unit test). For each field the first variable set to something non-empty decides:
 *   rank        RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
 *   local_rank  LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID
 *   world_size  WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS
 *   job_id      SLURM_JOB_ID, TORCHELASTIC_RUN_ID
 * torchrun's own variables come first: under `srun torchrun`, SLURM_PROCID counts nodes, not
 * ranks. CUDASNAP_OUTPUT's %r takes the same order (memviz/output.c). A value that is not a non-negative decimal number leaves its field unknown, with one
 * warning line (cudasnap: warning: ...). host is left to the caller. */
void cs_job_parse(const char *const *envp, cs_job_t *job);

/* The `job` dict of the cudasnap key: the known fields only (host whenever it is not empty). */
void cs_job_write(cs_emitter_t *e, const cs_job_t *job);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#include "snapshot/job.h"

#include <stdio.h>
#include <string.h>

#include "common/cs_log.h"

/* The launchers' variables for one field, the most specific first (contract in job.h). */
static const char *const cs_job_rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
static const char *const cs_job_local_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                                "SLURM_LOCALID", NULL};
static const char *const cs_job_size_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
                                               NULL};
static const char *const cs_job_id_vars[] = {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", NULL};

/* envp's value of name, NULL when absent or empty. */
static const char *cs_job_getenv(const char *const *envp, const char *name) {
  size_t n = strlen(name);
  for (const char *const *p = envp; p && *p; p++)
    if (strncmp(*p, name, n) == 0 && (*p)[n] == '=') return (*p)[n + 1] ? *p + n + 1 : NULL;
  return NULL;
}

/* The first of vars that is set, and its name. */
static const char *cs_job_first(const char *const *envp, const char *const *vars, const char **name) {
  for (; *vars; vars++) {
    const char *v = cs_job_getenv(envp, *vars);
    if (v) {
      *name = *vars;
      return v;
    }
  }
  return NULL;
}

/* A non-negative decimal below 2^31 (ranks and sizes; a larger one is a typo, not a job). */
static int64_t cs_job_number(const char *const *envp, const char *const *vars) {
  const char *name = NULL;
  const char *text = cs_job_first(envp, vars, &name);
  if (!text) return -1;
  int64_t v = 0;
  const char *p = text;
  for (; *p >= '0' && *p <= '9' && v < INT32_MAX; p++) v = v * 10 + (*p - '0');
  if (*p == '\0' && p != text && v <= INT32_MAX) return v;
  cs_log_warn("%s='%.64s' is not a number: the snapshots' cudasnap.job leaves it out", name, text);
  return -1;
}

void cs_job_parse(const char *const *envp, cs_job_t *job) {
  memset(job, 0, sizeof *job);
  job->rank = cs_job_number(envp, cs_job_rank_vars);
  job->local_rank = cs_job_number(envp, cs_job_local_vars);
  job->world_size = cs_job_number(envp, cs_job_size_vars);
  const char *name = NULL;
  const char *id = cs_job_first(envp, cs_job_id_vars, &name);
  if (id) snprintf(job->job_id, sizeof job->job_id, "%s", id);
}

static void cs_job_kv(cs_emitter_t *e, const char *key, int64_t value) {
  if (value < 0) return;
  cs_emit_key(e, key);
  cs_emit_int(e, value);
}

void cs_job_write(cs_emitter_t *e, const cs_job_t *job) {
  cs_emit_dict_begin(e);
  cs_job_kv(e, "rank", job->rank);
  cs_job_kv(e, "local_rank", job->local_rank);
  cs_job_kv(e, "world_size", job->world_size);
  if (job->job_id[0]) {
    cs_emit_key(e, "job_id");
    cs_emit_str(e, job->job_id);
  }
  if (job->host[0]) {
    cs_emit_key(e, "host");
    cs_emit_str(e, job->host);
  }
  cs_emit_dict_end(e);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for snapshot/job.c: which launcher variable decides each field, bad values (left
 * out, one warning line each), and the `job` dict as written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "memviz/emit.h"
#include "memviz/sink.h"
#include "snapshot/job.h"
#include "tests/unit/log_capture.h"

static void test_torchrun(void **state) {
  (void)state;
  const char *envp[] = {"PATH=/bin", "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8", "TORCHELASTIC_RUN_ID=abc", NULL};
  cs_job_t job;
  cs_job_parse(envp, &job);
  assert_int_equal(job.rank, 3);
  assert_int_equal(job.local_rank, 1);
  assert_int_equal(job.world_size, 8);
  assert_string_equal(job.job_id, "abc");
  assert_string_equal(captured(), "");
}

static void test_launchers(void **state) {
  (void)state;
  cs_job_t job;
  const char *ompi[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_LOCAL_RANK=2", "OMPI_COMM_WORLD_SIZE=16", NULL};
  cs_job_parse(ompi, &job);
  assert_true(job.rank == 5 && job.local_rank == 2 && job.world_size == 16 && job.job_id[0] == '\0');
  const char *mpich[] = {"PMI_RANK=7", "MPI_LOCALRANKID=3", "PMI_SIZE=9", NULL};
  cs_job_parse(mpich, &job);
  assert_true(job.rank == 7 && job.local_rank == 3 && job.world_size == 9);
  const char *slurm[] = {"SLURM_PROCID=11", "SLURM_LOCALID=0", "SLURM_NTASKS=12", "SLURM_JOB_ID=4242",
                         "TORCHELASTIC_RUN_ID=x", NULL};
  cs_job_parse(slurm, &job);
  assert_true(job.rank == 11 && job.local_rank == 0 && job.world_size == 12);
  assert_string_equal(job.job_id, "4242");
  /* torchrun under srun: SLURM_PROCID is the node's task, RANK the process's */
  const char *both[] = {"SLURM_PROCID=1", "RANK=9", NULL};
  cs_job_parse(both, &job);
  assert_int_equal(job.rank, 9);
  const char *none[] = {"RANK=", NULL}; /* empty counts as unset */
  cs_job_parse(none, &job);
  assert_true(job.rank == -1 && job.local_rank == -1 && job.world_size == -1);
  assert_string_equal(captured(), "");
}

static void test_bad_values(void **state) {
  (void)state;
  const char *envp[] = {"RANK=two", "LOCAL_RANK=-1", "WORLD_SIZE=99999999999999999999", NULL};
  cs_job_t job;
  cs_job_parse(envp, &job);
  assert_true(job.rank == -1 && job.local_rank == -1 && job.world_size == -1);
  const char *log = captured();
  assert_non_null(strstr(log, "cudasnap: warning: RANK='two' is not a number"));
  assert_non_null(strstr(log, "LOCAL_RANK='-1'"));
  assert_non_null(strstr(log, "WORLD_SIZE="));
  int lines = 0;
  for (const char *p = log; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, 3);
}

static void test_write(void **state) {
  (void)state;
  cs_job_t job = {.rank = 2, .local_rank = -1, .world_size = 4, .job_id = "", .host = "node1"};
  cs_mem_sink_t sink;
  cs_mem_sink_init(&sink);
  cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(&sink), 2);
  assert_non_null(e);
  cs_job_write(e, &job);
  assert_int_equal(cs_emit_finish(e), 0);
  static const char want[] = "{\"rank\":2,\"world_size\":4,\"host\":\"node1\"}\n"; /* finish adds the newline */
  assert_int_equal(sink.len, strlen(want));
  assert_memory_equal(sink.data, want, sink.len);
  cs_mem_sink_free(&sink);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_torchrun),
      cmocka_unit_test(test_launchers),
      cmocka_unit_test(test_bad_values),
      cmocka_unit_test(test_write),
  };
  return cmocka_run_group_tests(tests, log_capture_setup, log_capture_teardown);
}

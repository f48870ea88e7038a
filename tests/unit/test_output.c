/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot file names and writing: the CUDASNAP_OUTPUT pattern, an existing file never replaced,
 * no partial file left behind, and an unwritable directory reported as an error; and what the
 * report of a written JSON file says about its size (memviz/viewer_limit.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "memviz/output.h"
#include "memviz/viewer_limit.h"

static const cs_output_fields_t fields = {.executable = "train", .pid = 4711, .host = "node7",
                                          .rank = "3", .dump_number = 2, .trigger = "signal"};

static void test_expand(void **state) {
  (void)state;
  char buf[256];
  assert_int_equal(cs_output_expand("cudasnap-%e-%p-%n-%t.json", &fields, buf, sizeof buf), 0);
  assert_string_equal(buf, "cudasnap-train-4711-2-signal.json");
  assert_int_equal(cs_output_expand("/runs/%h/r%r/%e.%p.%%.pickle", &fields, buf, sizeof buf), 0);
  assert_string_equal(buf, "/runs/node7/r3/train.4711.%.pickle");
  assert_int_equal(cs_output_expand("plain", &fields, buf, sizeof buf), 0);
  assert_string_equal(buf, "plain");
  assert_int_equal(cs_output_expand("%e-%e-%e", &fields, buf, 10), -1); /* does not fit */
}

static void test_rank_from_launcher(void **state) {
  (void)state;
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("PMI_RANK");
  unsetenv("SLURM_PROCID");
  unsetenv("RANK");
  assert_string_equal(cs_output_rank(), "0");
  setenv("SLURM_PROCID", "9", 1);
  assert_string_equal(cs_output_rank(), "9");
  setenv("RANK", "5", 1); /* earlier in the list wins: torchrun's rank under srun */
  assert_string_equal(cs_output_rank(), "5");
  unsetenv("RANK");
  unsetenv("SLURM_PROCID");
}

static int write_file(const char *path, const char *text, char *final, size_t len) {
  cs_output_t out;
  int err = cs_output_open(&out, path);
  if (err) return err;
  if (write(out.fd, text, strlen(text)) != (ssize_t)strlen(text)) {
    cs_output_abort(&out);
    return EIO;
  }
  err = cs_output_commit(&out, path);
  if (!err) snprintf(final, len, "%s", out.final_path);
  return err;
}

static void read_file(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = '\0';
  fclose(f);
}

static void test_never_replaces(void **state) {
  (void)state;
  char dir[] = "/tmp/cs_output_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512], final[4096], text[64];
  snprintf(path, sizeof path, "%s/snap.json", dir);
  assert_int_equal(write_file(path, "first", final, sizeof final), 0);
  assert_string_equal(final, path);
  assert_int_equal(write_file(path, "second", final, sizeof final), 0);
  char expect[512];
  snprintf(expect, sizeof expect, "%s/snap-1.json", dir);
  assert_string_equal(final, expect);
  assert_int_equal(write_file(path, "third", final, sizeof final), 0);
  snprintf(expect, sizeof expect, "%s/snap-2.json", dir);
  assert_string_equal(final, expect);
  read_file(path, text, sizeof text);
  assert_string_equal(text, "first");
  read_file(expect, text, sizeof text);
  assert_string_equal(text, "third");
  /* an aborted write leaves nothing behind */
  cs_output_t out;
  char other[512];
  snprintf(other, sizeof other, "%s/aborted.json", dir);
  assert_int_equal(cs_output_open(&out, other), 0);
  cs_output_abort(&out);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 3", dir);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_unwritable_directory(void **state) {
  (void)state;
  char final[4096];
  int err = write_file("/nonexistent-dir/snap.json", "x", final, sizeof final);
  assert_int_equal(err, ENOENT);
  if (geteuid() != 0) { /* root writes anywhere */
    char dir[] = "/tmp/cs_output_ro_XXXXXX";
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0555);
    char path[512];
    snprintf(path, sizeof path, "%s/snap.json", dir);
    assert_int_equal(write_file(path, "x", final, sizeof final), EACCES);
    chmod(dir, 0755);
    rmdir(dir);
  }
}

/* Up to the limit the line says where to open the file; above it, that a browser will not
 * reliably, and which variable writes a pickle instead. */
static void test_json_size_advice(void **state) {
  (void)state;
  assert_int_equal(CS_VIEWER_JSON_LIMIT, 256u << 20);
  assert_string_equal(cs_viewer_json_advice(1000), "open it at https://pytorch.org/memory_viz");
  assert_string_equal(cs_viewer_json_advice(CS_VIEWER_JSON_LIMIT), "open it at https://pytorch.org/memory_viz");
  const char *big = cs_viewer_json_advice(CS_VIEWER_JSON_LIMIT + 1);
  assert_non_null(strstr(big, "too big for the viewer in a browser"));
  assert_non_null(strstr(big, "CUDASNAP_FORMAT=pickle"));
  assert_null(strchr(big, '\n')); /* one line */
  assert_string_equal(cs_viewer_json_advice(UINT64_MAX), big);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_size_advice),
      cmocka_unit_test(test_expand),
      cmocka_unit_test(test_rank_from_launcher),
      cmocka_unit_test(test_never_replaces),
      cmocka_unit_test(test_unwritable_directory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

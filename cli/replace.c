/* SPDX-License-Identifier: Apache-2.0 */
/* Output files that replace what is at their name (contract in cli/replace.h). */
#include "cli/replace.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int cs_replace_commit(cs_output_t *out, const char *path) {
  int err = 0;
  if (fsync(out->fd) != 0 && errno != EINVAL) err = errno;
  if (close(out->fd) != 0 && err == 0) err = errno;
  out->fd = -1;
  if (err == 0 && rename(out->temp_path, path) != 0) err = errno;
  if (err != 0) {
    cs_output_abort(out);
    return err;
  }
  snprintf(out->final_path, sizeof out->final_path, "%s", path);
  return 0;
}

bool cs_replace_same_file(const char *in, const char *out) {
  struct stat a, b;
  return stat(in, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* A directory's snapshot files (contract in cli/snapshot_dir.h). */
#include "cli/snapshot_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

bool cs_snapshot_dir_is(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool cs_snapshot_dir_name(const char *name) {
  static const char *const extensions[] = {".json", ".pickle", ".pkl"};
  if (name[0] == '.' || strstr(name, ".tmp.") != NULL) return false; /* hidden, or being written */
  size_t len = strlen(name);
  for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++) {
    size_t n = strlen(extensions[i]);
    if (len > n && strcmp(name + len - n, extensions[i]) == 0) return true;
  }
  return false;
}

static int cs_snapshot_dir_select(const struct dirent *d) { return cs_snapshot_dir_name(d->d_name); }

int cs_snapshot_dir_list(const char *dir, char ***paths, size_t *count) {
  *paths = NULL;
  *count = 0;
  struct dirent **names = NULL;
  int n = scandir(dir, &names, cs_snapshot_dir_select, alphasort);
  if (n < 0) return errno ? errno : EIO;
  char **out = n > 0 ? calloc((size_t)n, sizeof *out) : NULL;
  int err = n > 0 && out == NULL ? ENOMEM : 0;
  size_t kept = 0;
  const char *slash = dir[0] != '\0' && dir[strlen(dir) - 1] == '/' ? "" : "/";
  for (int i = 0; i < n; i++) {
    size_t len = strlen(dir) + strlen(slash) + strlen(names[i]->d_name) + 1;
    char *path = err == 0 ? malloc(len) : NULL;
    if (err == 0 && path == NULL) err = ENOMEM;
    if (path != NULL) {
      snprintf(path, len, "%s%s%s", dir, slash, names[i]->d_name);
      struct stat st;
      if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) out[kept++] = path;
      else free(path); /* a directory or a device named like a snapshot */
    }
    free(names[i]);
  }
  free(names);
  if (err != 0) {
    cs_snapshot_dir_free(out, kept);
    return err;
  }
  *paths = out;
  *count = kept;
  return 0;
}

void cs_snapshot_dir_free(char **paths, size_t count) {
  for (size_t i = 0; i < count; i++) free(paths[i]);
  free(paths);
}

void cs_snapshot_dir_report(const char *dir, int err) {
  if (err != 0) cs_cli_message("%s: cannot read: %s", dir, strerror(err));
  else cs_cli_message("%s: no snapshot files (*.json, *.pickle, *.pkl) in this directory", dir);
}

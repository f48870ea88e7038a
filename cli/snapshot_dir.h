/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot files of a directory, as `ranks DIR` and `report DIR` read a job's folder: *.json,
 * *.pickle, *.pkl (cudasnap's and PyTorch's own names), regular files, in name order; hidden files
 * and files being written (cudasnap's temporary names hold ".tmp.") are left out. */
#ifndef CS_CLI_SNAPSHOT_DIR_H
#define CS_CLI_SNAPSHOT_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Is path a directory (following links)? */
bool cs_snapshot_dir_is(const char *path);

/* The paths "DIR/NAME" of dir's snapshot files: *paths (malloc'ed, each path too; none: NULL) and
 * *count. 0, or an errno value (ENOMEM, or why the directory cannot be read). */
int cs_snapshot_dir_list(const char *dir, char ***paths, size_t *count);
void cs_snapshot_dir_free(char **paths, size_t count);

/* "DIR: cannot read: WHY" or "DIR: no snapshot files (*.json, *.pickle, *.pkl) in this directory"
 * on stderr, for err (cs_snapshot_dir_list's) or an empty list (err 0). */
void cs_snapshot_dir_report(const char *dir, int err);

#endif

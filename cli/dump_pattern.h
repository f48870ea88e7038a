/* SPDX-License-Identifier: Apache-2.0 */
/* Where a running process's signal snapshot will appear, as a glob(3) pattern built from its
 * CUDASNAP_OUTPUT (docs/design.md section 5; memviz/output.h names the files).
 *
 * %p becomes the pid, %t "signal" and %% a percent sign; the specifiers whose values the tool
 * cannot know for sure (%e executable, %h host, %r rank, %n dump number) become '*'. A relative
 * pattern is taken from the process's current directory, as the library resolves it there. A '*'
 * before the extension also matches the "-1", "-2", ... the library adds when a name is taken.
 * Every other character is matched literally. */
#ifndef CS_CLI_DUMP_PATTERN_H
#define CS_CLI_DUMP_PATTERN_H

#include <stddef.h>

/* Returns 0, or -1 when the pattern does not fit in len. */
int cs_dump_glob_pattern(const char *output, long pid, const char *cwd, char *buf, size_t len);

#endif

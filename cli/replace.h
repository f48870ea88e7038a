/* SPDX-License-Identifier: Apache-2.0 */
/* Giving a finished temporary output file (memviz/output.h) a name that may already be taken:
 * for the subcommands that write a file (convert, recover, report, export), whose OUT is replaced,
 * where cs_output_commit would pick another name instead; and the check they make first, that OUT
 * is not one of their inputs. */
#ifndef CS_CLI_REPLACE_H
#define CS_CLI_REPLACE_H

#include <stdbool.h>

#include "memviz/output.h"

/* Sync and close out's temporary file and rename it to path, replacing what is there. Returns 0
 * (out->final_path is path) or an errno; the temporary file is gone either way. */
int cs_replace_commit(cs_output_t *out, const char *path);

/* Is out the file `in` itself (the same device and inode, under any name), so that replacing it
 * would destroy the input being read? False when either does not exist. */
bool cs_replace_same_file(const char *in, const char *out);

#endif

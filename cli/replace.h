/* Giving a finished temporary output file (snapshot/output.h) a name that may already be taken:
 * for `convert --force` and `report`, whose OUT is replaced, where cs_output_commit would pick
 * another name instead. */
#ifndef CS_CLI_REPLACE_H
#define CS_CLI_REPLACE_H

#include "memviz/output.h"

/* Sync and close out's temporary file and rename it to path, replacing what is there. Returns 0
 * (out->final_path is path) or an errno; the temporary file is gone either way. */
int cs_replace_commit(cs_output_t *out, const char *path);

#endif

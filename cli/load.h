/* Reading snapshot files for the subcommands, JSON or pickle (reader/reader.h does the parsing).
 *
 * Every failure is reported here, as exactly one line on stderr, so a subcommand only has to
 * exit: "FILE: byte N: problem" when the bytes are not a snapshot (truncated, garbled, hostile),
 * "FILE: WHERE: problem" when they parse but the numbers in them mean nothing (cs_load_snapshot),
 * "FILE: cannot read: reason" when there are no bytes to look at. Big files get a progress line
 * (cli/progress.h). */
#ifndef CS_CLI_LOAD_H
#define CS_CLI_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "reader/reader.h"

/* A whole file in memory (malloc'ed; free with cs_load_bytes_free). */
typedef struct cs_load_bytes_s {
  uint8_t *data;
  size_t len;
} cs_load_bytes_t;

/* Read path into *out. Returns 0, or -1 after reporting why. */
int cs_load_bytes(const char *path, cs_load_bytes_t *out);
void cs_load_bytes_free(cs_load_bytes_t *b);

/* Parse bytes read from path. Returns the tree (cJSON_Delete it) or NULL after reporting why;
 * *format (may be NULL) says how the bytes were encoded. */
cJSON *cs_load_parse(const char *path, const cs_load_bytes_t *b, cs_snapshot_format_t *format);

/* Both of the above, then the refusal of a tree whose numbers mean nothing (the errors that
 * reader/validate.h marks unreadable: not a snapshot at all, addresses or sizes that are not
 * finite non-negative numbers), reported as "FILE: WHERE: problem". For the subcommands that
 * interpret a snapshot (summary, diff); the viewer's other errors and its warnings do not stop
 * them (`check` lists those). */
cJSON *cs_load_snapshot(const char *path, cs_snapshot_format_t *format);

#endif

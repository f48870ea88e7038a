/* SPDX-License-Identifier: Apache-2.0 */
/* Reading snapshot files for the subcommands, JSON or pickle, into the snapshot model
 * (reader/reader.h does the parsing; JSON is streamed, never held whole).
 *
 * Every failure is reported here, as exactly one line on stderr, so a subcommand only has to
 * exit: "FILE: byte N: problem" when the bytes are not a snapshot (truncated, garbled, hostile),
 * "FILE: WHERE: problem" when they parse but the numbers in them mean nothing (cs_load_snapshot),
 * "FILE: cannot read: reason" when there are no bytes to look at. Big files get a progress line
 * (cli/progress.h). */
#ifndef CS_CLI_LOAD_H
#define CS_CLI_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"
#include "reader/reader.h"

/* Read and parse path. Returns the model (cs_doc_free it) or NULL after reporting why; *format
 * (may be NULL) says how the bytes were encoded, *bytes (may be NULL) the file's size. */
cs_doc_t *cs_load_parse(const char *path, cs_snapshot_format_t *format, size_t *bytes);

/* cs_load_parse, then the refusal of a model whose numbers mean nothing (the errors that
 * reader/validate.h marks unreadable: not a snapshot at all, addresses or sizes that are not
 * finite non-negative numbers), reported as "FILE: WHERE: problem". For the subcommands that
 * interpret a snapshot (summary, diff, report); the viewer's other errors and its warnings do not
 * stop them (`check` lists those). */
cs_doc_t *cs_load_snapshot(const char *path, cs_snapshot_format_t *format, size_t *bytes);

/* cs_load_snapshot for one file among many (a directory, a glob: other files lie there, such as
 * an export's output), where one that is not a snapshot is passed over rather than refused: its
 * line reads "cudasnap SUBCOMMAND: skipped FILE: problem" (*skipped set), and the caller goes on.
 * A FILE that is missing or not a regular file is refused as cs_load_snapshot does (*skipped
 * false): a user named it. */
cs_doc_t *cs_load_snapshot_or_skip(const char *path, const char *subcommand, cs_snapshot_format_t *format,
                                   size_t *bytes, bool *skipped);

#endif

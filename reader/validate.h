/* SPDX-License-Identifier: Apache-2.0 */
/* The memory_viz viewer's rules, checked on a snapshot (the logic behind `cudasnap check`).
 *
 * ERRORS are what breaks the viewer (an exception at load, or in a view, or on hover); WARNINGS are
 * what renders wrongly but silently (snapshot-format.md sections 3.2-3.9). Includes the backward
 * replay of each device's trace from the final state, as the Allocator State History view does
 * (section 3.7): every block alive at any point lies in a segment alive at that point, and an
 * unpaired free_requested refers to a block that exists. Byte-level rules (JSON strictness, the
 * pickle opcode subset, APPENDS batch sizes) are checked on the file's bytes.
 *
 * Verdict: clean (no error) means the viewer loads and renders the file; the fixtures in
 * ../shared/fixtures/MANIFEST.tsv say PASS for exactly the clean ones.
 *
 * Some errors also leave the numbers meaningless for any reader, not only for the viewer; they are
 * marked `unreadable`, and the subcommands that interpret a snapshot (summary, diff) refuse a file
 * that has one: the top level is neither a dict nor a list; neither 'segments' nor
 * 'device_traces' is a list; an address or size (a segment's address and total_size, a block's
 * size and requested_size, a trace entry's addr, size and device_free) is there but is not a
 * finite number, or is negative; shared (memoized) values repeat so often that the entries to
 * visit exceed a bound proportional to the model's size (a pickle's memo can make a small file
 * name a product of millions; see cs_validate_budget). A legacy bare list of segments is an error
 * for the viewer but readable (as a snapshot without traces): its segments are checked like any
 * others. */
#ifndef CS_VALIDATE_H
#define CS_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/doc.h"

typedef enum cs_finding_level_e {
  CS_FINDING_ERROR = 0,
  CS_FINDING_WARNING = 1,
} cs_finding_level_t;

typedef struct cs_finding_s {
  cs_finding_level_t level;
  bool unreadable;    /* an error that leaves the numbers meaningless (above) */
  char where[96];     /* e.g. "device_traces[0][17]" or "byte 1234" */
  char message[192];  /* one line */
} cs_finding_t;

typedef struct cs_report_s {
  cs_finding_t *findings; /* malloc'ed, count entries */
  size_t count;
  size_t capacity;
  size_t errors;
  size_t warnings;
  size_t dropped;     /* findings beyond the cap (the first ones are kept) */
  size_t unreadable;  /* errors marked unreadable */
  cs_finding_t first_unreadable; /* the first of them, kept even when it is beyond the cap */
  /* cs_validate_bytes / cs_validate_file only: the reader refused the input (its one error, "byte
   * N", is then the only finding). io_errno: not 0 when the file could not be opened or read. */
  bool read_failed;
  int io_errno;
} cs_report_t;

void cs_report_init(cs_report_t *r);
void cs_report_free(cs_report_t *r);

/* Check the bytes of a file and, if it parses, its content. Adds findings; returns true when
 * there is no error. */
bool cs_validate_bytes(const void *data, size_t len, cs_report_t *r);

/* The same from a file (cs_read_snapshot_file_ex: JSON is streamed, so the file's bytes and its
 * model are never held at once). Same findings as cs_validate_bytes on the file's bytes. */
bool cs_validate_file(const char *path, cs_report_t *r);

/* Check a parsed snapshot's content only. */
bool cs_validate_doc(const cs_doc_t *doc, cs_report_t *r);

/* The same checks without the history replay (which finds nothing unreadable): for readers that
 * only need to know whether the numbers mean anything. Returns true when no finding is marked
 * unreadable; the other findings are in *r too. */
bool cs_validate_readable(const cs_doc_t *doc, cs_report_t *r);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Reading snapshot files, JSON or pickle, into the snapshot model (model/doc.h), for every
 * subcommand of the tool and the tests.
 *
 * JSON is parsed strictly (RFC 8259, as JSON.parse: no NaN/Infinity, nothing but whitespace after
 * the value) and streamed: a file is read in chunks, never held whole (reader/json_stream.h). Pickle
 * is read by a small unpickler for the opcodes the viewer accepts (snapshot-format.md section 3.3),
 * from the file's bytes in memory (pickles are 10-15 times smaller than the same JSON); memoized
 * values stay shared; anything else (another opcode, protocol 0/1/5, a bad length, a truncated file)
 * is an error. The format is told by the first byte (0x80 = pickle); a file that is not JSON gets the
 * unpickler too, as in the viewer. Hostile input cannot crash the reader: every length is checked
 * against what remains, nesting depth is bounded, integers that do not fit int64 are errors in a
 * pickle, and memory stays within a constant times the file's size (bench/README.md, "Reading").
 *
 * Integers are kept exactly (int64), and so is whether a number was written as an integer or as a
 * float (2 or 2.0), as Python keeps it, and which lists are tuples: a conversion writes the same
 * types back. */
#ifndef CS_READER_H
#define CS_READER_H

#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"
#include "reader/read_error.h"

typedef enum cs_snapshot_format_e {
  CS_SNAPSHOT_JSON = 0,
  CS_SNAPSHOT_PICKLE = 1,
} cs_snapshot_format_t;

/* "JSON" or "pickle", as the tool names a format to the user. */
const char *cs_snapshot_format_name(cs_snapshot_format_t format);

/* Parse a whole file held in memory. Returns the model (free with cs_doc_free) or NULL with *err
 * filled. *format is set when the format could be told. */
cs_doc_t *cs_read_snapshot(const void *data, size_t len, cs_snapshot_format_t *format, cs_read_error_t *err);

/* Read and parse a file (JSON streamed). NULL with *err filled on failure (I/O errors included).
 * *bytes (may be NULL) gets the file's size. */
cs_doc_t *cs_read_snapshot_file(const char *path, cs_snapshot_format_t *format, size_t *bytes,
                                cs_read_error_t *err);

#endif

/* Reading snapshot files, JSON or pickle, into one value tree (cJSON), for `cudasnap summary`,
 * `check`, `convert`, `diff` and the tests.
 *
 * JSON is parsed strictly (RFC 8259: no NaN/Infinity, nothing but whitespace after the value).
 * Pickle is read by a small unpickler for the opcodes the viewer accepts (snapshot-format.md
 * section 3.3); tuples become arrays, memoized objects are copied where referenced, and anything
 * else (another opcode, protocol 0/1/5, a bad length, a truncated file) is an error. The format is
 * told by the first byte (0x80 = pickle). Hostile input cannot crash the reader: every length is
 * checked against what remains, nesting depth is bounded, and integers that do not fit int64 are
 * errors.
 *
 * Integers are kept exactly: cJSON stores numbers as double, so a value that would lose precision
 * (above 2^53) is also recorded as a string in the item's `valuestring` (see
 * cs_reader_int_exact). */
#ifndef CS_READER_H
#define CS_READER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef enum cs_snapshot_format_e {
  CS_SNAPSHOT_JSON = 0,
  CS_SNAPSHOT_PICKLE = 1,
} cs_snapshot_format_t;

/* What went wrong, for a one-line message: "<file>: <where>: <problem>". */
typedef struct cs_read_error_s {
  size_t offset;       /* byte offset of the problem */
  char message[256];   /* e.g. "unknown pickle opcode 0x63" */
} cs_read_error_t;

/* Parse a whole file held in memory. Returns the tree (free with cJSON_Delete) or NULL with *err
 * filled. *format is set when the format could be told. */
cJSON *cs_read_snapshot(const void *data, size_t len, cs_snapshot_format_t *format, cs_read_error_t *err);

/* Read and parse a file. NULL with *err filled on failure (I/O errors included). */
cJSON *cs_read_snapshot_file(const char *path, cs_snapshot_format_t *format, cs_read_error_t *err);

/* An integer value exactly (int64), or returns 0 when item is not an integer. */
int cs_reader_int_exact(const cJSON *item, int64_t *out);

#endif

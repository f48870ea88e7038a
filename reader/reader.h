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
 * cs_reader_int_exact). Whether a number was written as an integer or as a float (2 or 2.0) is
 * kept too, as Python keeps it (int or float), so that a conversion writes the same types back
 * (cs_reader_is_float); so are tuples (cs_reader_is_tuple). */
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

/* An integer value exactly (int64), or returns 0 when item is not an integer. An integral float
 * (2.0) counts as the integer it equals: readers of sizes and addresses take the value. */
int cs_reader_int_exact(const cJSON *item, int64_t *out);

/* 1 when item is a number written as a float: a JSON number with a fraction or an exponent
 * ("0.0", "1e3"), a pickle BINFLOAT. The mark is a flag bit in item->type above the bits cJSON
 * uses (cJSON's own functions look at type & 0xff, and cJSON_Duplicate keeps it). */
int cs_reader_is_float(const cJSON *item);

/* 1 when item is a list that Python holds as a tuple: one a pickle built with a TUPLE opcode, and
 * in JSON, which has no tuples, a list under the key "segment_pool_id" (the one tuple in
 * PyTorch's snapshots, and in cudasnap's pickles). Marked like floats. */
int cs_reader_is_tuple(const cJSON *item);
enum { CS_READER_FLOAT = 1 << 12, CS_READER_TUPLE = 1 << 13 };

#endif

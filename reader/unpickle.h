/* Internal to reader/: the unpickler behind cs_read_snapshot, plus what the validator needs to
 * know about the bytes it read (batch sizes, protocol).
 *
 * The unpickler accepts exactly the opcodes of the viewer (snapshot-format.md section 3.3) and
 * builds a cJSON tree: tuples become arrays, memoized values are deep-copied where BINGET refers to
 * them, dict keys must be strings (an integer key becomes its decimal string, as a JavaScript
 * property name would; any other key type is an error), and a key written twice keeps its first
 * position and its last value (JavaScript's `d[k] = v`). Integers are int64 (LONG1 of at most 8
 * bytes); a value above 2^53 also gets its exact decimal digits in `valuestring`.
 *
 * It never recurses on input it has not bounded: the value stack is an array, containers nest at
 * most CS_READER_MAX_DEPTH deep (checked when a value is put into a container), and memo copies
 * count against CS_UNPICKLE_MAX_VALUES so that a small file cannot expand without bound. Every
 * length is checked against the bytes that remain. On error nothing leaks and *err says where.
 *
 * No global state: calls may run concurrently; each owns everything it allocates. */
#ifndef CS_UNPICKLE_H
#define CS_UNPICKLE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "reader/reader.h"

enum {
  CS_READER_MAX_DEPTH = 1000,        /* nested containers, JSON and pickle (cJSON's own limit) */
  CS_UNPICKLE_BATCH_WARN = 1000,     /* CPython's batch size; the doc's rule for writers */
  CS_UNPICKLE_BATCH_ERROR = 100000,  /* the viewer's push(...items) overflows near 180k */
};

/* cJSON values one pickle may create, memo copies included (about 80 bytes each): 64 per input
 * byte, at least 2^18, at most 2^25. Real snapshots need 1 to 2 per byte (4.2 million for a 2.6 MB
 * PyTorch pickle); a "billion laughs" pickle fails at the copy that would cross the limit, before
 * it allocates it. */
#define CS_UNPICKLE_VALUES_PER_BYTE ((size_t)64)
#define CS_UNPICKLE_MIN_VALUES ((size_t)1 << 18)
#define CS_UNPICKLE_MAX_VALUES ((size_t)1 << 25)

typedef struct cs_unpickle_stats_s {
  int protocol;                /* the PROTO byte, -1 if the pickle has none */
  size_t appends_max;          /* the largest MARK...APPENDS batch (items) */
  size_t appends_max_offset;   /* byte offset of that APPENDS */
  size_t appends_over_warn;    /* APPENDS batches above CS_UNPICKLE_BATCH_WARN items */
  size_t appends_first_over_offset;
  size_t setitems_max;         /* the largest MARK...SETITEMS batch (key/value pairs) */
  size_t setitems_max_offset;
  size_t setitems_over_warn;   /* SETITEMS batches above CS_UNPICKLE_BATCH_WARN pairs */
  size_t setitems_first_over_offset;
  size_t values;               /* cJSON items created */
  size_t memo_copies;          /* BINGET/LONG_BINGET executed */
  size_t end_offset;           /* just past STOP; bytes after it are ignored (viewer and Python) */
} cs_unpickle_stats_t;

/* Unpickle data[0..len). Returns the tree or NULL with *err filled. stats may be NULL. */
cJSON *cs_unpickle(const uint8_t *data, size_t len, cs_unpickle_stats_t *stats, cs_read_error_t *err);

/* cs_read_snapshot, also returning the unpickler's statistics when the input was a pickle
 * (stats->protocol stays -2 for JSON). Used by the validator. */
cJSON *cs_read_snapshot_ex(const void *data, size_t len, cs_snapshot_format_t *format, cs_read_error_t *err,
                           cs_unpickle_stats_t *stats);

/* Every object in the tree: a key that appears more than once keeps its first position and its
 * last value, as JSON.parse and JavaScript property assignment do. Returns the number of items
 * removed. The tree's depth must be bounded (it recurses). */
size_t cs_reader_dedupe_keys(cJSON *tree);

#endif

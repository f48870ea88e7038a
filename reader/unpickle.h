/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to reader/: the unpickler behind cs_read_snapshot, plus what the validator needs to
 * know about the bytes it read (batch sizes, protocol).
 *
 * The unpickler accepts exactly the opcodes of the viewer (snapshot-format.md section 3.3) and
 * builds the snapshot model (model/doc.h): tuples stay tuples, memoized values stay shared where
 * BINGET refers to them (one word each, never a copy), dict keys must be strings (an integer key
 * becomes its decimal string, as a JavaScript property name would; any other key type is an error),
 * and a key written twice keeps its first position and its last value (JavaScript's `d[k] = v`).
 * Integers are int64 (LONG1 of at most 8 bytes).
 *
 * It never recurses: the value stack is an array, and containers nest at most CS_DOC_MAX_DEPTH deep
 * (checked when one is closed). Every length is checked against the bytes that remain. On error
 * nothing leaks and *err says where.
 *
 * No global state: calls may run concurrently; each owns everything it allocates. */
#ifndef CS_UNPICKLE_H
#define CS_UNPICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "reader/reader.h"

enum {
  CS_READER_MAX_DEPTH = CS_DOC_MAX_DEPTH, /* nested containers, JSON and pickle */
  CS_UNPICKLE_BATCH_WARN = 1000,     /* CPython's batch size; the doc's rule for writers */
  CS_UNPICKLE_BATCH_ERROR = 100000,  /* the viewer's push(...items) overflows near 180k */
};

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
  size_t values;               /* values left on the stack at STOP (1 for a well-formed pickle) */
  size_t memo_copies;          /* BINGET/LONG_BINGET executed (each shares, none copies) */
  size_t end_offset;           /* just past STOP; bytes after it are ignored (viewer and Python) */
} cs_unpickle_stats_t;

/* Unpickle data[0..len). Returns the model or NULL with *err filled. stats may be NULL. */
cs_doc_t *cs_unpickle(const uint8_t *data, size_t len, cs_unpickle_stats_t *stats, cs_read_error_t *err);

/* How far a head reader got (reader/head.h). */
typedef enum cs_head_status_e {
  CS_HEAD_FOUND = 0,  /* *out: a doc whose root dict holds the first pair only */
  CS_HEAD_ABSENT = 1, /* the root is not a dict whose first key is the one asked for */
  CS_HEAD_SHORT = 2,  /* the data ended before the pair did: try again with more */
  CS_HEAD_ERROR = 3,  /* not a snapshot (*err says why), or no host memory */
} cs_head_status_t;

/* Unpickle data[0..len), a prefix of a file, only as far as the root dict's first pair: up to its
 * first SETITEM(S) (cudasnap's writer closes a batch after the head: cs_emit_batch_break), if its
 * first key is `key`; an other first key is not read at all. */
cs_head_status_t cs_unpickle_head(const uint8_t *data, size_t len, const char *key, cs_doc_t **out,
                                  cs_read_error_t *err);

/* cs_read_snapshot, also returning the unpickler's statistics when the input was a pickle
 * (stats->protocol stays -2 for JSON). Used by the validator. */
cs_doc_t *cs_read_snapshot_ex(const void *data, size_t len, cs_snapshot_format_t *format, cs_read_error_t *err,
                              cs_unpickle_stats_t *stats);

/* cs_read_snapshot_file, with the unpickler's statistics likewise. */
cs_doc_t *cs_read_snapshot_file_ex(const char *path, cs_snapshot_format_t *format, size_t *bytes,
                                   cs_read_error_t *err, cs_unpickle_stats_t *stats);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to reader/: JSON into the snapshot model, streamed (a file is never held whole).
 *
 * The tokens come from YAJL (Debian's libyajl, a small, well-kept streaming parser in C): it is
 * strict where JSON.parse is (no NaN or Infinity, no comments, no trailing commas, no leading zeros,
 * no raw control characters in strings, nothing but whitespace after the value), reads a file in
 * chunks of any size, and hands every number over as its text, so integers stay exact here: a plain
 * integer token is an int64, a token with a fraction or an exponent a float (2.0 stays a float, as
 * Python's json keeps it), and an integer beyond int64 keeps its double (JSON.parse takes it). A
 * UTF-8 byte order mark is skipped (the viewer's TextDecoder drops it); invalid UTF-8 inside strings
 * is kept as it is, and so are lone surrogate escapes ("\ud800", as JSON.parse keeps them;
 * reader/json_surrogates.h). A number too large for a double (1e400) is +-Infinity, as JSON.parse
 * reads it. JSON has no tuples: a list under the key "segment_pool_id" (the one tuple in
 * PyTorch's snapshots and in cudasnap's pickles) becomes a tuple, so a conversion writes it back as
 * one. Duplicate keys keep their first position and their last value (model/build.h). */
#ifndef CS_READER_JSON_STREAM_H
#define CS_READER_JSON_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"
#include "reader/read_error.h"
#include "reader/unpickle.h"

/* JSON held in memory. NULL with *err filled. */
cs_doc_t *cs_json_read_bytes(const uint8_t *data, size_t len, cs_read_error_t *err);

/* JSON read from fd to its end, in chunks, after `head` (bytes already read from fd, may be empty).
 * NULL with *err filled (I/O errors too). */
cs_doc_t *cs_json_read_fd(int fd, const uint8_t *head, size_t nhead, cs_read_error_t *err);

/* The root dict's first pair only, when its first key is `key` (reader/head.h): the parse stops
 * once that value is complete, or at once on another first key (CS_HEAD_ABSENT, as for a file that
 * is not a dict). *out: a doc whose root dict holds that pair. */
cs_head_status_t cs_json_read_head_fd(int fd, const char *key, cs_doc_t **out, cs_read_error_t *err);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The head of a snapshot file: its root dict's first pair, read without the rest of the file.
 *
 * cudasnap writes a small summary of the process as the first key of every snapshot
 * (`cudasnap_summary`, snapshot/snap_summary.h), so that `cudasnap ranks` over a job of a thousand files
 * reads a few KB of each, whatever their number of events. JSON: the YAJL stream stops once that
 * value is closed (a callback returning 0 cancels the parse). Pickle: the unpickler runs on a
 * prefix of the file up to the root dict's first SETITEMS, which the writer puts right after the
 * head; the prefix grows while it is too short. Both stop at once when the first key is another
 * one (PyTorch's files begin with `segments`). */
#ifndef CS_READER_HEAD_H
#define CS_READER_HEAD_H

#include "model/doc.h"
#include "reader/reader.h"
#include "reader/unpickle.h"

/* CS_HEAD_FOUND: *out is a doc whose root dict holds the one pair {key: value} (cs_doc_free it).
 * Anything else (no such first key, a file that is not a snapshot, an I/O error): *out is NULL, and
 * a caller reads the file whole (reader/reader.h), which says what is wrong with it. */
cs_head_status_t cs_read_head(const char *path, const char *key, cs_doc_t **out, cs_read_error_t *err);

#endif

/* Writing a snapshot tree (as the reader builds it) through an emitter, JSON or pickle: the heart
 * of `cudasnap convert`.
 *
 * What is written reads back as the same tree (cs_tree_equal): dicts, lists, strings, booleans and
 * null as they are; a number as it was read: a float (cs_reader_is_float: 2.0 stays 2.0) as a
 * float, an integer as an integer, exactly (cs_reader_int_exact), and a tuple (cs_reader_is_tuple)
 * as a tuple. So Python loads the same objects, ints and floats, tuples and lists alike, from the
 * input and the output. The one exception: a JSON
 * integer beyond int64, of which the reader keeps only the double, is written as a float.
 *
 * Frame lists (the non-empty lists under a "frames" key) that are equal share one pickle memo
 * entry, as in PyTorch's own pickles: the first is written out and memoized, later ones are a
 * BINGET. That is what keeps a pickle made from a JSON snapshot small. */
#ifndef CS_CLI_TREE_EMIT_H
#define CS_CLI_TREE_EMIT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "cli/progress.h"
#include "memviz/emit.h"

/* Can the emitter write this tree? Returns 0, or -1 with the reason in why (it nests deeper
 * than CS_EMIT_MAX_DEPTH, or holds a NaN or an infinity, which neither format can carry). */
int cs_tree_emit_check(const cJSON *root, char *why, size_t why_len);

/* Write root, then cs_emit_finish(e) (which frees e). progress (may be NULL) is updated with the
 * values written so far, out of cs_tree_count(root). Returns 0 or the emitter's errno (a sink
 * failure, ENOMEM). pre: cs_tree_emit_check(root) passed. */
int cs_tree_emit(const cJSON *root, cs_emitter_t *e, cs_emit_format_t format, cs_progress_t *progress);

#endif

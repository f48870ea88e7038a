/* Writing a snapshot tree (as the reader builds it) through an emitter, JSON or pickle: the heart
 * of `cudasnap convert`.
 *
 * What is written reads back as the same tree (cs_tree_equal): dicts, lists, strings, booleans and
 * null as they are; a number as an integer when it is one exactly (cs_reader_int_exact), else as a
 * float. The tree does not record whether a number was written 2 or 2.0, so an integral float
 * comes out as an integer; JavaScript and Python compare the two as equal.
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

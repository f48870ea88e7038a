/* SPDX-License-Identifier: Apache-2.0 */
/* Building a snapshot model (model/doc.h), for the readers: the pickle reader and the streaming
 * JSON reader feed values in file order and get a doc back.
 *
 * Containers are built open (mutable) and frozen when complete: cs_build_close turns one into an
 * immutable value, its dict keys made unique (a key given twice keeps its first position and its
 * last value) and its content stored once (an equal container already in the doc is reused). The
 * readers close a container when it is complete: JSON at its closing bracket, a pickle when the
 * container is put into another one or returned (picklers fill a container before they use it).
 *
 * Memory is bounded by what is fed: every word the doc holds comes from a value given here, and a
 * shared value (a pickle memo reference) costs one word where it is used. The builder refuses
 * containers nested deeper than CS_DOC_MAX_DEPTH. Out of host memory, every call fails cleanly and
 * cs_build_finish returns NULL. */
#ifndef CS_MODEL_BUILD_H
#define CS_MODEL_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/doc.h"

typedef struct cs_build_s cs_build_t;

/* NULL without host memory. */
cs_build_t *cs_build_new(void);

/* The doc, whose root is `root` (a closed value); the builder is freed. NULL without host memory or
 * when root is an open container. */
cs_doc_t *cs_build_finish(cs_build_t *b, cs_val_t root);

/* Frees the builder and everything built so far (after an error). */
void cs_build_abort(cs_build_t *b);

/* Why the last call failed: "out of host memory", or a depth or shape problem, for the reader's
 * one-line error. */
const char *cs_build_error(const cs_build_t *b);

/* ---- scalars: each returns the value, or CS_VAL_ABSENT on failure ----------------------------- */
cs_val_t cs_build_int(cs_build_t *b, int64_t x);
/* written_as_int: a JSON integer token too big for int64, kept as its double. */
cs_val_t cs_build_float(cs_build_t *b, double d, bool written_as_int);
/* The bytes as they are (interned: the same string twice is one id). */
cs_val_t cs_build_str(cs_build_t *b, const void *bytes, size_t len);
/* A string id for a dict key (interned like strings), UINT32_MAX on failure. */
uint32_t cs_build_key(cs_build_t *b, const void *bytes, size_t len);

/* ---- containers ------------------------------------------------------------------------------- */

/* An open container of tag CS_TAG_LIST, CS_TAG_TUPLE or CS_TAG_DICT; CS_VAL_ABSENT on failure. */
cs_val_t cs_build_open(cs_build_t *b, unsigned tag);

/* True for a value that is an open container of this builder. */
bool cs_build_is_open(const cs_build_t *b, cs_val_t v);
/* A small index that names an open container while it is open (0, 1, 2, ...; reused after it
 * closes), for callers that keep facts about open containers; SIZE_MAX for any other value. */
size_t cs_build_open_index(const cs_build_t *b, cs_val_t v);

/* The tag an open container will have when closed. */
unsigned cs_build_open_tag(const cs_build_t *b, cs_val_t open);

/* Append an item (a closed value) to an open list or tuple. False on failure. */
bool cs_build_append(cs_build_t *b, cs_val_t open, cs_val_t item);

/* Set a member of an open dict. False on failure. */
bool cs_build_set(cs_build_t *b, cs_val_t open, uint32_t key_id, cs_val_t value);

/* Freeze an open container; returns its value, or CS_VAL_ABSENT on failure (too deep, no memory).
 * The open handle is invalid afterwards. */
cs_val_t cs_build_close(cs_build_t *b, cs_val_t open);

/* The doc being built, for reading values already closed (dict keys given as values, say). */
const cs_doc_t *cs_build_doc(const cs_build_t *b);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Writing a snapshot model through an emitter (memviz/emit.h), JSON or pickle: the heart of
 * `cudasnap convert`, and how `recover` writes what it rebuilt.
 *
 * What is written reads back as the same model: dicts (members in order), lists, tuples, strings,
 * booleans and null as they are; integers exactly; a number written as a float (cs_doc_is_float:
 * 2.0 stays 2.0) as a float. So Python loads the same objects, ints and floats, tuples and lists
 * alike, from the input and the output. The one exception: a JSON integer beyond int64, of which the
 * reader keeps only the double, is written as a float.
 *
 * Frame lists (the non-empty lists under a "frames" key) that are equal share one pickle memo
 * entry, as in PyTorch's own pickles: the first is written out and memoized, later ones are a
 * BINGET. In the model equal lists are one value already, so this costs one table lookup each. */
#ifndef CS_MODEL_WRITE_H
#define CS_MODEL_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memviz/emit.h"
#include "model/doc.h"

/* What writing the model out would produce: the number of values once every shared value is
 * written out in full, whether any float is NaN, and the deepest nesting. */
typedef struct cs_doc_extent_s {
  uint64_t values; /* saturates at UINT64_MAX */
  bool nan; /* a NaN somewhere: JSON cannot hold one (infinities are written as 1e999) */
  unsigned depth;
} cs_doc_extent_t;

/* One pass over the model (linear in its size, whatever the sharing). Returns 0, or -1 without
 * host memory. */
int cs_doc_extent(const cs_doc_t *doc, cs_doc_extent_t *out);

/* Called now and then with the number of values written so far (a progress line). */
typedef void (*cs_doc_write_tick_fn)(void *ctx, uint64_t values);

/* Write the whole model, then cs_emit_finish. Returns cs_emit_finish's result (0 or an errno). */
int cs_doc_write(const cs_doc_t *doc, cs_emitter_t *e, cs_emit_format_t format, cs_doc_write_tick_fn tick,
                 void *tick_ctx);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* cs_emitter_t: one API that writes a value tree as JSON or as pickle (jemalloc's emitter shape).
 *
 * snapshot.c walks the state once and calls these; the chosen format decides the bytes. Values:
 * dicts (string keys), lists, tuples, int64, double, UTF-8 strings, bool, None. Calls must be well
 * nested: a dict alternates cs_emit_key and one value. Depth is bounded (CS_EMIT_MAX_DEPTH).
 *
 * Differences the API hides:
 *   - tuples: pickle EMPTY_TUPLE/TUPLE1/TUPLE2/TUPLE3 when short (pool ids: TUPLE2), else MARK ...
 *     TUPLE; JSON arrays;
 *   - frame lists shared by many entries: cs_emit_frames_ref writes a reference to a list written
 *     earlier under the same id (pickle memo: BINGET), or returns false so the caller writes the
 *     list and then calls cs_emit_frames_done(id) (pickle: memoize it). JSON has no references:
 *     it keeps the bytes of the list written the first time and copies them out again (a bounded
 *     cache; a list that does not fit is written out each time, to the same bytes);
 *   - pickle writes lists and dicts as EMPTY_LIST/EMPTY_DICT then MARK ... APPENDS/SETITEMS
 *     batches of at most 1000 items (the viewer fails on huge batches), and only the opcodes the
 *     viewer reads (snapshot-format.md section 3.3);
 *   - JSON escapes strings per RFC 8259. Neither format writes NaN or Infinity (snapshot-format.md
 *     section 8): a non-finite double is written as 0.0 and counted (cs_emit_nonfinite). Both
 *     replace each invalid UTF-8 subpart by U+FFFD, as Python's errors="replace" does.
 * Integers are written exactly (callers keep addresses and sizes below 2^53).
 *
 * Errors: the first sink failure is sticky; every later call does nothing and nothing more reaches
 * the sink; cs_emit_finish returns it. No other failure mode except host memory for the memo table
 * (ENOMEM), a pickle string of 4 GiB or more (EOVERFLOW) and, in release builds, calls out of order
 * (EINVAL; debug builds assert), all sticky too.
 * Memory: bounded by the nesting depth plus the memo table (one entry per frame list id), and for
 * JSON the frame list cache (at most 32 MiB, CS_EMIT_CACHE_LIMIT in emit_cache.h). */
#ifndef CS_EMIT_H
#define CS_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memviz/sink.h"

enum { CS_EMIT_MAX_DEPTH = 32, CS_EMIT_BATCH = 1000 };

typedef enum cs_emit_format_e {
  CS_EMIT_JSON = 0,
  CS_EMIT_PICKLE = 1,
} cs_emit_format_t;

typedef struct cs_emitter_s cs_emitter_t;

/* A new emitter writing to sink. pickle_protocol: 2, 3 or 4 (the PROTO byte; the opcodes used are
 * the same; JSON ignores it). Returns NULL without host memory or for another protocol. */
cs_emitter_t *cs_emitter_create(cs_emit_format_t format, cs_sink_t sink, int pickle_protocol);

/* Completes the output (pickle: STOP; JSON: a final newline), returns 0 or the sticky errno, and
 * frees the emitter. pre: every container was ended. */
int cs_emit_finish(cs_emitter_t *e);

void cs_emit_dict_begin(cs_emitter_t *e);
void cs_emit_dict_end(cs_emitter_t *e);
void cs_emit_list_begin(cs_emitter_t *e);
void cs_emit_list_end(cs_emitter_t *e);
void cs_emit_tuple_begin(cs_emitter_t *e);
void cs_emit_tuple_end(cs_emitter_t *e);
void cs_emit_key_n(cs_emitter_t *e, const char *key, size_t len);
void cs_emit_int(cs_emitter_t *e, int64_t value);
void cs_emit_float(cs_emitter_t *e, double value);
/* As cs_emit_float, but an infinity is kept, for `cudasnap convert`, which copies what it read:
 * JSON writes 1e999 or -1e999 (JSON has no Infinity; JSON.parse and Python's json read these as
 * +-Infinity, as they read any number too large for a double), pickle its BINFLOAT. A NaN is
 * still written as 0.0 and counted. */
void cs_emit_float_keep_infinity(cs_emitter_t *e, double value);
void cs_emit_str_n(cs_emitter_t *e, const char *value, size_t len);

/* Inline so that the length of a literal is known where it is written (keys are nearly all
 * literals, and there are several per history entry). */
static inline void cs_emit_key(cs_emitter_t *e, const char *key) {
  cs_emit_key_n(e, key, strlen(key));
}
static inline void cs_emit_str(cs_emitter_t *e, const char *value) {
  cs_emit_str_n(e, value, strlen(value));
}
void cs_emit_bool(cs_emitter_t *e, bool value);

/* A dict member: its key, then its value. */
static inline void cs_emit_kv_int(cs_emitter_t *e, const char *key, int64_t value) {
  cs_emit_key(e, key);
  cs_emit_int(e, value);
}
static inline void cs_emit_kv_str(cs_emitter_t *e, const char *key, const char *value) {
  cs_emit_key(e, key);
  cs_emit_str(e, value);
}
static inline void cs_emit_kv_bool(cs_emitter_t *e, const char *key, bool value) {
  cs_emit_key(e, key);
  cs_emit_bool(e, value);
}
void cs_emit_none(cs_emitter_t *e);

/* End the open container's current batch after the items written so far (pickle: its
 * SETITEMS/APPENDS; JSON: nothing), so that a reader can stop after them: the snapshot's head
 * (snapshot/snap_summary.h) is the root dict's first pair, a batch of its own. */
void cs_emit_batch_break(cs_emitter_t *e);

/* Shared frame lists, see above. id > 0. */
bool cs_emit_frames_ref(cs_emitter_t *e, uint32_t id);
void cs_emit_frames_done(cs_emitter_t *e, uint32_t id);

/* Bytes written so far: handed to the sink, or buffered in the emitter (at most 4 KiB) for it.
 * After an error: the bytes the sink accepted. */
uint64_t cs_emit_bytes(const cs_emitter_t *e);

/* Keep lone surrogates in strings (`cudasnap convert`: a JSON "\ud800" the reader kept as the 3 bytes
 * ED A0 80, generalized UTF-8): JSON writes the same \uXXXX escape again, pickle the 3 bytes, as
 * CPython's pickle does for such a str (its "surrogatepass"). Every other invalid sequence is still
 * replaced by U+FFFD. */
void cs_emit_keep_surrogates(cs_emitter_t *e);

/* Non-finite doubles written as 0.0 so far. */
uint64_t cs_emit_nonfinite(const cs_emitter_t *e);

/* Bound the JSON frame list cache to `bytes` (0: no cache). Call before the first value. The
 * output is the same for every bound. Used in unit tests. */
void cs_emit_set_cache_limit(cs_emitter_t *e, size_t bytes);

#endif

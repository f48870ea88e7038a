/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot model: one compact, read-only form of a snapshot file, JSON or pickle, for every
 * subcommand of the tool (docs/design.md section 1, "the model").
 *
 * A snapshot is held as a graph of values, not a tree of nodes. A value (cs_val_t) is one 64-bit
 * word: small integers, null and booleans live in the word itself; big integers and floats in a
 * side table; strings are interned (each distinct string stored once, NUL-terminated, referred to by
 * id); lists, tuples and dicts are runs of words in one arena. Containers are stored once by content
 * ("hash-consed"): the thousands of identical frame dicts and frame lists of a trace, written out in
 * full for every event in JSON and shared through the memo in a pickle, are one value each, so a
 * frame list is interned and referred to by a single word, and two values with the same content
 * compare equal as words. The exceptions are records unique by what they hold (dicts with an
 * `addr`, `address` or `time_us`: trace events and blocks), which are kept as they come, and
 * big integers and floats (side tables): compare those by content (cs_doc_values_equal). A trace event (a dict of six members) costs 80 bytes plus its share of one
 * hash slot, against about 64 bytes per node (and per frame of every event) in a cJSON tree.
 *
 * What the file says is kept exactly, so `convert` writes back what it read: integers as int64
 * (above 2^53 too), whether a number was written as a float (2.0) or an integer, tuples apart from
 * lists, dict members in file order (a key written twice keeps its first position and its last
 * value, as JSON.parse does), every key, known or not.
 *
 * The typed view of the snapshot's parts (devices, segments, blocks, each device's trace as an array
 * of fixed-size event records) is model/snapshot.h, built over this graph.
 *
 * A doc is immutable once built (model/build.h builds it) and may be read from several threads;
 * the one value an analysis keeps with it (cs_doc_keep) is derived from its content. */
#ifndef CS_MODEL_DOC_H
#define CS_MODEL_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A value. The low 3 bits are its tag, the rest its payload. */
typedef uint64_t cs_val_t;

enum {
  CS_TAG_SPECIAL = 0, /* payload: CS_SPECIAL_* (the builder also uses it for open containers) */
  CS_TAG_SMALLINT = 1, /* payload: a signed 61-bit integer */
  CS_TAG_BIGINT = 2,   /* payload: index into the doc's int64 table */
  CS_TAG_FLOAT = 3,    /* payload: index into the doc's float table << 1 | written as an integer */
  CS_TAG_STRING = 4,   /* payload: string id */
  CS_TAG_LIST = 5,     /* payload: arena offset of the container | its depth << CS_VAL_OFFSET_BITS */
  CS_TAG_TUPLE = 6,
  CS_TAG_DICT = 7,
};
enum { CS_SPECIAL_NULL = 0, CS_SPECIAL_FALSE = 1, CS_SPECIAL_TRUE = 2, CS_SPECIAL_ABSENT = 3 };

#define CS_VAL_MAKE(tag, payload) (((cs_val_t)(payload) << 3) | (cs_val_t)(tag))
#define CS_VAL_NULL CS_VAL_MAKE(CS_TAG_SPECIAL, CS_SPECIAL_NULL)
#define CS_VAL_FALSE CS_VAL_MAKE(CS_TAG_SPECIAL, CS_SPECIAL_FALSE)
#define CS_VAL_TRUE CS_VAL_MAKE(CS_TAG_SPECIAL, CS_SPECIAL_TRUE)
/* What a lookup returns for a key that is not there (never stored in a container). */
#define CS_VAL_ABSENT CS_VAL_MAKE(CS_TAG_SPECIAL, CS_SPECIAL_ABSENT)

static inline unsigned cs_val_tag(cs_val_t v) { return (unsigned)(v & 7); }
static inline uint64_t cs_val_payload(cs_val_t v) { return v >> 3; }

/* A container's payload: its arena offset in the low bits, its nesting depth above them, so that a
 * parent learns its depth from its items' words without reading their headers (a cache miss each). */
#define CS_VAL_OFFSET_BITS 40
static inline uint64_t cs_val_offset(cs_val_t v) { return cs_val_payload(v) & (((uint64_t)1 << CS_VAL_OFFSET_BITS) - 1); }
static inline unsigned cs_val_depth(cs_val_t v) { return (unsigned)(cs_val_payload(v) >> CS_VAL_OFFSET_BITS); }

static inline bool cs_val_absent(cs_val_t v) { return v == CS_VAL_ABSENT; }
static inline bool cs_val_is_null(cs_val_t v) { return v == CS_VAL_NULL; }
static inline bool cs_val_is_bool(cs_val_t v) { return v == CS_VAL_TRUE || v == CS_VAL_FALSE; }
static inline bool cs_val_is_true(cs_val_t v) { return v == CS_VAL_TRUE; }
static inline bool cs_val_is_number(cs_val_t v) {
  unsigned t = cs_val_tag(v);
  return t == CS_TAG_SMALLINT || t == CS_TAG_BIGINT || t == CS_TAG_FLOAT;
}
static inline bool cs_val_is_string(cs_val_t v) { return cs_val_tag(v) == CS_TAG_STRING; }
/* A list or a tuple (both are arrays to JavaScript, and to every analysis). */
static inline bool cs_val_is_array(cs_val_t v) {
  return cs_val_tag(v) == CS_TAG_LIST || cs_val_tag(v) == CS_TAG_TUPLE;
}
static inline bool cs_val_is_tuple(cs_val_t v) { return cs_val_tag(v) == CS_TAG_TUPLE; }
static inline bool cs_val_is_dict(cs_val_t v) { return cs_val_tag(v) == CS_TAG_DICT; }
static inline bool cs_val_is_container(cs_val_t v) { return cs_val_tag(v) >= CS_TAG_LIST; }

/* Keys every snapshot uses, interned first, so that analyses look members up by id with no hashing
 * or string comparison (cs_doc_get_key). The X-macro keeps the enum and the strings together. */
#define CS_DOC_KEYS(X)                                                                                   \
  X(ACTION, "action") X(ACTIVE_SIZE, "active_size") X(ADDR, "addr") X(ADDRESS, "address")               \
  X(ALLOCATED_SIZE, "allocated_size") X(ALLOCATOR_SETTINGS, "allocator_settings") X(BLOCKS, "blocks")   \
  X(CATEGORY, "category") X(COMPILE_CONTEXT, "compile_context") X(CUDASNAP, "cudasnap")                 \
  X(DEVICE, "device") X(DEVICE_FREE, "device_free") X(DEVICE_TRACES, "device_traces")                   \
  X(EXTERNAL_ANNOTATIONS, "external_annotations") X(FILENAME, "filename") X(FRAMES, "frames")           \
  X(IS_EXPANDABLE, "is_expandable") X(LINE, "line") X(NAME, "name") X(REQUESTED_SIZE, "requested_size") \
  X(SEGMENT_POOL_ID, "segment_pool_id") X(SEGMENT_TYPE, "segment_type") X(SEGMENTS, "segments")         \
  X(SIZE, "size") X(STATE, "state") X(STREAM, "stream") X(TIME_US, "time_us")                          \
  X(TOTAL_SIZE, "total_size") X(USER_METADATA, "user_metadata") X(FORWARD_FRAMES, "forward_frames")     \
  X(PHASE, "phase") X(STAGE, "stage") X(MEMORY_STATS, "memory_stats") X(TRIGGER, "trigger")            \
  X(INLINED, "inlined") X(THREAD, "thread") X(THREAD_NAME, "thread_name")

typedef enum cs_doc_key_e {
  CS_KEY_NONE_ = 0, /* string id 0 is the empty string */
#define CS_DOC_KEY_ENUM(id, text) CS_KEY_##id,
  CS_DOC_KEYS(CS_DOC_KEY_ENUM)
#undef CS_DOC_KEY_ENUM
  CS_KEY_COUNT_
} cs_doc_key_t;

typedef struct cs_doc_s cs_doc_t;

void cs_doc_free(cs_doc_t *doc);

/* The top-level value. */
cs_val_t cs_doc_root(const cs_doc_t *doc);

/* Bytes the doc holds (its tables and arena), for the benchmarks and the memory bound. */
size_t cs_doc_bytes(const cs_doc_t *doc);

/* One value an analysis derives from the whole doc and keeps with it, so that it is derived once
 * however many calls need it (analysis/sites.c: the snapshot's allocator frames, compiled): the
 * doc's content never changes for it. cs_doc_kept is NULL until cs_doc_keep; cs_doc_keep keeps
 * `value` unless one is kept already (threads racing to derive it: the first wins, and the other
 * values are freed with their free_fn) and returns the one kept. cs_doc_free frees it. */
void *cs_doc_kept(const cs_doc_t *doc);
void *cs_doc_keep(const cs_doc_t *doc, void *value, void (*free_fn)(void *));

/* ---- scalars ---------------------------------------------------------------------------------- */

/* An integer exactly; an integral float (2.0) counts as the integer it equals, as readers of sizes
 * and addresses take it. False for anything else (non-integral or non-finite floats, floats outside
 * int64, strings, ...). */
bool cs_doc_int(const cs_doc_t *doc, cs_val_t v, int64_t *out);

/* A number as JavaScript's Number holds it (the nearest double); NAN for a value that is not a
 * number. */
double cs_doc_number(const cs_doc_t *doc, cs_val_t v);

/* True for a number written as a float: a JSON number with a fraction or an exponent, a pickle
 * BINFLOAT. A JSON integer too big for int64 is held as a double but is not "written as a float". */
bool cs_doc_is_float(const cs_doc_t *doc, cs_val_t v);

/* A string's bytes (NUL-terminated; *len, may be NULL, gets the length, which may count NULs inside
 * it); NULL for a value that is not a string. */
const char *cs_doc_str(const cs_doc_t *doc, cs_val_t v, size_t *len);

/* String ids: every distinct string (values and dict keys) once. */
const char *cs_doc_string(const cs_doc_t *doc, uint32_t id, size_t *len);
/* The id of an existing string, or UINT32_MAX when the doc holds no such string. */
uint32_t cs_doc_string_id(const cs_doc_t *doc, const char *s, size_t len);

/* ---- containers ------------------------------------------------------------------------------- */

/* Items of a list or tuple, members of a dict; 0 for anything else. */
size_t cs_doc_len(const cs_doc_t *doc, cs_val_t v);

/* The i-th item of a list or tuple, or value of a dict's i-th member (i < cs_doc_len). */
cs_val_t cs_doc_at(const cs_doc_t *doc, cs_val_t v, size_t i);

/* The items of a list or tuple (or the values of a dict) as an array of cs_doc_len words. */
const cs_val_t *cs_doc_items(const cs_doc_t *doc, cs_val_t v);

/* The key (string id) of a dict's i-th member. */
uint32_t cs_doc_key_id_at(const cs_doc_t *doc, cs_val_t dict, size_t i);
const char *cs_doc_key_at(const cs_doc_t *doc, cs_val_t dict, size_t i);

/* A dict's member by key; CS_VAL_ABSENT when dict is not a dict or has no such key. */
cs_val_t cs_doc_get_id(const cs_doc_t *doc, cs_val_t dict, uint32_t key_id);
static inline cs_val_t cs_doc_get_key(const cs_doc_t *doc, cs_val_t dict, cs_doc_key_t key) {
  return cs_doc_get_id(doc, dict, (uint32_t)key);
}
cs_val_t cs_doc_get(const cs_doc_t *doc, cs_val_t dict, const char *key);

/* Whether a in doc da and b in doc db hold the same content: the same types (an integer never equals
 * a float, a tuple never a list), integers exactly, floats bit for bit but for 0.0 == -0.0 being
 * different (as Python's pickle keeps them), strings byte for byte, dict members in the same order.
 * For tests and tools over trusted files: it walks shared values once per reference. */
bool cs_doc_values_equal(const cs_doc_t *da, cs_val_t a, const cs_doc_t *db, cs_val_t b);

/* Nesting depth of a container (1 for one holding no container), 0 for a scalar. Every doc is
 * bounded by CS_DOC_MAX_DEPTH, so walkers may recurse. */
unsigned cs_doc_depth(const cs_doc_t *doc, cs_val_t v);
enum { CS_DOC_MAX_DEPTH = 1000 };

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The protocol buffers wire format, for the few messages of pprof's profile.proto
 * (https://github.com/google/pprof/blob/main/proto/profile.proto): varints and length-delimited
 * fields, nothing else (no fixed32/64, no groups, no decoding).
 *
 * Hand-written rather than libprotobuf-c: profile.proto needs six small messages written once, and
 * protobuf-c would bring a code generator (protoc-c) into the build and a copy of the schema into
 * the repository for about the 60 lines below.
 *
 * A message is built in a growing buffer; a nested message is built in a buffer of its own and
 * added with cs_pb_bytes (its length must be known before its bytes). Host memory failures are
 * sticky: later calls do nothing and cs_pb_t.error says so. */
#ifndef CS_EXPORT_PROTO_H
#define CS_EXPORT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cs_pb_s {
  uint8_t *data;
  size_t len, cap;
  bool error; /* a growth failed: the bytes are incomplete */
} cs_pb_t;

void cs_pb_init(cs_pb_t *b);
void cs_pb_free(cs_pb_t *b);
/* Empty it, keeping its memory (one scratch buffer for a million small messages). */
static inline void cs_pb_clear(cs_pb_t *b) { b->len = 0; }

/* A varint field (int64, uint64: two's complement for negative values, as protobuf's int64). */
void cs_pb_uint(cs_pb_t *b, uint32_t field, uint64_t value);
/* The same, left out when value is 0 (proto3's default, which readers assume). */
void cs_pb_uint_nz(cs_pb_t *b, uint32_t field, uint64_t value);
/* A length-delimited field: a string, a nested message's bytes, or a packed repeated varint run. */
void cs_pb_bytes(cs_pb_t *b, uint32_t field, const void *bytes, size_t len);
/* Varints alone, with no tag (the items of a packed field, built in a buffer of their own). */
void cs_pb_varint(cs_pb_t *b, uint64_t value);

#endif

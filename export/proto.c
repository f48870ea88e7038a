/* SPDX-License-Identifier: Apache-2.0 */
/* Protocol buffers encoding (contract in export/proto.h). */
#include "export/proto.h"

#include <stdlib.h>
#include <string.h>

enum { CS_PB_VARINT = 0, CS_PB_LEN = 2 };

void cs_pb_init(cs_pb_t *b) { *b = (cs_pb_t){.data = NULL}; }

void cs_pb_free(cs_pb_t *b) {
  free(b->data);
  cs_pb_init(b);
}

static bool cs_pb_reserve(cs_pb_t *b, size_t more) {
  if (b->error) return false;
  if (b->cap - b->len >= more) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < more) {
    if (cap > SIZE_MAX / 2) {
      b->error = true;
      return false;
    }
    cap *= 2;
  }
  uint8_t *data = realloc(b->data, cap);
  if (data == NULL) {
    b->error = true;
    return false;
  }
  b->data = data;
  b->cap = cap;
  return true;
}

void cs_pb_varint(cs_pb_t *b, uint64_t value) {
  if (!cs_pb_reserve(b, 10)) return;
  while (value >= 0x80) {
    b->data[b->len++] = (uint8_t)(value | 0x80);
    value >>= 7;
  }
  b->data[b->len++] = (uint8_t)value;
}

void cs_pb_uint(cs_pb_t *b, uint32_t field, uint64_t value) {
  cs_pb_varint(b, (uint64_t)field << 3 | CS_PB_VARINT);
  cs_pb_varint(b, value);
}

void cs_pb_uint_nz(cs_pb_t *b, uint32_t field, uint64_t value) {
  if (value != 0) cs_pb_uint(b, field, value);
}

void cs_pb_bytes(cs_pb_t *b, uint32_t field, const void *bytes, size_t len) {
  cs_pb_varint(b, (uint64_t)field << 3 | CS_PB_LEN);
  cs_pb_varint(b, len);
  if (len == 0 || !cs_pb_reserve(b, len)) return;
  memcpy(b->data + b->len, bytes, len);
  b->len += len;
}

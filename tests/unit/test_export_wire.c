/* SPDX-License-Identifier: Apache-2.0 */
/* The wire formats under `cudasnap export --format pprof` (export/proto.h, export/gzip.h): the
 * exact protobuf bytes of varints, negative numbers, zero fields and length-delimited fields (as
 * protobuf's encoding reference gives them), and a gzip stream that zlib reads back whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "export/gzip.h"
#include "export/proto.h"
#include "memviz/sink.h"

static void assert_bytes(const cs_pb_t *b, const uint8_t *want, size_t n) {
  assert_false(b->error);
  assert_int_equal(b->len, n);
  assert_memory_equal(b->data, want, n);
}

static void test_varint_fields(void **state) {
  (void)state;
  cs_pb_t b;
  cs_pb_init(&b);
  cs_pb_uint(&b, 1, 150); /* the encoding guide's example: 08 96 01 */
  const uint8_t v150[] = {0x08, 0x96, 0x01};
  assert_bytes(&b, v150, sizeof v150);
  cs_pb_clear(&b);
  cs_pb_uint(&b, 2, (uint64_t)-1); /* int64 -1: ten bytes of two's complement */
  const uint8_t minus1[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  assert_bytes(&b, minus1, sizeof minus1);
  cs_pb_clear(&b);
  cs_pb_uint_nz(&b, 3, 0); /* proto3's default is left out */
  assert_int_equal(b.len, 0);
  cs_pb_uint(&b, 16, 1); /* field 16: a two-byte tag */
  const uint8_t f16[] = {0x80, 0x01, 0x01};
  assert_bytes(&b, f16, sizeof f16);
  cs_pb_free(&b);
}

static void test_length_delimited(void **state) {
  (void)state;
  cs_pb_t b, packed;
  cs_pb_init(&b);
  cs_pb_init(&packed);
  cs_pb_bytes(&b, 2, "testing", 7); /* 12 07 74 65 73 74 69 6e 67 */
  const uint8_t s[] = {0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'};
  assert_bytes(&b, s, sizeof s);
  cs_pb_varint(&packed, 3); /* a packed repeated field: 22 06 03 8e 02 9e a7 05 */
  cs_pb_varint(&packed, 270);
  cs_pb_varint(&packed, 86942);
  cs_pb_clear(&b);
  cs_pb_bytes(&b, 4, packed.data, packed.len);
  const uint8_t p[] = {0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05};
  assert_bytes(&b, p, sizeof p);
  /* a long field: its length is a varint too */
  char big[300];
  memset(big, 'x', sizeof big);
  cs_pb_clear(&b);
  cs_pb_bytes(&b, 1, big, sizeof big);
  assert_int_equal(b.len, 1 + 2 + sizeof big);
  assert_int_equal(b.data[1], 0xac);
  assert_int_equal(b.data[2], 0x02);
  cs_pb_free(&b);
  cs_pb_free(&packed);
}

static void test_gzip_reads_back(void **state) {
  (void)state;
  cs_mem_sink_t mem;
  cs_mem_sink_init(&mem);
  cs_gzip_sink_t *g = cs_gzip_sink_create(cs_mem_sink(&mem));
  assert_non_null(g);
  cs_sink_t sink = cs_gzip_sink(g);
  /* 4 MB in pieces of every size, compressible and not */
  size_t total = 0;
  uint8_t *want = malloc(4 << 20);
  assert_non_null(want);
  uint32_t x = 12345;
  for (size_t i = 0; i < (size_t)4 << 20; i++) {
    x = x * 1103515245u + 12345u;
    want[i] = i < (2u << 20) ? (uint8_t)(i % 7) : (uint8_t)(x >> 24);
  }
  for (size_t piece = 1; total < (size_t)4 << 20; piece = piece * 3 + 1) {
    size_t n = piece < ((size_t)4 << 20) - total ? piece : ((size_t)4 << 20) - total;
    assert_int_equal(sink.write(sink.ctx, want + total, n), 0);
    total += n;
  }
  assert_int_equal(cs_gzip_sink_finish(g), 0);
  uint8_t *got = malloc(total + 1);
  assert_non_null(got);
  z_stream z = {0};
  assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK); /* gzip header and trailer */
  z.next_in = (Bytef *)mem.data;
  z.avail_in = (uInt)mem.len;
  z.next_out = got;
  z.avail_out = (uInt)(total + 1);
  assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END); /* the CRC and length check out */
  assert_int_equal(z.total_out, total);
  assert_memory_equal(got, want, total);
  inflateEnd(&z);
  free(got);
  free(want);
  cs_mem_sink_free(&mem);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_varint_fields),
      cmocka_unit_test(test_length_delimited),
      cmocka_unit_test(test_gzip_reads_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

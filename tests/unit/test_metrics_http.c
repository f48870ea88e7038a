/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's HTTP (cli/metrics_http.h): where a request's head ends, what it asks for (the
 * route, HEAD, gzip as Prometheus and curl ask for it), and the whole reply, gzip'ed bytes read back
 * through zlib. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "cli/metrics_http.h"

static cs_http_request_t parse(const char *head) {
  cs_http_request_t req;
  cs_http_parse(head, strlen(head), &req);
  return req;
}

static void test_head_end(void **state) {
  (void)state;
  const char *r = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nextra";
  assert_int_equal(cs_http_head_end(r, strlen(r)), strlen(r) - strlen("extra"));
  assert_int_equal(cs_http_head_end("GET / HTTP/1.0\n\n", 16), 16);
  assert_int_equal(cs_http_head_end("GET /metrics HTTP/1.1\r\nHost: x\r\n", 32), 0);
  assert_int_equal(cs_http_head_end("GET /metrics HTTP/1.1\r\n\r", 24), 0);
  assert_int_equal(cs_http_head_end("", 0), 0);
}

static void test_routes(void **state) {
  (void)state;
  cs_http_request_t req = parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(req.route, CS_HTTP_METRICS);
  assert_false(req.head);
  assert_false(req.gzip);
  assert_int_equal(parse("GET /metrics?x=1 HTTP/1.0\r\n\r\n").route, CS_HTTP_METRICS);
  req = parse("HEAD /metrics HTTP/1.1\r\n\r\n");
  assert_int_equal(req.route, CS_HTTP_METRICS);
  assert_true(req.head);
  assert_int_equal(parse("GET / HTTP/1.1\r\n\r\n").route, CS_HTTP_NOT_FOUND);
  assert_int_equal(parse("GET /metrics/ HTTP/1.1\r\n\r\n").route, CS_HTTP_NOT_FOUND);
  assert_int_equal(parse("GET /metricsx HTTP/1.1\r\n\r\n").route, CS_HTTP_NOT_FOUND);
  assert_int_equal(parse("POST /metrics HTTP/1.1\r\n\r\n").route, CS_HTTP_BAD_METHOD);
  assert_int_equal(parse("get /metrics HTTP/1.1\r\n\r\n").route, CS_HTTP_BAD_METHOD); /* methods are case-sensitive */
  assert_int_equal(parse("NONSENSE\r\n\r\n").route, CS_HTTP_BAD_REQUEST);
  assert_int_equal(parse("GET /metrics\r\n\r\n").route, CS_HTTP_BAD_REQUEST);
  assert_int_equal(parse("GET /metrics HTTP/2.0\r\n\r\n").route, CS_HTTP_BAD_REQUEST);
  assert_int_equal(parse("GET  /metrics HTTP/1.1\r\n\r\n").route, CS_HTTP_BAD_REQUEST);
  assert_int_equal(parse("GET /metrics HTTP/1.1 x\r\n\r\n").route, CS_HTTP_BAD_REQUEST);
}

static void test_gzip_asked(void **state) {
  (void)state;
  /* what Prometheus sends, and what curl --compressed sends */
  assert_true(parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n").gzip);
  assert_true(parse("GET /metrics HTTP/1.1\r\naccept-encoding: deflate, gzip\r\n\r\n").gzip);
  assert_true(parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: br;q=1.0, gzip;q=0.5\r\n\r\n").gzip);
  assert_true(parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: *\r\n\r\n").gzip);
  assert_true(parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: GZIP;q=0.001\r\n\r\n").gzip);
  assert_false(parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip;q=0\r\n\r\n").gzip);
  assert_false(parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip; q=0.000\r\n\r\n").gzip);
  assert_false(parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: identity\r\n\r\n").gzip);
  assert_false(parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: xgzip\r\n\r\n").gzip);
  assert_false(parse("GET /metrics HTTP/1.1\r\nX-Accept-Encoding: gzip\r\n\r\n").gzip);
  assert_false(parse("GET /metrics HTTP/1.1\r\n\r\n").gzip);
}

/* The reply's head (up to its blank line) as a string, and where its body starts. */
static char *reply_head(const char *reply, size_t len, size_t *body_at) {
  size_t end = cs_http_head_end(reply, len);
  assert_true(end > 0);
  *body_at = end;
  char *head = malloc(end + 1);
  memcpy(head, reply, end);
  head[end] = '\0';
  return head;
}

static void test_reply(void **state) {
  (void)state;
  static const char body[] = "# TYPE x gauge\nx 1\n";
  cs_http_request_t req = parse("GET /metrics HTTP/1.1\r\n\r\n");
  char *out;
  size_t len, at;
  assert_int_equal(cs_http_reply(&req, body, sizeof body - 1, &out, &len), 0);
  char *head = reply_head(out, len, &at);
  assert_non_null(strstr(head, "HTTP/1.1 200 OK\r\n"));
  assert_non_null(strstr(head, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  assert_non_null(strstr(head, "Content-Length: 19\r\n"));
  assert_non_null(strstr(head, "Connection: close\r\n"));
  assert_null(strstr(head, "Content-Encoding"));
  assert_int_equal(len - at, sizeof body - 1);
  assert_memory_equal(out + at, body, sizeof body - 1);
  free(head);
  free(out);
  /* HEAD: the same head, no body */
  req = parse("HEAD /metrics HTTP/1.1\r\n\r\n");
  assert_int_equal(cs_http_reply(&req, body, sizeof body - 1, &out, &len), 0);
  head = reply_head(out, len, &at);
  assert_non_null(strstr(head, "Content-Length: 19\r\n"));
  assert_int_equal(len, at);
  free(head);
  free(out);
  /* 404, 405 (with Allow), 400 */
  req = parse("GET /x HTTP/1.1\r\n\r\n");
  assert_int_equal(cs_http_reply(&req, body, sizeof body - 1, &out, &len), 0);
  assert_memory_equal(out, "HTTP/1.1 404 Not Found\r\n", 24);
  free(out);
  req = parse("PUT /metrics HTTP/1.1\r\n\r\n");
  assert_int_equal(cs_http_reply(&req, body, sizeof body - 1, &out, &len), 0);
  head = reply_head(out, len, &at);
  assert_non_null(strstr(head, "HTTP/1.1 405 Method Not Allowed\r\n"));
  assert_non_null(strstr(head, "Allow: GET, HEAD\r\n"));
  free(head);
  free(out);
  req = (cs_http_request_t){.route = CS_HTTP_TOO_BIG};
  assert_int_equal(cs_http_reply(&req, NULL, 0, &out, &len), 0);
  assert_memory_equal(out, "HTTP/1.1 431 ", 13);
  free(out);
  /* no exposition (no host memory for it): 500 */
  req = parse("GET /metrics HTTP/1.1\r\n\r\n");
  assert_int_equal(cs_http_reply(&req, NULL, 0, &out, &len), 0);
  assert_memory_equal(out, "HTTP/1.1 500 ", 13);
  free(out);
}

static void test_reply_gzip(void **state) {
  (void)state;
  size_t n = 1 << 20;
  char *body = malloc(n);
  for (size_t i = 0; i < n; i++) body[i] = "cudasnap_allocated_bytes{pid=\"1\"} 42\n"[i % 38];
  cs_http_request_t req = parse("GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n");
  char *out;
  size_t len, at;
  assert_int_equal(cs_http_reply(&req, body, n, &out, &len), 0);
  char *head = reply_head(out, len, &at);
  assert_non_null(strstr(head, "Content-Encoding: gzip\r\n"));
  char want[64];
  snprintf(want, sizeof want, "Content-Length: %zu\r\n", len - at);
  assert_non_null(strstr(head, want));
  assert_true(len - at < n / 10);
  /* zlib reads it back: a gzip member (windowBits 16 + 15) holding the body */
  char *back = malloc(n + 1);
  z_stream z = {0};
  assert_int_equal(inflateInit2(&z, 16 + 15), Z_OK);
  z.next_in = (unsigned char *)out + at;
  z.avail_in = (uInt)(len - at);
  z.next_out = (unsigned char *)back;
  z.avail_out = (uInt)(n + 1);
  assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
  assert_int_equal(z.total_out, n);
  assert_memory_equal(back, body, n);
  inflateEnd(&z);
  free(back);
  free(head);
  free(out);
  free(body);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_head_end),
      cmocka_unit_test(test_routes),
      cmocka_unit_test(test_gzip_asked),
      cmocka_unit_test(test_reply),
      cmocka_unit_test(test_reply_gzip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

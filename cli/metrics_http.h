/* SPDX-License-Identifier: Apache-2.0 */
/* The little HTTP/1.1 that `cudasnap metrics` speaks (docs/live.md): the head of a request read
 * and judged, and a whole reply (status line, headers, body, gzip'ed when the client takes it)
 * built in one buffer, so that the server only moves bytes. One request per connection, closed
 * after the reply ("Connection: close"), as a Prometheus scrape needs. */
#ifndef CS_CLI_METRICS_HTTP_H
#define CS_CLI_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/* The most bytes a request's head (request line and headers) may take: a scraper sends a few
 * hundred. */
enum { CS_HTTP_HEAD_MAX = 8192 };

/* The offset just past the blank line that ends the head in buf[0..len) ("\r\n\r\n", or "\n\n"
 * from a lenient client), or 0 while it has not all arrived. */
size_t cs_http_head_end(const char *buf, size_t len);

typedef enum cs_http_route_e {
  CS_HTTP_METRICS = 0,  /* GET or HEAD /metrics (a query string is ignored) */
  CS_HTTP_NOT_FOUND,    /* GET or HEAD of another path: 404 */
  CS_HTTP_BAD_METHOD,   /* neither GET nor HEAD: 405 */
  CS_HTTP_BAD_REQUEST,  /* no request line "METHOD TARGET HTTP/1.x": 400 */
  CS_HTTP_TOO_BIG,      /* no end of the head within CS_HTTP_HEAD_MAX bytes: 431 */
} cs_http_route_t;

typedef struct cs_http_request_s {
  cs_http_route_t route;
  bool head; /* HEAD: the headers of the reply to GET, without its body */
  bool gzip; /* Accept-Encoding takes gzip (as Prometheus sends it), with a q above 0 */
} cs_http_request_t;

/* The request whose head is head[0..len) (the whole head: cs_http_head_end's offset). */
void cs_http_parse(const char *head, size_t len, cs_http_request_t *req);

/* The reply to req in one malloc'ed buffer *out of *out_len bytes: for CS_HTTP_METRICS, body
 * (body_len bytes, the exposition) with its content type, gzip'ed when req->gzip (500 when body
 * is NULL: no host memory for it); otherwise a short text saying what is wrong. HEAD gets the
 * headers of GET's reply alone. Returns 0, or ENOMEM. */
int cs_http_reply(const cs_http_request_t *req, const char *body, size_t body_len, char **out, size_t *out_len);

#endif

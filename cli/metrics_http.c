/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's HTTP (contract in cli/metrics_http.h). */
#include "cli/metrics_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "export/gzip.h"
#include "memviz/sink.h"

size_t cs_http_head_end(const char *buf, size_t len) {
  for (size_t i = 0; i + 1 < len; i++) {
    if (buf[i] != '\n') continue;
    if (buf[i + 1] == '\n') return i + 2;
    if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n') return i + 3;
  }
  return 0;
}

/* Does one element of an Accept-Encoding list, "gzip" or "gzip;q=0.5" (or "*"), take gzip? */
static bool cs_http_takes_gzip(const char *item, size_t len) {
  while (len > 0 && (*item == ' ' || *item == '\t')) {
    item++;
    len--;
  }
  size_t name = 0;
  while (name < len && item[name] != ';' && item[name] != ' ' && item[name] != '\t') name++;
  if (!((name == 4 && strncasecmp(item, "gzip", 4) == 0) || (name == 1 && item[0] == '*'))) return false;
  /* q=0 (0, 0.0, 0.00, 0.000) refuses it; any other q takes it */
  for (size_t i = name; i + 2 < len; i++) {
    if ((item[i] == 'q' || item[i] == 'Q') && item[i + 1] == '=') {
      const char *q = item + i + 2;
      size_t qlen = len - i - 2;
      if (qlen == 0 || q[0] != '0') return true;
      for (size_t k = 1; k < qlen && q[k] != ' ' && q[k] != ';'; k++)
        if (q[k] != '.' && q[k] != '0') return true;
      return false;
    }
  }
  return true;
}

/* The value of header "name:" in the head (its first occurrence), or NULL; *len its length. */
static const char *cs_http_header(const char *head, size_t hlen, const char *name, size_t *len) {
  size_t nlen = strlen(name);
  const char *line = memchr(head, '\n', hlen); /* the request line is not a header */
  while (line && (size_t)(line + 1 - head) < hlen) {
    line++;
    size_t left = hlen - (size_t)(line - head);
    const char *end = memchr(line, '\n', left);
    size_t llen = end ? (size_t)(end - line) : left;
    if (llen > nlen && line[nlen] == ':' && strncasecmp(line, name, nlen) == 0) {
      const char *v = line + nlen + 1;
      size_t vlen = llen - nlen - 1;
      while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) vlen--;
      *len = vlen;
      return v;
    }
    line = end;
  }
  return NULL;
}

void cs_http_parse(const char *head, size_t len, cs_http_request_t *req) {
  *req = (cs_http_request_t){.route = CS_HTTP_BAD_REQUEST, .head = false, .gzip = false};
  const char *eol = memchr(head, '\n', len);
  size_t llen = eol ? (size_t)(eol - head) : len;
  if (llen > 0 && head[llen - 1] == '\r') llen--;
  /* METHOD SP TARGET SP HTTP/1.x, nothing else on the line */
  const char *sp1 = memchr(head, ' ', llen);
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', llen - (size_t)(sp1 + 1 - head)) : NULL;
  if (!sp1 || !sp2 || sp1 == head || sp2 == sp1 + 1) return;
  const char *version = sp2 + 1;
  size_t vlen = llen - (size_t)(version - head);
  if (vlen != 8 || strncmp(version, "HTTP/1.", 7) != 0 || (version[7] != '0' && version[7] != '1')) return;
  size_t mlen = (size_t)(sp1 - head);
  const char *target = sp1 + 1;
  size_t tlen = (size_t)(sp2 - target);
  const char *query = memchr(target, '?', tlen);
  if (query) tlen = (size_t)(query - target);
  bool get = mlen == 3 && strncmp(head, "GET", 3) == 0;
  req->head = mlen == 4 && strncmp(head, "HEAD", 4) == 0;
  if (!get && !req->head) {
    req->route = CS_HTTP_BAD_METHOD;
    return;
  }
  req->route = tlen == 8 && strncmp(target, "/metrics", 8) == 0 ? CS_HTTP_METRICS : CS_HTTP_NOT_FOUND;
  size_t alen;
  const char *accept = cs_http_header(head, len, "Accept-Encoding", &alen);
  while (accept && alen > 0 && !req->gzip) {
    const char *comma = memchr(accept, ',', alen);
    size_t item = comma ? (size_t)(comma - accept) : alen;
    req->gzip = cs_http_takes_gzip(accept, item);
    if (!comma) break;
    alen -= item + 1;
    accept = comma + 1;
  }
}

/* body gzip'ed into a malloc'ed buffer (zlib through export/gzip.h). */
static int cs_http_gzip(const char *body, size_t len, char **out, size_t *out_len) {
  cs_mem_sink_t mem;
  cs_mem_sink_init(&mem);
  cs_gzip_sink_t *g = cs_gzip_sink_create(cs_mem_sink(&mem));
  if (!g) return ENOMEM;
  cs_sink_t sink = cs_gzip_sink(g);
  int err = len ? sink.write(sink.ctx, body, len) : 0;
  int end = cs_gzip_sink_finish(g);
  if (!err) err = end;
  if (!err) err = mem.error;
  if (err) {
    cs_mem_sink_free(&mem);
    return err;
  }
  *out = mem.data;
  *out_len = mem.len;
  return 0;
}

int cs_http_reply(const cs_http_request_t *req, const char *body, size_t body_len, char **out, size_t *out_len) {
  static const struct {
    const char *status, *text;
  } problems[] = {
      [CS_HTTP_NOT_FOUND] = {"404 Not Found", "not found: the metrics are at /metrics\n"},
      [CS_HTTP_BAD_METHOD] = {"405 Method Not Allowed", "only GET and HEAD\n"},
      [CS_HTTP_BAD_REQUEST] = {"400 Bad Request", "bad request\n"},
      [CS_HTTP_TOO_BIG] = {"431 Request Header Fields Too Large", "the request's head is too big\n"},
  };
  const char *status = "200 OK", *type = "text/plain; version=0.0.4; charset=utf-8";
  char *zipped = NULL;
  bool gzip = false;
  if (req->route == CS_HTTP_METRICS && !body) {
    status = "500 Internal Server Error";
    type = "text/plain; charset=utf-8";
    body = "out of host memory for the exposition\n";
    body_len = strlen(body);
  } else if (req->route != CS_HTTP_METRICS) {
    status = problems[req->route].status;
    type = "text/plain; charset=utf-8";
    body = problems[req->route].text;
    body_len = strlen(body);
  } else if (req->gzip) {
    size_t zlen;
    if (cs_http_gzip(body, body_len, &zipped, &zlen) != 0) return ENOMEM;
    body = zipped;
    body_len = zlen;
    gzip = true;
  }
  char head[512];
  int hlen = snprintf(head, sizeof head,
                      "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s%sConnection: close\r\n\r\n",
                      status, type, body_len, gzip ? "Content-Encoding: gzip\r\n" : "",
                      req->route == CS_HTTP_METRICS ? "Vary: Accept-Encoding\r\n" : "",
                      req->route == CS_HTTP_BAD_METHOD ? "Allow: GET, HEAD\r\n" : "");
  size_t send_body = req->head ? 0 : body_len;
  char *reply = malloc((size_t)hlen + send_body + 1);
  if (!reply) {
    free(zipped);
    return ENOMEM;
  }
  memcpy(reply, head, (size_t)hlen);
  if (send_body) memcpy(reply + hlen, body, send_body);
  free(zipped);
  *out = reply;
  *out_len = (size_t)hlen + send_body;
  return 0;
}

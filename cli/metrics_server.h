/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's server (`cudasnap metrics --listen`): one thread, non-blocking sockets and one
 * poll, so that no client waits for another (docs/live.md, "What the exporter guarantees"). Each
 * connection gets one request and one reply, then is closed:
 *   - the whole head of the request within CS_METRICS_REQUEST_MS of the connection, else closed;
 *   - the whole reply taken by the client within CS_METRICS_REPLY_MS of the request, else closed;
 *   - at most CS_METRICS_MAX_CLIENTS connections open: a new one closes the oldest;
 *   - SIGINT and SIGTERM end the server at once, whatever its clients do.
 * The reply to a request is built once, when its head is whole: the exposition then, gzip'ed when
 * the client takes gzip (cli/metrics_http.h). */
#ifndef CS_CLI_METRICS_SERVER_H
#define CS_CLI_METRICS_SERVER_H

#include <stddef.h>

enum {
  CS_METRICS_REQUEST_MS = 5000,
  CS_METRICS_REPLY_MS = 10000,
  CS_METRICS_MAX_CLIENTS = 64,
  CS_METRICS_LINGER_MS = 1000, /* after the reply: the client's last bytes read, so that closing
                                  with them unread does not reset the reply away */
};

/* The exposition now, malloc'ed, its length in *len; NULL without host memory. */
typedef char *(*cs_metrics_body_fn)(size_t *len);

/* Serves listen_fd (a listening TCP socket) until SIGINT or SIGTERM, which it takes over, and
 * closes it. Returns 0, or an errno value when it cannot start (no host memory). */
int cs_metrics_serve(int listen_fd, cs_metrics_body_fn body);

#endif

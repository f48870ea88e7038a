/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's server (contract in cli/metrics_server.h). */
#include "cli/metrics_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/metrics_http.h"

typedef enum cs_conn_state_e {
  CS_CONN_FREE = 0,
  CS_CONN_READING,   /* the request's head arrives */
  CS_CONN_WRITING,   /* the reply leaves */
  CS_CONN_LINGERING, /* the reply is out: what the client still sends is read, then closed */
} cs_conn_state_t;

typedef struct cs_conn_s {
  int fd;
  cs_conn_state_t state;
  uint64_t opened;      /* the accept's number: the smallest is the oldest */
  uint64_t deadline_ns; /* CLOCK_MONOTONIC; the connection is closed there */
  size_t head_len;
  char *reply;
  size_t reply_len, sent;
  char head[CS_HTTP_HEAD_MAX];
} cs_conn_t;

typedef struct cs_server_s {
  int listen_fd;
  cs_metrics_body_fn body;
  cs_conn_t *conns; /* CS_METRICS_MAX_CLIENTS */
  uint64_t accepted;
  uint64_t accept_paused_until_ns; /* out of descriptors: accept again later, not in a busy loop */
} cs_server_t;

static volatile sig_atomic_t cs_server_stop;
static void cs_server_on_signal(int sig) {
  (void)sig;
  cs_server_stop = 1;
}

static uint64_t cs_server_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cs_conn_close(cs_conn_t *c) {
  if (c->state == CS_CONN_FREE) return;
  close(c->fd);
  free(c->reply);
  c->reply = NULL;
  c->state = CS_CONN_FREE;
}

/* The reply to the head now whole (or too big), ready to send. false: none could be made. */
static bool cs_conn_answer(cs_server_t *s, cs_conn_t *c, size_t head_end, uint64_t now) {
  cs_http_request_t req;
  if (head_end) cs_http_parse(c->head, head_end, &req);
  else req = (cs_http_request_t){.route = CS_HTTP_TOO_BIG, .head = false, .gzip = false};
  char *body = NULL;
  size_t body_len = 0;
  if (req.route == CS_HTTP_METRICS) body = s->body(&body_len);
  int err = cs_http_reply(&req, body, body_len, &c->reply, &c->reply_len);
  free(body);
  if (err) return false;
  c->sent = 0;
  c->state = CS_CONN_WRITING;
  c->deadline_ns = now + (uint64_t)CS_METRICS_REPLY_MS * 1000000u;
  return true;
}

/* What the client sent, until the head is whole. false: the connection is to be closed. */
static bool cs_conn_read(cs_server_t *s, cs_conn_t *c, uint64_t now) {
  for (;;) {
    if (c->head_len == sizeof c->head) return cs_conn_answer(s, c, 0, now);
    ssize_t n = recv(c->fd, c->head + c->head_len, sizeof c->head - c->head_len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false; /* gone before its request was whole */
    /* the end may straddle what came before: look from 3 bytes back, not from the start again */
    size_t from = c->head_len >= 3 ? c->head_len - 3 : 0;
    c->head_len += (size_t)n;
    size_t end = cs_http_head_end(c->head + from, c->head_len - from);
    if (end) return cs_conn_answer(s, c, from + end, now);
  }
}

/* As much of the reply as the socket takes. false: the connection is to be closed. */
static bool cs_conn_write(cs_conn_t *c, uint64_t now) {
  while (c->sent < c->reply_len) {
    ssize_t n = send(c->fd, c->reply + c->sent, c->reply_len - c->sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    c->sent += (size_t)n;
  }
  free(c->reply);
  c->reply = NULL;
  shutdown(c->fd, SHUT_WR);
  c->state = CS_CONN_LINGERING;
  c->deadline_ns = now + (uint64_t)CS_METRICS_LINGER_MS * 1000000u;
  return true;
}

/* What the client sends after its reply, dropped. false: it closed, so may we. */
static bool cs_conn_linger(cs_conn_t *c) {
  char drop[4096];
  for (;;) {
    ssize_t n = recv(c->fd, drop, sizeof drop, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;
  }
}

/* A place for a new connection: a free one, or the oldest connection's, closed. */
static cs_conn_t *cs_server_slot(cs_server_t *s) {
  cs_conn_t *oldest = NULL;
  for (size_t i = 0; i < CS_METRICS_MAX_CLIENTS; i++) {
    cs_conn_t *c = &s->conns[i];
    if (c->state == CS_CONN_FREE) return c;
    if (!oldest || c->opened < oldest->opened) oldest = c;
  }
  cs_conn_close(oldest);
  return oldest;
}

/* The connections waiting to be accepted, a few at a time (the others at the next turn). */
static void cs_server_accept(cs_server_t *s, uint64_t now) {
  for (int i = 0; i < 16; i++) {
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        s->accept_paused_until_ns = now + 100 * 1000000u;
      return;
    }
    cs_conn_t *c = cs_server_slot(s);
    c->fd = fd;
    c->state = CS_CONN_READING;
    c->opened = s->accepted++;
    c->deadline_ns = now + (uint64_t)CS_METRICS_REQUEST_MS * 1000000u;
    c->head_len = 0;
    c->reply = NULL;
    c->reply_len = c->sent = 0;
  }
}

/* The poll set (the listening socket first, when accepting) and how long it may wait, in a
 * timespec for ppoll: until the first deadline. Returns the number of descriptors. */
static nfds_t cs_server_poll_set(cs_server_t *s, struct pollfd *fds, cs_conn_t **owner, uint64_t now,
                                 struct timespec *wait, bool *forever) {
  nfds_t n = 0;
  uint64_t first = UINT64_MAX;
  if (now >= s->accept_paused_until_ns) {
    fds[n] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
    owner[n++] = NULL;
  } else {
    first = s->accept_paused_until_ns;
  }
  for (size_t i = 0; i < CS_METRICS_MAX_CLIENTS; i++) {
    cs_conn_t *c = &s->conns[i];
    if (c->state == CS_CONN_FREE) continue;
    fds[n] = (struct pollfd){.fd = c->fd, .events = c->state == CS_CONN_WRITING ? POLLOUT : POLLIN};
    owner[n++] = c;
    if (c->deadline_ns < first) first = c->deadline_ns;
  }
  *forever = first == UINT64_MAX;
  uint64_t left = first > now ? first - now : 0;
  wait->tv_sec = (time_t)(left / 1000000000u);
  wait->tv_nsec = (long)(left % 1000000000u);
  return n;
}

static void cs_server_loop(cs_server_t *s, const sigset_t *waiting_mask) {
  struct pollfd fds[CS_METRICS_MAX_CLIENTS + 1];
  cs_conn_t *owner[CS_METRICS_MAX_CLIENTS + 1];
  while (!cs_server_stop) {
    struct timespec wait;
    bool forever;
    nfds_t n = cs_server_poll_set(s, fds, owner, cs_server_now_ns(), &wait, &forever);
    /* the signals are blocked but here: one that came before is taken at once, none is missed */
    int ready = ppoll(fds, n, forever ? NULL : &wait, waiting_mask);
    if (cs_server_stop) break;
    uint64_t now = cs_server_now_ns();
    bool incoming = false;
    for (nfds_t i = 0; ready > 0 && i < n; i++) {
      cs_conn_t *c = owner[i];
      if (!fds[i].revents) continue;
      if (!c) {
        incoming = true; /* accepted after the others are served: a slot it takes is not served twice */
        continue;
      }
      bool open = c->state == CS_CONN_READING   ? cs_conn_read(s, c, now)
                  : c->state == CS_CONN_WRITING ? cs_conn_write(c, now)
                                                : cs_conn_linger(c);
      /* a reply made now is sent at once: most fit the socket's buffer */
      if (open && c->state == CS_CONN_WRITING && c->sent == 0) open = cs_conn_write(c, now);
      if (!open) cs_conn_close(c);
    }
    if (incoming) cs_server_accept(s, now);
    for (size_t i = 0; i < CS_METRICS_MAX_CLIENTS; i++)
      if (s->conns[i].state != CS_CONN_FREE && now >= s->conns[i].deadline_ns) cs_conn_close(&s->conns[i]);
  }
}

int cs_metrics_serve(int listen_fd, cs_metrics_body_fn body) {
  cs_server_t s = {.listen_fd = listen_fd, .body = body};
  s.conns = calloc(CS_METRICS_MAX_CLIENTS, sizeof *s.conns);
  if (!s.conns) {
    close(listen_fd);
    return ENOMEM;
  }
  (void)fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
  sigset_t stops, before;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigprocmask(SIG_BLOCK, &stops, &before);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = cs_server_on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigset_t waiting = before; /* while in ppoll: the caller's mask, the two stops let through */
  sigdelset(&waiting, SIGINT);
  sigdelset(&waiting, SIGTERM);
  cs_server_loop(&s, &waiting);
  for (size_t i = 0; i < CS_METRICS_MAX_CLIENTS; i++) cs_conn_close(&s.conns[i]);
  free(s.conns);
  close(listen_fd);
  sigprocmask(SIG_SETMASK, &before, NULL);
  return 0;
}

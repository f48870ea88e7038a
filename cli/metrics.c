/* `cudasnap metrics`: a Prometheus exporter for this machine, like node_exporter: the live
 * records of the profiled processes (live/live_format.h), read at each scrape of /metrics and
 * written in the text exposition format (cli/metrics_text.h). One thread, one connection at a
 * time: a scrape is a directory listing and a few small reads. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/live_dir.h"
#include "cli/live_rows.h"
#include "cli/metrics_text.h"

static const char cs_metrics_help[] =
    "usage: cudasnap metrics [--listen ADDR:PORT]\n"
    "       cudasnap metrics --once\n"
    "\n"
    "Serve the GPU memory of every profiled process on this machine (of this user; of every user\n"
    "when run as root) to Prometheus, in the text exposition format at http://ADDR:PORT/metrics,\n"
    "read from the processes' live records at each scrape (docs/live.md). Metrics, labelled pid,\n"
    "rank, local_rank, job, host and device:\n"
    "  cudasnap_allocated_bytes, cudasnap_reserved_bytes, cudasnap_peak_allocated_bytes,\n"
    "  cudasnap_driver_used_bytes, cudasnap_driver_used_timestamp_seconds, cudasnap_ooms_total,\n"
    "  cudasnap_site_allocated_bytes (and site),\n"
    "  cudasnap_process_info (pid, rank, local_rank, job, host, exe, interval_ms)\n"
    "It listens on loopback unless given another address (0.0.0.0:PORT or [::]:PORT for every\n"
    "interface; PORT 0 takes a free one). The address it listens on is printed on stdout:\n"
    "  listening on ADDR:PORT\n"
    "Runs until interrupted. docs/live.md has a Prometheus scrape configuration for a cluster (one\n"
    "exporter per node) and a Grafana dashboard.\n"
    "\n"
    "exit status: 0 when interrupted (SIGINT, SIGTERM); 1 when it cannot listen; 2 for a bad option.\n"
    "\n"
    "options:\n"
    "  --listen ADDR:PORT  where to listen (default 127.0.0.1:9840)\n"
    "  --once              print the exposition once on stdout and exit\n"
    "  -h, --help          this text\n";

static const char cs_metrics_name[] = "metrics";

static volatile sig_atomic_t cs_metrics_stop;
static void cs_metrics_on_signal(int sig) {
  (void)sig;
  cs_metrics_stop = 1;
}

/* The exposition now, in a malloc'ed buffer. */
static char *cs_metrics_body(size_t *len) {
  cs_live_list_t list;
  int err = cs_live_rows_list(0, &list);
  char *text = NULL;
  FILE *mem = open_memstream(&text, len);
  if (!mem) {
    if (!err) cs_live_list_free(&list);
    return NULL;
  }
  if (err) {
    /* no samples; the scrape says why */
    fprintf(mem, "# cudasnap: cannot read the live records in %s: %s\n", cs_live_dir(), strerror(err));
  } else {
    cs_metrics_write(mem, &list);
    cs_live_list_free(&list);
  }
  fclose(mem);
  return text;
}

static void cs_metrics_send_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    buf += n;
    len -= (size_t)n;
  }
}

static void cs_metrics_reply(int fd, const char *status, const char *type, const char *body, size_t len) {
  char head[256];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status,
                   type, len);
  cs_metrics_send_all(fd, head, (size_t)n);
  cs_metrics_send_all(fd, body, len);
}

/* One request: the head read within 2 s, answered, the connection closed. */
static void cs_metrics_serve(int fd) {
  char req[4096];
  size_t len = 0;
  while (len < sizeof req - 1 && !memmem(req, len, "\r\n\r\n", 4) && !memmem(req, len, "\n\n", 2)) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 2000) <= 0) return;
    ssize_t n = recv(fd, req + len, sizeof req - 1 - len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  req[len] = '\0';
  char method[8], path[256];
  if (sscanf(req, "%7s %255s", method, path) != 2) {
    static const char bad[] = "bad request\n";
    cs_metrics_reply(fd, "400 Bad Request", "text/plain; charset=utf-8", bad, sizeof bad - 1);
    return;
  }
  char *query = strchr(path, '?');
  if (query) *query = '\0';
  if (strcmp(method, "GET") != 0) {
    static const char no[] = "only GET\n";
    cs_metrics_reply(fd, "405 Method Not Allowed", "text/plain; charset=utf-8", no, sizeof no - 1);
  } else if (strcmp(path, "/metrics") == 0) {
    size_t blen = 0;
    char *body = cs_metrics_body(&blen);
    if (body) cs_metrics_reply(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, blen);
    else cs_metrics_reply(fd, "500 Internal Server Error", "text/plain; charset=utf-8", "out of memory\n", 14);
    free(body);
  } else if (strcmp(path, "/") == 0) {
    static const char page[] = "<html><body><a href=\"/metrics\">cudasnap metrics</a></body></html>\n";
    cs_metrics_reply(fd, "200 OK", "text/html; charset=utf-8", page, sizeof page - 1);
  } else {
    static const char none[] = "not found: the metrics are at /metrics\n";
    cs_metrics_reply(fd, "404 Not Found", "text/plain; charset=utf-8", none, sizeof none - 1);
  }
}

/* "ADDR:PORT", "[V6]:PORT" or ":PORT" (every interface). Returns a listening socket or -1. */
static int cs_metrics_listen(const char *spec) {
  char host[256];
  const char *colon = strrchr(spec, ':');
  if (!colon || !colon[1]) {
    cs_cli_error(cs_metrics_name, "--listen takes ADDR:PORT, such as 127.0.0.1:9840, not '%s'", spec);
    return -2;
  }
  size_t hlen = (size_t)(colon - spec);
  if (hlen >= sizeof host) hlen = sizeof host - 1;
  memcpy(host, spec, hlen);
  host[hlen] = '\0';
  if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
    memmove(host, host + 1, hlen - 2);
    host[hlen - 2] = '\0';
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
  struct addrinfo *res = NULL;
  int gai = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
  if (gai != 0) {
    cs_cli_error(cs_metrics_name, "cannot listen on %s: %s", spec, gai_strerror(gai));
    return -1;
  }
  int fd = -1, err = 0;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    cs_cli_error(cs_metrics_name, "cannot listen on %s: %s", spec, strerror(err));
    return -1;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char ah[NI_MAXHOST], ap[NI_MAXSERV];
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
      getnameinfo((struct sockaddr *)&ss, sl, ah, sizeof ah, ap, sizeof ap, NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    printf(strchr(ah, ':') ? "listening on [%s]:%s\n" : "listening on %s:%s\n", ah, ap);
    fflush(stdout);
  }
  return fd;
}

int cs_cli_metrics(int argc, char **argv) {
  static const struct option options[] = {{"listen", required_argument, NULL, 'l'},
                                          {"once", no_argument, NULL, 'o'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char *listen_on = "127.0.0.1:9840";
  bool once = false;
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_metrics_help, stdout); return CS_CLI_OK;
    case 'l': listen_on = optarg; break;
    case 'o': once = true; break;
    default: return cs_cli_bad_option(cs_metrics_name, c, argv);
    }
  }
  if (!cs_cli_operands(cs_metrics_name, argc, argv, 0, "")) return CS_CLI_USAGE;
  if (once) {
    size_t len = 0;
    char *body = cs_metrics_body(&len);
    if (!body) return CS_CLI_FAIL;
    fwrite(body, 1, len, stdout);
    free(body);
    return CS_CLI_OK;
  }
  int fd = cs_metrics_listen(listen_on);
  if (fd < 0) return fd == -2 ? CS_CLI_USAGE : CS_CLI_FAIL;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = cs_metrics_on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  while (!cs_metrics_stop) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, -1) <= 0) continue;
    int client = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
    if (client < 0) continue;
    cs_metrics_serve(client);
    close(client);
  }
  close(fd);
  return CS_CLI_OK;
}

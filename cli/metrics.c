/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap metrics`: a Prometheus exporter for this machine, like node_exporter: the live
 * records of the profiled processes (live/live_format.h), read at each scrape of /metrics and
 * written in the text exposition format (cli/metrics_text.h), served by cli/metrics_server.h (one
 * thread, every client at once, each bounded in time). */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/live_dir.h"
#include "cli/live_rows.h"
#include "cli/metrics_server.h"
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
    "GET and HEAD /metrics, gzip'ed when the client asks (Accept-Encoding: gzip); 404 elsewhere.\n"
    "Every client is served at once, none waits for another: each connection gets one request,\n"
    "whose head must arrive within 5 s, and one reply, which must be taken within 10 s, then is\n"
    "closed; at most 64 connections are open (a new one closes the oldest). Runs until SIGINT or\n"
    "SIGTERM, which end it at once. docs/live.md has a Prometheus scrape configuration for a\n"
    "cluster (one exporter per node) and a Grafana dashboard.\n"
    "\n"
    "exit status: 0 when interrupted (SIGINT, SIGTERM); 1 when it cannot listen; 2 for a bad option.\n"
    "\n"
    "options:\n"
    "  --listen ADDR:PORT  where to listen (default 127.0.0.1:9840)\n"
    "  --once              print the exposition once on stdout and exit\n"
    "  -h, --help          this text\n";

static const char cs_metrics_name[] = "metrics";

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
  int err = cs_metrics_serve(fd, cs_metrics_body);
  if (err) {
    cs_cli_error(cs_metrics_name, "cannot serve: %s", strerror(err));
    return CS_CLI_FAIL;
  }
  return CS_CLI_OK;
}

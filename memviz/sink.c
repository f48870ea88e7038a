/* SPDX-License-Identifier: Apache-2.0 */
/* The two sinks: a buffered file descriptor (production) and a growing memory buffer (tests, the
 * reader). */
#include "memviz/sink.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* bytes of cs_fd_sink_t.buf in use. Tiny in debug builds so every test runs the flush and
 * direct-write paths (style.md section 10, after jemalloc's PROF_DUMP_BUFSIZE). */
#if CS_DEBUG >= 1
#define CS_SINK_BUFSIZE ((size_t)16)
#else
#define CS_SINK_BUFSIZE sizeof(((cs_fd_sink_t *)0)->buf)
#endif
_Static_assert(CS_SINK_BUFSIZE <= sizeof(((cs_fd_sink_t *)0)->buf), "the sink buffer is too small");

/* test seam: replaced by tests/unit/test_emit.c to inject EINTR and short writes */
ssize_t (*cs_sink_write_impl)(int fd, const void *buf, size_t len) = write;

/* ------------------------------------------------------------------------------------------------
 * File descriptor
 * ---------------------------------------------------------------------------------------------- */

/* All of buf, or an errno value. */
static int cs_fd_write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = cs_sink_write_impl(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO; /* no progress and no reason: retrying could spin forever */
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

void cs_fd_sink_init(cs_fd_sink_t *s, int fd) {
  s->fd = fd;
  s->error = 0;
  s->used = 0;
  s->total = 0;
}

int cs_fd_sink_flush(cs_fd_sink_t *s) {
  if (s->error == 0 && s->used > 0) s->error = cs_fd_write_all(s->fd, s->buf, s->used);
  s->used = 0;
  return s->error;
}

/* Small writes are gathered; a write at least as large as the buffer goes straight to the file
 * after what is buffered, saving a copy. */
static int cs_fd_sink_write(void *ctx, const void *buf, size_t len) {
  cs_fd_sink_t *s = ctx;
  if (s->error != 0) return s->error;
  if (len > CS_SINK_BUFSIZE - s->used) {
    if (cs_fd_sink_flush(s) != 0) return s->error;
    if (len >= CS_SINK_BUFSIZE) {
      s->error = cs_fd_write_all(s->fd, buf, len);
      if (s->error != 0) return s->error;
      s->total += len;
      return 0;
    }
  }
  memcpy(s->buf + s->used, buf, len);
  s->used += len;
  s->total += len;
  return 0;
}

cs_sink_t cs_fd_sink(cs_fd_sink_t *s) { return (cs_sink_t){.write = cs_fd_sink_write, .ctx = s}; }

/* ------------------------------------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------------------------------- */

void cs_mem_sink_init(cs_mem_sink_t *s) { *s = (cs_mem_sink_t){0}; }

static int cs_mem_sink_write(void *ctx, const void *buf, size_t len) {
  cs_mem_sink_t *s = ctx;
  if (s->error != 0) return s->error;
  if (len > s->cap - s->len) {
    size_t cap = s->cap > 0 ? s->cap : 4096;
    while (cap - s->len < len) {
      if (cap > SIZE_MAX / 2) return s->error = ENOMEM;
      cap *= 2;
    }
    char *data = realloc(s->data, cap);
    if (data == NULL) return s->error = ENOMEM;
    s->data = data;
    s->cap = cap;
  }
  memcpy(s->data + s->len, buf, len);
  s->len += len;
  return 0;
}

cs_sink_t cs_mem_sink(cs_mem_sink_t *s) { return (cs_sink_t){.write = cs_mem_sink_write, .ctx = s}; }

void cs_mem_sink_free(cs_mem_sink_t *s) {
  free(s->data);
  cs_mem_sink_init(s);
}

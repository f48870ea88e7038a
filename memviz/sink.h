/* SPDX-License-Identifier: Apache-2.0 */
/* cs_sink_t: where serialized bytes go. The output format (emit.h) is separate from the target.
 *
 * A sink is a write callback and its context. Writers call it with buffered chunks; a non-zero
 * return is an errno-style failure that the emitter keeps (sticky) and reports at the end. Two
 * implementations: a buffered file-descriptor sink (EINTR and partial writes handled) and a growing
 * memory sink for tests and the reader. */
#ifndef CS_SINK_H
#define CS_SINK_H

#include <stddef.h>

typedef struct cs_sink_s {
  int (*write)(void *ctx, const void *buf, size_t len); /* 0, or an errno value */
  void *ctx;
} cs_sink_t;

/* A buffered writer over a file descriptor. Debug builds (CS_DEBUG >= 1) use only 16 bytes of buf,
 * so every test runs the flush path. The emitter does not flush it: call cs_fd_sink_flush after
 * cs_emit_finish. */
typedef struct cs_fd_sink_s {
  int fd;
  int error;          /* first errno seen, sticky */
  size_t used;
  size_t total;       /* bytes accepted so far */
  char buf[1 << 16];
} cs_fd_sink_t;

void cs_fd_sink_init(cs_fd_sink_t *s, int fd);
cs_sink_t cs_fd_sink(cs_fd_sink_t *s);
/* Write out what is buffered; returns 0 or the sticky errno. */
int cs_fd_sink_flush(cs_fd_sink_t *s);

/* A growing in-memory buffer (malloc). */
typedef struct cs_mem_sink_s {
  char *data;
  size_t len;
  size_t cap;
  int error;          /* ENOMEM once growth failed */
} cs_mem_sink_t;

void cs_mem_sink_init(cs_mem_sink_t *s);
cs_sink_t cs_mem_sink(cs_mem_sink_t *s);
void cs_mem_sink_free(cs_mem_sink_t *s);

#ifdef CS_TESTING
#include <sys/types.h>
/* test seam: the write(2) the fd sink calls (tests inject EINTR, short writes and failures) */
typedef ssize_t (*cs_sink_write_fn)(int fd, const void *buf, size_t len);
extern cs_sink_write_fn cs_sink_write_impl;
#endif

#endif

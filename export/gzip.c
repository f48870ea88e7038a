/* SPDX-License-Identifier: Apache-2.0 */
/* gzip through zlib (contract in export/gzip.h). */
#include "export/gzip.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

struct cs_gzip_sink_s {
  z_stream z;
  cs_sink_t next;
  int error; /* sticky */
  unsigned char out[1 << 16];
};

cs_gzip_sink_t *cs_gzip_sink_create(cs_sink_t next) {
  cs_gzip_sink_t *g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->next = next;
  /* windowBits 15 + 16: a gzip header and trailer instead of zlib's */
  if (deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    free(g);
    return NULL;
  }
  return g;
}

/* Run deflate over what avail_in holds, handing every full output buffer on. */
static void cs_gzip_run(cs_gzip_sink_t *g, int flush) {
  int zrc;
  do {
    g->z.next_out = g->out;
    g->z.avail_out = sizeof g->out;
    zrc = deflate(&g->z, flush);
    if (zrc == Z_STREAM_ERROR) {
      g->error = EIO;
      return;
    }
    size_t have = sizeof g->out - g->z.avail_out;
    if (have > 0 && g->error == 0) g->error = g->next.write(g->next.ctx, g->out, have);
  } while (g->error == 0 && (g->z.avail_out == 0 || (flush == Z_FINISH && zrc != Z_STREAM_END)));
}

static int cs_gzip_write(void *ctx, const void *buf, size_t len) {
  cs_gzip_sink_t *g = ctx;
  const unsigned char *p = buf;
  while (g->error == 0 && len > 0) {
    uInt chunk = len > UINT_MAX ? UINT_MAX : (uInt)len;
    g->z.next_in = (unsigned char *)(uintptr_t)p; /* zlib's API is not const */
    g->z.avail_in = chunk;
    cs_gzip_run(g, Z_NO_FLUSH);
    p += chunk;
    len -= chunk;
  }
  return g->error;
}

cs_sink_t cs_gzip_sink(cs_gzip_sink_t *g) { return (cs_sink_t){.write = cs_gzip_write, .ctx = g}; }

int cs_gzip_sink_finish(cs_gzip_sink_t *g) {
  g->z.next_in = NULL;
  g->z.avail_in = 0;
  if (g->error == 0) cs_gzip_run(g, Z_FINISH);
  int err = g->error;
  deflateEnd(&g->z);
  free(g);
  return err;
}

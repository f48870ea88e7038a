/* SPDX-License-Identifier: Apache-2.0 */
/* A gzip-compressing byte sink (memviz/sink.h) over another sink, through zlib: pprof reads
 * profile.proto gzip-compressed, as every profiler writes it. */
#ifndef CS_EXPORT_GZIP_H
#define CS_EXPORT_GZIP_H

#include <stddef.h>

#include "memviz/sink.h"

typedef struct cs_gzip_sink_s cs_gzip_sink_t;

/* A new compressor writing its gzip member to next. NULL without host memory. */
cs_gzip_sink_t *cs_gzip_sink_create(cs_sink_t next);
cs_sink_t cs_gzip_sink(cs_gzip_sink_t *g);
/* Write the end of the stream (the trailer with its CRC) and free g. Returns 0 or the first error
 * seen (an errno value: next's, or ENOMEM/EIO for zlib's own failures). */
int cs_gzip_sink_finish(cs_gzip_sink_t *g);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* What went wrong in reading a file, for a one-line message: "<file>: <where>: <problem>". Its own
 * file so that every reader (reader.c and the parsers under it, json_stream.c) fills one without
 * calling back up into reader.c. */
#ifndef CS_READ_ERROR_H
#define CS_READ_ERROR_H

#include <stddef.h>

#include "common/cs_compiler.h"

typedef struct cs_read_error_s {
  size_t offset;       /* byte offset of the problem */
  int io_errno;        /* not 0: the file could not be opened or read (message: strerror) */
  char message[256];   /* e.g. "unknown pickle opcode 0x63" */
} cs_read_error_t;

/* Fill *err (for the readers: "offset" and a printf-style message). */
CS_PRINTF(3, 4) void cs_read_error_set(cs_read_error_t *err, size_t offset, const char *fmt, ...);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* A named stack frame as snapshots show it: the symbolizer makes them from program counters when
 * a snapshot is written, the reader finds them in a file's `frames` lists. */
#ifndef CS_FRAME_H
#define CS_FRAME_H

typedef struct cs_frame_s {
  const char *name;     /* function, demangled; "??" when unknown */
  const char *filename; /* source file, else the module's path, else "??" */
  int line;             /* 0 when unknown */
} cs_frame_t;

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* A progress line for long operations: on stderr, rewritten in place, and only when stderr is a
 * terminal and the work is big (a pipe or a log file never gets it, so scripts see exactly the
 * lines the tool documents). The line is erased when the work ends. */
#ifndef CS_CLI_PROGRESS_H
#define CS_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* Work smaller than this finishes quickly enough to need no progress line. */
#define CS_PROGRESS_MIN_BYTES ((uint64_t)50 << 20)

typedef struct cs_progress_s {
  bool on;
  char what[81];     /* "reading x.json", shown before the percentage: made safe for the terminal
                        (common/cs_text.h) and cut to 80 bytes */
  uint64_t total;    /* units of work; 0 = unknown */
  int shown_percent; /* last percentage written, -1 = none yet */
} cs_progress_t;

/* Turn the line on when `bytes` (the size of what is read or written) is big and stderr is a
 * terminal. `total` counts the units later passed to cs_progress_update. */
void cs_progress_start(cs_progress_t *p, const char *what, uint64_t bytes, uint64_t total);

/* `done` units of `total` are done; writes only when the percentage changes. */
void cs_progress_update(cs_progress_t *p, uint64_t done);

/* Say that an untimed step has begun ("parsing"): shown without a percentage. */
void cs_progress_step(cs_progress_t *p, const char *step);

/* Erase the line. Call before printing anything else to stderr. */
void cs_progress_end(cs_progress_t *p);

#endif

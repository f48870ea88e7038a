/* SPDX-License-Identifier: Apache-2.0 */
/* Logging: every message is one line on stderr, "cudasnap: <level>: ...", formatted into a stack
 * buffer and written with write(2). No malloc, no stdio, no CUDA, so it is safe from any hook.
 *
 * The level is process-wide (CUDASNAP_LOG); it is the only mutable state in common/. */
#ifndef CS_LOG_H
#define CS_LOG_H

#include "common/cs_compiler.h"

typedef enum cs_log_level_e {
  CS_LOG_QUIET = 0, /* errors only */
  CS_LOG_INFO = 1,  /* one line per snapshot, and warnings (default) */
  CS_LOG_DEBUG = 2, /* also every redirected lookup */
} cs_log_level_t;

void cs_log_set_level(cs_log_level_t level);
cs_log_level_t cs_log_get_level(void);

/* Test seam: redirect output to another descriptor (tests capture it through a pipe). */
void cs_log_set_fd(int fd);

CS_PRINTF(1, 2) void cs_log_error(const char *fmt, ...);
CS_PRINTF(1, 2) void cs_log_warn(const char *fmt, ...);
CS_PRINTF(1, 2) void cs_log_info(const char *fmt, ...);
CS_PRINTF(1, 2) void cs_log_debug(const char *fmt, ...);

#endif

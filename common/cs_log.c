/* SPDX-License-Identifier: Apache-2.0 */
#include "common/cs_log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_assert.h"
#include "common/cs_text.h"

enum { CS_LOG_LINE_MAX = 1024 };

static _Atomic int cs_log_level = CS_LOG_INFO;
static _Atomic int cs_log_fd = STDERR_FILENO;

void cs_log_set_level(cs_log_level_t level) { atomic_store_explicit(&cs_log_level, (int)level, memory_order_relaxed); }

cs_log_level_t cs_log_get_level(void) {
  return (cs_log_level_t)atomic_load_explicit(&cs_log_level, memory_order_relaxed);
}

void cs_log_set_fd(int fd) { atomic_store_explicit(&cs_log_fd, fd, memory_order_relaxed); }

/* One write(2) per line, so lines of concurrent threads (and processes sharing stderr) do not
 * interleave. Partial writes and EINTR are retried; any other failure drops the line. */
static void cs_log_write_all(const char *buf, size_t len) {
  int fd = atomic_load_explicit(&cs_log_fd, memory_order_relaxed);
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    buf += n;
    len -= (size_t)n;
  }
}

static void cs_log_vemit(const char *prefix, const char *fmt, va_list ap) {
  char line[CS_LOG_LINE_MAX];
  int saved_errno = errno; /* logging must not change what the program sees */
  int used = snprintf(line, sizeof line, "cudasnap: %s", prefix);
  if (used < 0) used = 0;
  int body = vsnprintf(line + used, sizeof line - (size_t)used, fmt, ap);
  size_t len = (size_t)used + (body < 0 ? 0u : (size_t)body);
  if (len > sizeof line - 2) len = sizeof line - 2; /* truncated: keep the newline */
  /* One message, one line, nothing a terminal acts on: a value quoted from the environment or a
   * name from the program (its executable, in a file name) may hold control characters. */
  len = cs_text_safe_in_place(line, len);
  line[len++] = '\n';
  cs_log_write_all(line, len);
  errno = saved_errno;
}

#define CS_LOG_DEFINE(fn, min_level, prefix)                                                      \
  void fn(const char *fmt, ...) {                                                                 \
    if (cs_log_get_level() < (min_level)) return;                                                 \
    va_list ap;                                                                                   \
    va_start(ap, fmt);                                                                            \
    cs_log_vemit(prefix, fmt, ap);                                                                \
    va_end(ap);                                                                                   \
  }

CS_LOG_DEFINE(cs_log_error, CS_LOG_QUIET, "error: ")
CS_LOG_DEFINE(cs_log_warn, CS_LOG_INFO, "warning: ")
CS_LOG_DEFINE(cs_log_info, CS_LOG_INFO, "")
CS_LOG_DEFINE(cs_log_debug, CS_LOG_DEBUG, "debug: ")

void cs_assert_fail(const char *expr, const char *file, int line) {
  char buf[CS_LOG_LINE_MAX];
  int n = snprintf(buf, sizeof buf, "cudasnap: assertion failed: %s:%d: %s\n", file, line, expr);
  if (n > 0) cs_log_write_all(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
  __builtin_trap();
}

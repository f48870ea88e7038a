/* SPDX-License-Identifier: Apache-2.0 */
/* Test helpers: capture what cs_log writes through a pipe, and look at it. */
#ifndef CS_TEST_LOG_CAPTURE_H
#define CS_TEST_LOG_CAPTURE_H

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_log.h"

static int log_pipe[2];

/* cmocka group or test setup: log lines go to the pipe, at the default level. */
static inline int log_capture_setup(void **state) {
  (void)state;
  if (pipe(log_pipe) != 0) return -1;
  if (fcntl(log_pipe[0], F_SETFL, O_NONBLOCK) != 0) return -1; /* nothing logged: read returns */
  cs_log_set_fd(log_pipe[1]);
  cs_log_set_level(CS_LOG_INFO);
  return 0;
}

static inline int log_capture_teardown(void **state) {
  (void)state;
  cs_log_set_fd(STDERR_FILENO);
  cs_log_set_level(CS_LOG_INFO);
  close(log_pipe[0]);
  close(log_pipe[1]);
  return 0;
}

/* Everything logged since the previous call. */
static inline const char *captured(void) {
  static char text[1 << 16];
  ssize_t n = read(log_pipe[0], text, sizeof text - 1);
  text[n > 0 ? (size_t)n : 0] = '\0';
  return text;
}

static inline size_t count_lines(const char *text) {
  size_t lines = 0;
  for (; *text != '\0'; text++) lines += *text == '\n';
  return lines;
}

static inline void assert_contains(const char *text, const char *part) {
  if (strstr(text, part) == NULL) fail_msg("\"%s\" not found in \"%s\"", part, text);
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* CUDASNAP_OUTPUT -> glob pattern (contract in cli/dump_pattern.h). */
#include "cli/dump_pattern.h"

#include <stdio.h>
#include <string.h>

typedef struct cs_pattern_out_s {
  char *buf;
  size_t len, used;
  int error;
} cs_pattern_out_t;

static void cs_pattern_put(cs_pattern_out_t *o, const char *text, size_t n) {
  if (o->used + n >= o->len) {
    o->error = -1;
    return;
  }
  memcpy(o->buf + o->used, text, n);
  o->used += n;
  o->buf[o->used] = '\0';
}

/* A character of a name, escaped where glob would read it as a pattern. */
static void cs_pattern_literal(cs_pattern_out_t *o, char c) {
  if (strchr("*?[]\\", c) != NULL) cs_pattern_put(o, "\\", 1);
  cs_pattern_put(o, &c, 1);
}

static void cs_pattern_literals(cs_pattern_out_t *o, const char *text) {
  for (; *text != '\0'; text++) cs_pattern_literal(o, *text);
}

int cs_dump_glob_pattern(const char *output, long pid, const char *cwd, char *buf, size_t len) {
  cs_pattern_out_t o = {.buf = buf, .len = len, .used = 0, .error = 0};
  if (len == 0) return -1;
  buf[0] = '\0';
  if (output[0] != '/') {
    cs_pattern_literals(&o, cwd);
    cs_pattern_put(&o, "/", 1);
  }
  /* The library numbers a taken name before the last '.' of its last path component. */
  const char *slash = strrchr(output, '/');
  const char *dot = strrchr(slash != NULL ? slash : output, '.');
  const char *numbered_at = dot != NULL && dot != output && dot[-1] != '/' ? dot : output + strlen(output);
  char number[32];
  snprintf(number, sizeof number, "%ld", pid);
  for (const char *p = output;; p++) {
    if (p == numbered_at) cs_pattern_put(&o, "*", 1);
    if (*p == '\0') break;
    if (*p != '%' || p[1] == '\0') {
      cs_pattern_literal(&o, *p);
      continue;
    }
    switch (*++p) {
    case 'p': cs_pattern_put(&o, number, strlen(number)); break;
    case 't': cs_pattern_put(&o, "signal", 6); break;
    case '%': cs_pattern_put(&o, "%", 1); break;
    default: cs_pattern_put(&o, "*", 1); break;
    }
  }
  return o.error;
}

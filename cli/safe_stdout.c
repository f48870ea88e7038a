/* SPDX-License-Identifier: Apache-2.0 */
/* The filtered stdout (contract in cli/safe_stdout.h): a glibc cookie stream over descriptor 1. */
#include "cli/safe_stdout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/cs_text.h"

/* Input taken per step: its safe form (at most 3 bytes per input byte) fits the output buffer. */
enum { CS_SAFE_STEP = 4096 };

typedef struct cs_safe_out_s {
  unsigned char held[4]; /* an incomplete character at the end of the last write */
  size_t nheld;
} cs_safe_out_t;

static FILE *cs_safe_original;
static cs_safe_out_t cs_safe_state;

static int cs_safe_write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDOUT_FILENO, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* held + buf[0..size) made safe and written; an incomplete character at the end is held unless
 * this is the last write (more false). */
static int cs_safe_put(cs_safe_out_t *s, const char *buf, size_t size, bool more) {
  char in[CS_SAFE_STEP + sizeof s->held], out[3 * sizeof in];
  size_t done = 0;
  do {
    size_t take = size - done < CS_SAFE_STEP ? size - done : CS_SAFE_STEP;
    memcpy(in, s->held, s->nheld);
    memcpy(in + s->nheld, buf + done, take);
    size_t n = s->nheld + take, used;
    done += take;
    size_t w = cs_text_safe_lines(out, in, n, more || done < size, &used);
    s->nheld = n - used;
    memcpy(s->held, in + used, s->nheld);
    if (cs_safe_write_all(out, w) != 0) return -1;
  } while (done < size);
  return 0;
}

static ssize_t cs_safe_cookie_write(void *cookie, const char *buf, size_t size) {
  return cs_safe_put(cookie, buf, size, true) == 0 ? (ssize_t)size : -1;
}

static int cs_safe_cookie_close(void *cookie) {
  return cs_safe_put(cookie, "", 0, false); /* what was held is a character cut short: U+FFFD */
}

static void cs_safe_at_exit(void) {
  FILE *filtered = stdout;
  stdout = cs_safe_original;
  fclose(filtered);
}

bool cs_safe_stdout_install(void) {
  cookie_io_functions_t io = {.read = NULL, .write = cs_safe_cookie_write, .seek = NULL,
                              .close = cs_safe_cookie_close};
  FILE *filtered = fopencookie(&cs_safe_state, "w", io);
  if (filtered == NULL) return false;
  if (setvbuf(filtered, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ) != 0 || atexit(cs_safe_at_exit) != 0) {
    fclose(filtered);
    return false;
  }
  fflush(stdout);
  cs_safe_original = stdout;
  stdout = filtered;
  return true;
}

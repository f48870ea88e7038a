/* SPDX-License-Identifier: Apache-2.0 */
/* The terminal for `cudasnap top` (contract in cli/term.h). */
#include "cli/term.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios cs_term_saved;
static bool cs_term_is_raw;

bool cs_term_raw(void) {
  if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &cs_term_saved) != 0) return false;
  struct termios raw = cs_term_saved;
  raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
  raw.c_iflag &= ~(tcflag_t)(ICRNL | IXON);
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) != 0) return false;
  cs_term_is_raw = true;
  atexit(cs_term_restore);
  return true;
}

void cs_term_restore(void) {
  if (!cs_term_is_raw) return;
  cs_term_is_raw = false;
  (void)tcsetattr(STDIN_FILENO, TCSANOW, &cs_term_saved);
}

void cs_term_size(int *cols, int *rows) {
  struct winsize ws;
  *cols = 80;
  *rows = 24;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    *cols = ws.ws_col;
    *rows = ws.ws_row;
  }
}

bool cs_term_colours(void) {
  const char *no_color = getenv("NO_COLOR");
  const char *term = getenv("TERM");
  if (no_color && *no_color) return false;
  if (!term || !*term || strcmp(term, "dumb") == 0) return false;
  return isatty(STDOUT_FILENO);
}

static int cs_term_byte(int timeout_ms) {
  struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
  int ready = poll(&p, 1, timeout_ms);
  if (ready <= 0) return -1;
  unsigned char c;
  ssize_t n = read(STDIN_FILENO, &c, 1);
  return n == 1 ? c : -1;
}

int cs_term_key(int timeout_ms) {
  int c = cs_term_byte(timeout_ms);
  if (c < 0) return CS_KEY_NONE;
  if (c == '\r' || c == '\n') return CS_KEY_ENTER;
  if (c != 0x1b) return c;
  /* ESC [ A / ESC [ B (or ESC O A in application mode); a lone ESC is the escape key */
  int c1 = cs_term_byte(50);
  if (c1 != '[' && c1 != 'O') return CS_KEY_ESCAPE;
  int c2 = cs_term_byte(50);
  if (c2 == 'A') return CS_KEY_UP;
  if (c2 == 'B') return CS_KEY_DOWN;
  return CS_KEY_NONE;
}

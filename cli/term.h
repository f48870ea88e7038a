/* SPDX-License-Identifier: Apache-2.0 */
/* The terminal for `cudasnap top`: raw keys, its size, whether to colour. Plain termios and ANSI
 * sequences (cursor home, clear, reverse video), which every terminal emulator and tmux know: no
 * curses library is needed for one table that is redrawn whole. */
#ifndef CS_CLI_TERM_H
#define CS_CLI_TERM_H

#include <stdbool.h>

typedef enum cs_key_e {
  CS_KEY_NONE = 0,
  CS_KEY_UP = 0x100,
  CS_KEY_DOWN,
  CS_KEY_ENTER,
  CS_KEY_ESCAPE,
  /* any other key: its byte */
} cs_key_t;

/* Keys without echo or line editing, until cs_term_restore (also at exit). false: not a terminal. */
bool cs_term_raw(void);
void cs_term_restore(void);

/* The terminal's columns and rows (80 x 24 when it does not say). */
void cs_term_size(int *cols, int *rows);

/* Colours (reverse video for the selected row): not with NO_COLOR set, TERM=dumb or unset, or
 * when stdout is not a terminal. */
bool cs_term_colours(void);

/* The next key within timeout_ms (CS_KEY_NONE when none came, or a signal interrupted the wait). */
int cs_term_key(int timeout_ms);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The progress line (contract in cli/progress.h). */
#include "cli/progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_text.h"

/* Wide enough to erase any line written below. */
enum { CS_PROGRESS_WIDTH = 100 };

void cs_progress_start(cs_progress_t *p, const char *what, uint64_t bytes, uint64_t total) {
  *p = (cs_progress_t){.on = bytes >= CS_PROGRESS_MIN_BYTES && isatty(STDERR_FILENO), .total = total,
                       .shown_percent = -1};
  cs_text_safe(p->what, sizeof p->what, what, strlen(what));
}

void cs_progress_update(cs_progress_t *p, uint64_t done) {
  if (!p->on || p->total == 0) return;
  int percent = (int)(done >= p->total ? 100 : done * 100 / p->total);
  if (percent == p->shown_percent) return;
  p->shown_percent = percent;
  fprintf(stderr, "\rcudasnap: %s: %3d%%", p->what, percent);
  fflush(stderr);
}

void cs_progress_step(cs_progress_t *p, const char *step) {
  if (!p->on) return;
  fprintf(stderr, "\r%*s\rcudasnap: %s: %s", CS_PROGRESS_WIDTH, "", p->what, step);
  fflush(stderr);
}

void cs_progress_end(cs_progress_t *p) {
  if (!p->on) return;
  fprintf(stderr, "\r%*s\r", CS_PROGRESS_WIDTH, "");
  fflush(stderr);
  p->on = false;
}

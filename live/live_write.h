/* SPDX-License-Identifier: Apache-2.0 */
/* The publisher's side of the live record (live/live_format.h): made once, rewritten in place
 * under the sequence lock, removed at the end. Used by publish/live_publish.c on the control thread; no
 * function here is on the allocation path. */
#ifndef CS_LIVE_WRITE_H
#define CS_LIVE_WRITE_H

#include <stdbool.h>

#include "live/live_format.h"

typedef struct cs_live_writer_s {
  cs_live_record_t *record; /* the file's mapping; NULL: no record */
  char path[512];           /* the record */
  char dir[448];            /* its directory */
  bool own_dir;             /* dir is this process's own (DIR/cudasnap-live-UID-XXXXXX): removed with the record */
  long pid;                 /* the process that made it (a fork child must not remove it) */
} cs_live_writer_t;

/* Make the record under dir (CUDASNAP_LIVE_DIR) from `identity` (magic, sizes and seq are filled
 * in here; identity->uid must be this process's effective uid, the owner of what it makes): in
 * the user's directory dir/cudasnap-live-UID, made mode 0700 when missing, or when another user
 * holds that name, in a directory of this process's own (live/live_format.h). Returns 0, or an
 * errno value (then w->record is NULL). */
int cs_live_writer_open(cs_live_writer_t *w, const char *dir, const cs_live_header_t *identity);

/* Around every change of the figures: seq odd, then even again. */
void cs_live_writer_begin(cs_live_writer_t *w);
void cs_live_writer_end(cs_live_writer_t *w);

/* Unmap, and remove the file (and a directory of this process's own) when `remove` and this
 * process made it. */
void cs_live_writer_close(cs_live_writer_t *w, bool remove);

/* Remove what close(w, true) would, without unmapping (the end, when the lock was not had). */
void cs_live_writer_remove(const cs_live_writer_t *w);

#endif

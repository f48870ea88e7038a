/* The readers' side of the live record (live/live_format.h), for the tool: every live record of
 * this user (or of every user) on this machine, each a whole copy, the records of processes that
 * are gone skipped and removed. */
#ifndef CS_LIVE_READ_H
#define CS_LIVE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "live/live_format.h"

typedef struct cs_live_entry_s {
  cs_live_header_t header;
  cs_live_device_t *devices; /* header.device_count of them */
} cs_live_entry_t;

typedef struct cs_live_list_s {
  cs_live_entry_t *items; /* in pid order */
  size_t count;
} cs_live_list_t;

typedef struct cs_live_filter_s {
  bool all_users;     /* else only uid's records */
  uid_t uid;
  long pid;           /* 0: any */
  const char *job_id; /* NULL: any */
} cs_live_filter_t;

/* The records under dir (CS_LIVE_DIR, or a test's folder) that pass the filter. A record is taken
 * only when its file belongs to the user its name and contents name, it is whole (the sequence
 * lock), and its process runs: same pid, same start time, same user. The record of a process that
 * is gone is removed (where the caller may). Returns 0, or an errno value when dir cannot be read
 * (ENOENT: an empty list). */
int cs_live_list(const char *dir, const cs_live_filter_t *filter, cs_live_list_t *out);
void cs_live_list_free(cs_live_list_t *list);

/* The user whose processes the tool means by default: the real uid, or under sudo (real uid 0
 * with SUDO_UID set) the user who ran sudo. */
uid_t cs_live_invoking_uid(void);

#endif

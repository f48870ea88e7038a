/* SPDX-License-Identifier: Apache-2.0 */
/* The readers' side of the live record (live/live_format.h), for the tool: every live record of
 * this user (or of every user) on this machine, each a whole copy, the records of processes that
 * are gone skipped and removed.
 *
 * Every record is hostile input: its user may write anything in it, make as many as it likes,
 * hold its sequence word odd forever. So a listing is bounded: it takes at most
 * CS_LIVE_MAX_PER_USER records of one user and looks at most at CS_LIVE_SCAN_PER_USER names of
 * one user, directories and records (so that one user's thousands of files cost the others
 * nothing), checks a record's
 * process before it waits for the record's sequence lock, waits CS_LIVE_RETRY_MS at most in all,
 * and stops after CS_LIVE_LIST_MS whatever is left; what it passed over is counted for the
 * caller to say. */
#ifndef CS_LIVE_READ_H
#define CS_LIVE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "live/live_format.h"

enum {
  CS_LIVE_MAX_PER_USER = 128,   /* records of one user taken by one listing */
  CS_LIVE_SCAN_PER_USER = 1024, /* names of one user looked at by one listing: its directories
                                   (cudasnap-live-UID*) and the names in them */
  CS_LIVE_LIST_MS = 500,        /* a listing's time, /proc included */
  CS_LIVE_RETRY_MS = 50,        /* a listing's time spent waiting for odd sequence words */
};

typedef struct cs_live_entry_s {
  cs_live_header_t header;   /* every string terminated; header.pid: the pid here (the reader's
                                PID namespace), whatever namespace the process is in */
  long ns_pid;               /* its pid inside its own PID namespace (header.pid when the same) */
  cs_live_device_t *devices; /* header.device_count of them, every string terminated */
} cs_live_entry_t;

typedef struct cs_live_list_s {
  cs_live_entry_t *items; /* in pid order */
  size_t count;
  /* passed over, for the caller to say */
  size_t users_capped;  /* users with more than CS_LIVE_MAX_PER_USER records or
                           CS_LIVE_SCAN_PER_USER names */
  size_t busy;          /* records whose sequence word stayed odd (being written, or forged) */
  size_t other_version; /* records of another cudasnap version (CS_LIVE_VERSION) */
  bool out_of_time;     /* stopped after CS_LIVE_LIST_MS */
} cs_live_list_t;

typedef struct cs_live_filter_s {
  bool all_users;     /* else only uid's records */
  uid_t uid;
  long pid;           /* 0: any; else the pid here */
  const char *job_id; /* NULL: any */
} cs_live_filter_t;

/* The records under dir (CUDASNAP_LIVE_DIR) that pass the filter. A record is taken only when
 * its directory and its file belong to the user they are named after and nobody else may write the
 * directory, it names the process it is named after, it is whole (the sequence lock), and its
 * process runs: same pid (mapped from its PID namespace to this one), same start time, same user.
 * The record of a process that is gone is removed (where the caller may), but not one of a PID
 * namespace the reader cannot see into. Returns 0, or an errno value when dir cannot be read
 * (ENOENT: an empty list). */
int cs_live_list(const char *dir, const cs_live_filter_t *filter, cs_live_list_t *out);
void cs_live_list_free(cs_live_list_t *list);

/* The user whose processes the tool means by default: the real uid, or under sudo (real uid 0
 * with SUDO_UID set) the user who ran sudo. */
uid_t cs_live_invoking_uid(void);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The signal `cudasnap dump` sends, sent to exactly the process it checked (docs/tool.md): the
 * process is fixed by a pidfd (pidfd_open), checked through it to be the one looked at before
 * (its start time and its user, so a pid that was taken by another process since fails), to
 * catch the signal (SigCgt: the signal cannot end it), and the signal goes through the pidfd
 * (pidfd_send_signal), with nothing in between that the process's owner controls. */
#ifndef CS_CLI_DUMP_SIGNAL_H
#define CS_CLI_DUMP_SIGNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct cs_dump_identity_s {
  pid_t pid;
  uint64_t start_ticks; /* /proc/PID/stat's start time when it was looked at */
  uint32_t uid;         /* its effective user then */
  int sig;              /* the signal checked */
} cs_dump_identity_t;

/* The process at pid now: its start time and user. Returns 0, or an errno value (ESRCH: none). */
int cs_dump_identity_read(pid_t pid, cs_dump_identity_t *id);

/* Send id->sig to the process id names, if it still is that process and catches the signal.
 * Returns 0 with *pidfd open (for cs_dump_alive; -1 where the kernel has no pidfd_open and the
 * caller is not root: then kill(2) was used, right after the checks), or -1 with *why saying why
 * nothing was sent. */
int cs_dump_signal(const cs_dump_identity_t *id, int *pidfd, char *why, size_t why_len);

/* Is the process signalled still running (pidfd, or pid when pidfd is -1)? */
bool cs_dump_alive(int pidfd, pid_t pid);

#endif

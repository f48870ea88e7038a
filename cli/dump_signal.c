/* SPDX-License-Identifier: Apache-2.0 */
/* Signal the process checked (contract in cli/dump_signal.h). */
#include "cli/dump_signal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "live/live_format.h"
#include "live/live_proc.h"

/* The same numbers on every architecture (the unified syscall table, Linux 5.1 and 5.3). */
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static int cs_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

static int cs_pidfd_send(int fd, int sig) { return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0); }

int cs_dump_identity_read(pid_t pid, cs_dump_identity_t *id) {
  id->pid = pid;
  cs_live_status_t st;
  int err = cs_live_status_read((long)pid, &st);
  if (err) return err == ENOENT ? ESRCH : err;
  id->uid = st.euid;
  id->start_ticks = cs_live_start_ticks((long)pid);
  return id->start_ticks ? 0 : ESRCH;
}

/* Is the process at pid the one id names, and does it catch the signal? Reads /proc only: what
 * the kernel says, no file of the process's owner. */
static bool cs_dump_still(const cs_dump_identity_t *id, char *why, size_t why_len) {
  cs_live_status_t st;
  if (cs_live_status_read((long)id->pid, &st) != 0) {
    snprintf(why, why_len, "process %ld ended before it was asked", (long)id->pid);
    return false;
  }
  if (cs_live_start_ticks((long)id->pid) != id->start_ticks || st.euid != id->uid) {
    snprintf(why, why_len,
             "process %ld is not the process checked any more (it ended and its pid was taken, or it changed its "
             "user): nothing sent",
             (long)id->pid);
    return false;
  }
  if (!st.has_sigcgt || id->sig < 1 || id->sig > 64 || !((st.sigcgt >> (id->sig - 1)) & 1u)) {
    snprintf(why, why_len, "process %ld does not catch signal %d any more (it would end it): nothing sent",
             (long)id->pid, id->sig);
    return false;
  }
  return true;
}

int cs_dump_signal(const cs_dump_identity_t *id, int *pidfd, char *why, size_t why_len) {
  *pidfd = -1;
  int fd = cs_pidfd_open(id->pid);
  if (fd < 0 && errno == ESRCH) {
    snprintf(why, why_len, "process %ld ended before it was asked", (long)id->pid);
    return -1;
  }
  if (fd < 0 && errno != ENOSYS) {
    snprintf(why, why_len, "cannot open process %ld (pidfd_open): %s", (long)id->pid, strerror(errno));
    return -1;
  }
  if (fd < 0 && geteuid() == 0) {
    /* root may signal anyone: a pid taken between the check and kill(2) could be anybody's */
    snprintf(why, why_len,
             "this kernel has no pidfd_open (Linux 5.3), without which root sends no signal: run it as the "
             "process's user");
    return -1;
  }
  /* the pidfd holds the process: what is read of pid while it still runs was read of it */
  if (!cs_dump_still(id, why, why_len)) {
    if (fd >= 0) close(fd);
    return -1;
  }
  int rc = fd >= 0 ? cs_pidfd_send(fd, id->sig) : kill(id->pid, id->sig);
  if (rc != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    if (err == ESRCH) snprintf(why, why_len, "process %ld ended before it was asked", (long)id->pid);
    else snprintf(why, why_len, "cannot signal process %ld: %s", (long)id->pid, strerror(err));
    return -1;
  }
  *pidfd = fd;
  return 0;
}

bool cs_dump_alive(int pidfd, pid_t pid) {
  int rc = pidfd >= 0 ? cs_pidfd_send(pidfd, 0) : kill(pid, 0);
  return rc == 0 || errno != ESRCH;
}

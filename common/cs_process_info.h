/* SPDX-License-Identifier: Apache-2.0 */
/* What snapshots and the recording file say about the process, and name their files after: its
 * arguments, executable name and host. Read from /proc and the kernel at the moment of asking (a
 * fork child or an exec'd program has its own); never on the allocation path. */
#ifndef CS_PROCESS_INFO_H
#define CS_PROCESS_INFO_H

typedef struct cs_process_info_s {
  char cmdline[4096];   /* /proc/self/cmdline: the library has no access to main's arguments */
  const char *argv[64]; /* into cmdline, NULL-terminated (63 at most) */
  char exe[256];        /* the executable's file name, or "unknown" */
  char host[256];       /* gethostname, or "unknown" */
} cs_process_info_t;

void cs_process_info_read(cs_process_info_t *p);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* What `cudasnap dump` learns about another process from /proc/PID. Each returns 0, or an errno
 * value (ENOENT: no such process; EACCES/EPERM: another user's process). */
#ifndef CS_CLI_PROC_H
#define CS_CLI_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Is a library whose file name starts with `prefix` ("libcudasnap") mapped into the process? */
int cs_proc_has_library(pid_t pid, const char *prefix, bool *mapped);

/* The environment the process started with (/proc/PID/environ): *entries gets `*count` pointers
 * to "NAME=value" strings, all inside one malloc'ed block; free(*entries) releases everything. */
int cs_proc_environ(pid_t pid, char ***entries, size_t *count);

/* Has the process installed a handler for signal sig (SigCgt in /proc/PID/status)? */
int cs_proc_catches(pid_t pid, int sig, bool *caught);

/* The process's current directory. */
int cs_proc_cwd(pid_t pid, char *buf, size_t len);

#endif

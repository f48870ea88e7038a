/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/PID readers (contract in cli/proc.h). */
#include "cli/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc files report a size of 0: read until the end. environ is bounded by the kernel's limit
 * on arguments plus environment; anything larger is not a /proc file we asked for. */
enum { CS_PROC_MAX = 64 << 20 };

/* The whole of /proc/PID/name, NUL-terminated (malloc'ed). Returns 0 or an errno. */
static int cs_proc_read(pid_t pid, const char *name, char **out, size_t *len_out) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  int err = buf == NULL ? ENOMEM : 0;
  while (err == 0) {
    if (len + 1 == cap) {
      char *bigger = cap < CS_PROC_MAX ? realloc(buf, cap * 2) : NULL;
      if (bigger == NULL) {
        err = ENOMEM;
        break;
      }
      buf = bigger;
      cap *= 2;
    }
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  if (err != 0) {
    free(buf);
    return err;
  }
  buf[len] = '\0';
  *out = buf;
  if (len_out != NULL) *len_out = len;
  return 0;
}

int cs_proc_has_library(pid_t pid, const char *prefix, bool *mapped) {
  char *maps;
  int err = cs_proc_read(pid, "maps", &maps, NULL);
  if (err != 0) return err;
  *mapped = false;
  /* Each line ends with the mapped file's path, if any: compare its last component. */
  char *next = NULL;
  for (char *line = strtok_r(maps, "\n", &next); line != NULL && !*mapped; line = strtok_r(NULL, "\n", &next)) {
    const char *path = strchr(line, '/');
    const char *base = path != NULL ? strrchr(path, '/') + 1 : NULL;
    *mapped = base != NULL && strncmp(base, prefix, strlen(prefix)) == 0;
  }
  free(maps);
  return 0;
}

int cs_proc_environ(pid_t pid, char ***entries, size_t *count) {
  char *text;
  size_t len;
  int err = cs_proc_read(pid, "environ", &text, &len);
  if (err != 0) return err;
  size_t n = 0;
  for (size_t i = 0; i < len; i += strlen(text + i) + 1) n++;
  /* The pointers first, the strings after them, in one block. */
  char **list = malloc(n * sizeof *list + len + 1);
  if (list == NULL) {
    free(text);
    return ENOMEM;
  }
  char *strings = (char *)(list + n);
  memcpy(strings, text, len + 1);
  free(text);
  n = 0;
  for (size_t i = 0; i < len; i += strlen(strings + i) + 1) list[n++] = strings + i;
  *entries = list;
  *count = n;
  return 0;
}

int cs_proc_catches(pid_t pid, int sig, bool *caught) {
  char *status;
  int err = cs_proc_read(pid, "status", &status, NULL);
  if (err != 0) return err;
  const char *line = strstr(status, "\nSigCgt:");
  uint64_t mask = 0;
  if (line == NULL || sscanf(line, "\nSigCgt: %" SCNx64, &mask) != 1) err = EINVAL;
  free(status);
  if (err != 0) return err;
  *caught = sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1u) != 0;
  return 0;
}

int cs_proc_cwd(pid_t pid, char *buf, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/cwd", (long)pid);
  ssize_t n = readlink(path, buf, len - 1);
  if (n < 0) return errno;
  if ((size_t)n == len - 1) return ENAMETOOLONG;
  buf[n] = '\0';
  return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* What both sides of the live record need: its names, and a process's start time. */
#include "live/live_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cs_live_user_dir_name(char *buf, size_t len, unsigned uid) {
  return snprintf(buf, len, "%s%u", CS_LIVE_PREFIX, uid);
}

int cs_live_record_name(char *buf, size_t len, uint64_t pid_ns, long pid) {
  return snprintf(buf, len, "%llu-%ld", (unsigned long long)pid_ns, pid);
}

uint64_t cs_live_pid_ns(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

uint64_t cs_live_start_ticks(long pid) {
  char path[64], text[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n;
  do n = read(fd, text, sizeof text - 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  /* the command name (field 2) is in parentheses and may hold anything: count from its last ')' */
  const char *p = strrchr(text, ')');
  if (!p) return 0;
  p++;
  for (int field = 3; field < 22 && p; field++) p = strchr(p + 1, ' ');
  if (!p) return 0;
  return strtoull(p + 1, NULL, 10);
}

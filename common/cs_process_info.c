/* SPDX-License-Identifier: Apache-2.0 */
#include "common/cs_process_info.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void cs_process_info_read(cs_process_info_t *p) {
  memset(p, 0, sizeof *p);
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, p->cmdline, sizeof p->cmdline - 1) : -1;
  if (fd >= 0) close(fd);
  size_t argc = 0;
  for (ssize_t i = 0; i < n && argc < 63; i += (ssize_t)strlen(p->cmdline + i) + 1) p->argv[argc++] = p->cmdline + i;
  char path[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
  const char *exe = "unknown";
  if (len > 0) {
    path[len] = '\0';
    exe = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  }
  snprintf(p->exe, sizeof p->exe, "%.*s", (int)sizeof p->exe - 1, exe);
  if (gethostname(p->host, sizeof p->host - 1) != 0) snprintf(p->host, sizeof p->host, "unknown");
}

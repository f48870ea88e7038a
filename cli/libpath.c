/* SPDX-License-Identifier: Apache-2.0 */
/* Finding libcudasnap.so next to the tool (contract in cli/libpath.h). */
#include "cli/libpath.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_compiler.h"

static const char *const cs_libpath_candidates[] = {"../lib/libcudasnap.so", "../interpose/libcudasnap.so"};

int cs_libpath_find(char *buf, size_t len) {
  char dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (n <= 0) {
    snprintf(buf, len, "nowhere (/proc/self/exe cannot be read)");
    return -1;
  }
  dir[n] = '\0';
  *strrchr(dir, '/') = '\0'; /* the kernel gives an absolute path: there is a '/' */
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_libpath_candidates); i++) {
    char path[PATH_MAX + 64], resolved[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, cs_libpath_candidates[i]);
    if (access(path, R_OK) == 0 && realpath(path, resolved) != NULL) {
      snprintf(buf, len, "%s", resolved);
      return 0;
    }
    int w = snprintf(buf + used, len - used, "%s%s", i > 0 ? " and " : "", path);
    if (w > 0) used += (size_t)w < len - used ? (size_t)w : len - used - 1;
  }
  return -1;
}

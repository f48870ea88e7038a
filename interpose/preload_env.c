/* SPDX-License-Identifier: Apache-2.0 */
#include "interpose/preload_env.h"

#include <string.h>

bool cs_preload_env_strip(char *value) {
  char *out = value;
  bool removed = false;
  const char *p = value;
  while (*p) {
    size_t sep = strspn(p, ": ");
    p += sep;
    size_t len = strcspn(p, ": ");
    if (len == 0) break;
    const char *slash = memrchr(p, '/', len);
    const char *base = slash ? slash + 1 : p;
    if (strncmp(base, "libcudasnap", 11) == 0) {
      removed = true;
    } else {
      if (out != value) *out++ = ':';
      memmove(out, p, len);
      out += len;
    }
    p += len;
  }
  *out = '\0';
  return removed;
}

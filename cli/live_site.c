/* SPDX-License-Identifier: Apache-2.0 */
/* A site name fitted to a column (contract in cli/live_site.h). */
#include "cli/live_site.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool cs_live_site_continuation(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

/* The first n bytes of s, shortened to a UTF-8 sequence's start. */
static size_t cs_live_site_head(const char *s, size_t n) {
  while (n > 0 && cs_live_site_continuation(s[n])) n--;
  return n;
}

/* Does s end in ":DIGITS"? Only then is its last word a file and a line. */
static bool cs_live_site_has_line(const char *s, size_t len) {
  size_t i = len;
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') i--;
  return i < len && i > 0 && s[i - 1] == ':';
}

void cs_live_site_fit(const char *site, size_t width, char *out, size_t len) {
  size_t n = strlen(site);
  if (width >= len) width = len - 1;
  if (n <= width) {
    snprintf(out, len, "%s", site);
    return;
  }
  /* The function ends at the space before the path: the first " /" (an absolute path, which may
   * hold spaces), else the last space (C++ names hold spaces, a relative path seldom does). */
  const char *space = strrchr(site, ' ');
  if (space == NULL || !cs_live_site_has_line(site, n)) {
    snprintf(out, len, "%.*s", (int)cs_live_site_head(site, width), site);
    return;
  }
  const char *path = strstr(site, " /");
  if (path == NULL) path = space;
  const char *file = strrchr(path + 1, '/');
  file = file != NULL ? file + 1 : path + 1;
  size_t function = (size_t)(path - site), base = n - (size_t)(file - site);
  if (function + 1 + base <= width) {
    snprintf(out, len, "%.*s %s", (int)function, site, file);
  } else if (base + 3 <= width) { /* at least a character of the function, its '~' and a space */
    size_t keep = cs_live_site_head(site, width - base - 2);
    snprintf(out, len, "%.*s~ %s", (int)keep, site, file);
  } else if (width > 1) { /* the function dropped, file:line's end kept */
    const char *tail = width - 1 >= base ? file : file + base - (width - 1);
    while (cs_live_site_continuation(*tail)) tail++;
    snprintf(out, len, "~%s", tail);
  } else {
    snprintf(out, len, "%.*s", (int)width, "~");
  }
}

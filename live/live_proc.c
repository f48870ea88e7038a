/* SPDX-License-Identifier: Apache-2.0 */
/* /proc for the live records' readers (contract in live/live_proc.h). */
#include "live/live_proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

uint64_t cs_live_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The last number of an "NSpid:\t12\t3" line. */
static long cs_live_last_number(const char *text) {
  long last = 0;
  for (const char *p = text; *p;) {
    if (!isdigit((unsigned char)*p)) {
      p++;
      continue;
    }
    char *end;
    last = strtol(p, &end, 10);
    p = end;
  }
  return last;
}

/* Line by line: the Groups line of a user in many groups can be long, and the fields wanted come
 * before and after it. */
int cs_live_status_read(long pid, cs_live_status_t *st) {
  memset(st, 0, sizeof *st);
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  FILE *f = fopen(path, "re");
  if (!f) return errno;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    unsigned real, eff;
    if (strncmp(line, "Uid:", 4) == 0 && sscanf(line + 4, "%u %u", &real, &eff) == 2) {
      st->euid = eff;
      st->has_uid = true;
    } else if (strncmp(line, "NSpid:", 6) == 0) {
      st->ns_pid = cs_live_last_number(line + 6);
    } else if (strncmp(line, "SigCgt:", 7) == 0 && sscanf(line + 7, "%" SCNx64, &st->sigcgt) == 1) {
      st->has_sigcgt = true;
      break; /* the last field wanted */
    }
  }
  free(line);
  fclose(f);
  return st->has_uid ? 0 : ENOENT; /* a process that ended while read */
}

uint64_t cs_live_ns_of(long pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/ns/pid", pid);
  struct stat st;
  return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static int cs_live_ns_cmp(const void *x, const void *y) {
  const cs_live_ns_entry_t *a = x, *b = y;
  if (a->ns != b->ns) return a->ns < b->ns ? -1 : 1;
  return (a->ns_pid > b->ns_pid) - (a->ns_pid < b->ns_pid);
}

int cs_live_nsmap_build(cs_live_nsmap_t *map, uint64_t own, uint64_t deadline_ns) {
  *map = (cs_live_nsmap_t){.items = NULL, .count = 0, .complete = false};
  DIR *d = opendir("/proc");
  if (!d) return errno;
  size_t cap = 0;
  int err = 0;
  struct dirent *de;
  bool complete = true;
  while ((de = readdir(d)) != NULL) {
    if (!isdigit((unsigned char)de->d_name[0])) continue;
    if (cs_live_now_ns() > deadline_ns) {
      complete = false;
      break;
    }
    long pid = strtol(de->d_name, NULL, 10);
    uint64_t ns = cs_live_ns_of(pid);
    if (ns == 0 || ns == own) continue;
    cs_live_status_t st;
    if (cs_live_status_read(pid, &st) != 0 || st.ns_pid <= 0) continue;
    if (map->count == cap) {
      size_t bigger = cap ? cap * 2 : 64;
      cs_live_ns_entry_t *items = realloc(map->items, bigger * sizeof *items);
      if (!items) {
        err = ENOMEM;
        break;
      }
      map->items = items;
      cap = bigger;
    }
    map->items[map->count++] = (cs_live_ns_entry_t){.ns = ns, .ns_pid = st.ns_pid, .pid = pid};
  }
  closedir(d);
  if (err) {
    cs_live_nsmap_free(map);
    return err;
  }
  if (map->count > 1) qsort(map->items, map->count, sizeof *map->items, cs_live_ns_cmp);
  map->complete = complete;
  return 0;
}

long cs_live_nsmap_find(const cs_live_nsmap_t *map, uint64_t ns, long ns_pid, bool *ns_seen) {
  /* the first entry not below (ns, ns_pid) */
  const cs_live_ns_entry_t key = {.ns = ns, .ns_pid = ns_pid, .pid = 0};
  size_t lo = 0, hi = map->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cs_live_ns_cmp(&map->items[mid], &key) < 0) lo = mid + 1;
    else hi = mid;
  }
  bool at = lo < map->count && map->items[lo].ns == ns;
  *ns_seen = at || (lo > 0 && map->items[lo - 1].ns == ns);
  return at && map->items[lo].ns_pid == ns_pid ? map->items[lo].pid : 0;
}

void cs_live_nsmap_free(cs_live_nsmap_t *map) {
  free(map->items);
  *map = (cs_live_nsmap_t){.items = NULL, .count = 0, .complete = false};
}

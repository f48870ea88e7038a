/* The live records' readers (contract in live/live_read.h). */
#include "live/live_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file's copy through its sequence lock: tries a few times while the publisher writes. */
static bool cs_live_copy(int fd, cs_live_record_t *r, size_t *devices) {
  for (int tries = 0; tries < 50; tries++) {
    uint64_t before, after;
    if (pread(fd, &r->header, sizeof r->header, 0) != (ssize_t)sizeof r->header) return false;
    before = r->header.seq;
    if (r->header.magic != CS_LIVE_MAGIC || r->header.version != CS_LIVE_VERSION ||
        r->header.header_size != sizeof(cs_live_header_t) || r->header.device_size != sizeof(cs_live_device_t))
      return false;
    if (before & 1) {
      usleep(200);
      continue;
    }
    size_t n = r->header.device_count <= CS_LIVE_MAX_DEVICES ? r->header.device_count : 0;
    size_t bytes = n * sizeof(cs_live_device_t);
    if (bytes && pread(fd, r->devices, bytes, sizeof r->header) != (ssize_t)bytes) return false;
    if (pread(fd, &after, sizeof after, offsetof(cs_live_header_t, seq)) != (ssize_t)sizeof after) return false;
    if (after == before) {
      *devices = n;
      return true;
    }
  }
  return false;
}

/* Is the process the record names the one running under its pid now, and of its user? */
static bool cs_live_process_matches(const cs_live_header_t *h) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%lld", (long long)h->pid);
  struct stat st;
  if (stat(path, &st) != 0 || st.st_uid != h->uid) return false;
  return h->start_ticks != 0 && cs_live_start_ticks((long)h->pid) == h->start_ticks;
}

/* "UID-PIDNS-PID" exactly, after the prefix. */
static bool cs_live_parse_name(const char *name, unsigned *uid, uint64_t *pid_ns, long *pid) {
  size_t plen = strlen(CS_LIVE_PREFIX);
  if (strncmp(name, CS_LIVE_PREFIX, plen) != 0) return false;
  char *end;
  errno = 0;
  unsigned long u = strtoul(name + plen, &end, 10);
  if (errno || end == name + plen || *end != '-' || u > 0xffffffffu) return false;
  const char *p = end + 1;
  unsigned long long ns = strtoull(p, &end, 10);
  if (errno || end == p || *end != '-') return false;
  p = end + 1;
  long id = strtol(p, &end, 10);
  if (errno || end == p || *end != '\0' || id <= 0) return false;
  *uid = (unsigned)u;
  *pid_ns = ns;
  *pid = id;
  return true;
}

static int cs_live_entry_cmp(const void *x, const void *y) {
  const cs_live_entry_t *a = x, *b = y;
  return (a->header.pid > b->header.pid) - (a->header.pid < b->header.pid);
}

/* One file: 1 taken (into *e), 0 passed over, -1 without host memory. */
static int cs_live_read_one(int dirfd, const char *name, const cs_live_filter_t *f, uint64_t pid_ns,
                            cs_live_record_t *scratch, cs_live_entry_t *e) {
  unsigned uid;
  uint64_t ns;
  long pid;
  if (!cs_live_parse_name(name, &uid, &ns, &pid)) return 0;
  /* another namespace's pid means nothing here: neither read nor cleaned up */
  if (ns != pid_ns || (!f->all_users && uid != f->uid) || (f->pid && pid != f->pid)) return 0;
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  struct stat st;
  size_t n = 0;
  bool whole = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid && cs_live_copy(fd, scratch, &n);
  close(fd);
  if (!whole) return 0;
  const cs_live_header_t *h = &scratch->header;
  if (h->pid != pid || h->uid != uid || h->pid_ns != ns) return 0; /* a record must name the process it is named after */
  if (!cs_live_process_matches(h)) {
    /* its process is gone (or the pid is another's now): a kill -9 left it behind */
    if (kill((pid_t)pid, 0) != 0 || cs_live_start_ticks(pid) != h->start_ticks) (void)unlinkat(dirfd, name, 0);
    return 0;
  }
  if (f->job_id && strcmp(h->job_id, f->job_id) != 0) return 0;
  e->header = *h;
  e->devices = malloc((n ? n : 1) * sizeof *e->devices);
  if (!e->devices) return -1;
  memcpy(e->devices, scratch->devices, n * sizeof *e->devices);
  e->header.device_count = (uint32_t)n;
  return 1;
}

int cs_live_list(const char *dir, const cs_live_filter_t *filter, cs_live_list_t *out) {
  *out = (cs_live_list_t){.items = NULL, .count = 0};
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : errno;
  cs_live_record_t *scratch = malloc(sizeof *scratch);
  uint64_t pid_ns = cs_live_pid_ns();
  size_t cap = 0;
  int err = scratch ? 0 : ENOMEM;
  struct dirent *de;
  while (!err && (de = readdir(d)) != NULL) {
    if (out->count == cap) {
      size_t bigger = cap ? cap * 2 : 16;
      cs_live_entry_t *items = realloc(out->items, bigger * sizeof *items);
      if (!items) {
        err = ENOMEM;
        break;
      }
      out->items = items;
      cap = bigger;
    }
    int rc = cs_live_read_one(dirfd(d), de->d_name, filter, pid_ns, scratch, &out->items[out->count]);
    if (rc < 0) err = ENOMEM;
    else out->count += (size_t)rc;
  }
  closedir(d);
  free(scratch);
  if (err) {
    cs_live_list_free(out);
    return err;
  }
  if (out->count > 1) qsort(out->items, out->count, sizeof *out->items, cs_live_entry_cmp);
  return 0;
}

void cs_live_list_free(cs_live_list_t *list) {
  for (size_t i = 0; i < list->count; i++) free(list->items[i].devices);
  free(list->items);
  *list = (cs_live_list_t){.items = NULL, .count = 0};
}

uid_t cs_live_invoking_uid(void) {
  uid_t uid = getuid();
  const char *sudo = uid == 0 ? getenv("SUDO_UID") : NULL;
  if (sudo && *sudo) {
    char *end;
    unsigned long u = strtoul(sudo, &end, 10);
    if (*end == '\0' && u <= 0xffffffffu) uid = (uid_t)u;
  }
  return uid;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The live records' readers (contract in live/live_read.h). */
#include "live/live_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "live/live_proc.h"

enum {
  CS_LIVE_TRIES = 20,        /* readings of one record's odd sequence word */
  CS_LIVE_TRY_WAIT_US = 100, /* between two: a publication copies for a few microseconds */
  CS_LIVE_UID_SLOTS = 4096,  /* users counted while the directories are collected */
};

/* One listing's state: its bounds, the namespace map (made when a record of another PID namespace
 * first needs it), the list it fills. */
typedef struct cs_live_scan_s {
  const cs_live_filter_t *f;
  uint64_t own_ns;
  uint64_t deadline_ns;
  uint64_t retry_left_ns;
  cs_live_nsmap_t map;
  bool map_built;
  cs_live_record_t *scratch;
  cs_live_list_t *out;
  size_t cap;
} cs_live_scan_t;

static bool cs_live_late(const cs_live_scan_t *s) { return cs_live_now_ns() > s->deadline_ns; }

/* "UID" or "UID-ANYTHING" after the prefix (the user's directory, or one the library made when
 * another user held that name). *canonical: the first. */
static bool cs_live_parse_dir_name(const char *name, unsigned *uid, bool *canonical) {
  size_t plen = strlen(CS_LIVE_PREFIX);
  if (strncmp(name, CS_LIVE_PREFIX, plen) != 0) return false;
  const char *p = name + plen;
  if (*p < '0' || *p > '9') return false;
  char *end;
  errno = 0;
  unsigned long u = strtoul(p, &end, 10);
  if (errno || u > 0xffffffffu || (*end != '\0' && *end != '-')) return false;
  *uid = (unsigned)u;
  *canonical = *end == '\0';
  return true;
}

/* "PIDNS-PID" exactly. */
static bool cs_live_parse_record_name(const char *name, uint64_t *pid_ns, long *pid) {
  if (*name < '0' || *name > '9') return false;
  char *end;
  errno = 0;
  unsigned long long ns = strtoull(name, &end, 10);
  if (errno || *end != '-' || end[1] < '0' || end[1] > '9') return false;
  const char *p = end + 1;
  long id = strtol(p, &end, 10);
  if (errno || *end != '\0' || id <= 0 || id > 0x7fffffffL) return false;
  *pid_ns = ns;
  *pid = id;
  return true;
}

/* Its owner may leave any string unterminated: every one is cut at its field's end. */
static void cs_live_terminate_header(cs_live_header_t *h) {
  h->job_id[sizeof h->job_id - 1] = '\0';
  h->host[sizeof h->host - 1] = '\0';
  h->exe[sizeof h->exe - 1] = '\0';
  if (h->label_count > CS_LIVE_MAX_LABELS) h->label_count = CS_LIVE_MAX_LABELS;
  for (uint32_t i = 0; i < CS_LIVE_MAX_LABELS; i++) {
    h->labels[i].key[sizeof h->labels[i].key - 1] = '\0';
    h->labels[i].value[sizeof h->labels[i].value - 1] = '\0';
  }
}

static void cs_live_terminate_device(cs_live_device_t *d) {
  d->phase[sizeof d->phase - 1] = '\0';
  if (d->site_count > CS_LIVE_TOP_SITES) d->site_count = CS_LIVE_TOP_SITES;
  for (uint32_t i = 0; i < CS_LIVE_TOP_SITES; i++) d->sites[i].name[sizeof d->sites[i].name - 1] = '\0';
}

/* The pid here of (ns, ns_pid): 0 when not found; *judged: not found means gone (the reader can
 * see into ns, or sees every process). */
static long cs_live_pid_here(cs_live_scan_t *s, uint64_t ns, long ns_pid, bool *judged) {
  *judged = true;
  if (ns == s->own_ns) return ns_pid;
  if (!s->map_built) {
    s->map_built = true;
    if (cs_live_nsmap_build(&s->map, s->own_ns, s->deadline_ns) != 0) s->map.complete = false;
  }
  bool seen;
  long pid = cs_live_nsmap_find(&s->map, ns, ns_pid, &seen);
  *judged = s->map.complete && (seen || s->own_ns == CS_LIVE_INIT_PID_NS);
  return pid;
}

/* Is the process at pid the one h names: its user, its start time? /proc/PID belongs to the
 * process's effective user, but to root for a process that is not dumpable: only then is its
 * status read (a few times dearer). */
static bool cs_live_process_is(long pid, const cs_live_header_t *h) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld", pid);
  struct stat st;
  if (stat(path, &st) != 0) return false;
  cs_live_status_t status;
  if (st.st_uid != h->uid && (cs_live_status_read(pid, &status) != 0 || status.euid != h->uid)) return false;
  return cs_live_start_ticks(pid) == h->start_ticks;
}

/* The header and devices between two equal even readings of seq, h already read once. Waits for
 * an odd word within the listing's retry time only. Returns the device count, or -1. */
static int cs_live_copy(cs_live_scan_t *s, int fd, const cs_live_header_t *checked) {
  cs_live_record_t *r = s->scratch;
  for (int tries = 0;; tries++) {
    uint64_t before = r->header.seq;
    if (!(before & 1)) {
      size_t n = r->header.device_count <= CS_LIVE_MAX_DEVICES ? r->header.device_count : 0;
      size_t bytes = n * sizeof(cs_live_device_t);
      uint64_t after;
      if (bytes && pread(fd, r->devices, bytes, sizeof r->header) != (ssize_t)bytes) return -1;
      if (pread(fd, &after, sizeof after, offsetof(cs_live_header_t, seq)) != (ssize_t)sizeof after) return -1;
      if (after == before) return (int)n;
    }
    if (tries == CS_LIVE_TRIES || s->retry_left_ns == 0 || cs_live_late(s)) {
      s->out->busy++;
      return -1;
    }
    uint64_t t0 = cs_live_now_ns();
    nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = CS_LIVE_TRY_WAIT_US * 1000}, NULL);
    uint64_t spent = cs_live_now_ns() - t0;
    s->retry_left_ns = spent < s->retry_left_ns ? s->retry_left_ns - spent : 0;
    if (pread(fd, &r->header, sizeof r->header, 0) != (ssize_t)sizeof r->header) return -1;
    /* the identity that was checked, or nothing */
    if (r->header.pid != checked->pid || r->header.uid != checked->uid || r->header.pid_ns != checked->pid_ns ||
        r->header.start_ticks != checked->start_ticks || r->header.magic != CS_LIVE_MAGIC)
      return -1;
  }
}

/* Room for one more entry. */
static bool cs_live_room(cs_live_scan_t *s) {
  if (s->out->count < s->cap) return true;
  size_t bigger = s->cap ? s->cap * 2 : 16;
  cs_live_entry_t *items = realloc(s->out->items, bigger * sizeof *items);
  if (!items) return false;
  s->out->items = items;
  s->cap = bigger;
  return true;
}

/* One record of user uid in the directory dfd: 1 taken, 0 passed over, -1 without host memory. */
static int cs_live_read_one(cs_live_scan_t *s, int dfd, const char *name, unsigned uid) {
  uint64_t ns;
  long ns_pid;
  if (!cs_live_parse_record_name(name, &ns, &ns_pid)) return 0;
  if (s->f->pid && ns == s->own_ns && ns_pid != s->f->pid) return 0;
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  cs_live_record_t *r = s->scratch;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid &&
            st.st_size == (off_t)sizeof(cs_live_record_t) &&
            pread(fd, &r->header, sizeof r->header, 0) == (ssize_t)sizeof r->header && r->header.magic == CS_LIVE_MAGIC;
  if (ok && r->header.version != CS_LIVE_VERSION) {
    s->out->other_version++;
    ok = false;
  }
  ok = ok && r->header.header_size == sizeof(cs_live_header_t) && r->header.device_size == sizeof(cs_live_device_t);
  /* a record names the process it is named after */
  ok = ok && r->header.pid == ns_pid && r->header.uid == uid && r->header.pid_ns == ns && r->header.start_ticks != 0;
  if (!ok) {
    close(fd);
    return 0;
  }
  /* the process first: a record whose process is gone is never waited for */
  bool judged;
  long pid = cs_live_pid_here(s, ns, ns_pid, &judged);
  if (pid == 0 || !cs_live_process_is(pid, &r->header)) {
    close(fd);
    if (judged) (void)unlinkat(dfd, name, 0); /* a kill -9 left it, or it was never a process's */
    return 0;
  }
  if (s->f->pid && pid != s->f->pid) {
    close(fd);
    return 0;
  }
  cs_live_header_t checked = r->header;
  int n = cs_live_copy(s, fd, &checked);
  close(fd);
  if (n < 0) return 0;
  cs_live_terminate_header(&r->header);
  if (s->f->job_id && strcmp(r->header.job_id, s->f->job_id) != 0) return 0;
  if (!cs_live_room(s)) return -1;
  cs_live_entry_t *e = &s->out->items[s->out->count];
  e->header = r->header;
  e->header.pid = pid;
  e->header.device_count = (uint32_t)n;
  e->ns_pid = ns_pid;
  e->devices = malloc((n ? (size_t)n : 1) * sizeof *e->devices);
  if (!e->devices) return -1;
  memcpy(e->devices, r->devices, (size_t)n * sizeof *e->devices);
  for (int i = 0; i < n; i++) cs_live_terminate_device(&e->devices[i]);
  s->out->count++;
  return 1;
}

/* One user's directory name under dir, to be looked at in uid order. */
typedef struct cs_live_udir_s {
  unsigned uid;
  bool canonical;
  char *name;
} cs_live_udir_t;

static int cs_live_udir_cmp(const void *x, const void *y) {
  const cs_live_udir_t *a = x, *b = y;
  if (a->uid != b->uid) return a->uid < b->uid ? -1 : 1;
  if (a->canonical != b->canonical) return a->canonical ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* Per user, what the caps count. */
typedef struct cs_live_user_s {
  unsigned uid;
  size_t names, taken;
  bool capped;
} cs_live_user_t;

/* The directory dirfd/name, if it is uid's and nobody else may write in it. */
static DIR *cs_live_open_user_dir(int dirfd, const char *name, unsigned uid) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 022) != 0) {
    close(fd);
    return NULL;
  }
  DIR *d = fdopendir(fd);
  if (!d) close(fd);
  return d;
}

/* The records of one user's directory. Returns 0, or ENOMEM. */
static int cs_live_read_user_dir(cs_live_scan_t *s, DIR *d, cs_live_user_t *u) {
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    if (cs_live_late(s)) {
      s->out->out_of_time = true;
      return 0;
    }
    if (++u->names > CS_LIVE_SCAN_PER_USER || u->taken == CS_LIVE_MAX_PER_USER) {
      u->capped = true;
      return 0;
    }
    int rc = cs_live_read_one(s, dirfd(d), de->d_name, u->uid);
    if (rc < 0) return ENOMEM;
    u->taken += (size_t)rc;
  }
  return 0;
}

/* Directories collected per user (an open-addressing table; users past its size are not
 * counted, and are bounded by the listing's time alone). */
typedef struct cs_live_uid_count_s {
  uint32_t uid, dirs; /* dirs 0: a free slot */
} cs_live_uid_count_t;

/* Count one more directory of uid; false when it already has as many as its names' cap. */
static bool cs_live_count_dir(cs_live_uid_count_t *counts, unsigned uid) {
  for (uint32_t i = 0, h = (uid * 2654435761u) % CS_LIVE_UID_SLOTS; i < CS_LIVE_UID_SLOTS;
       i++, h = (h + 1) % CS_LIVE_UID_SLOTS) {
    cs_live_uid_count_t *c = &counts[h];
    if (c->dirs == 0) *c = (cs_live_uid_count_t){.uid = uid, .dirs = 0};
    if (c->uid != uid) continue;
    if (c->dirs == CS_LIVE_SCAN_PER_USER) return false;
    c->dirs++;
    return true;
  }
  return true;
}

/* Every user's directory of dir that the filter wants, in uid order (each user's own name first). */
static int cs_live_user_dirs(cs_live_scan_t *s, DIR *d, cs_live_udir_t **out, size_t *count) {
  cs_live_uid_count_t *counts = calloc(CS_LIVE_UID_SLOTS, sizeof *counts);
  if (!counts) return ENOMEM;
  size_t n = 0, cap = 0;
  cs_live_udir_t *v = NULL;
  struct dirent *de;
  int err = 0;
  while ((de = readdir(d)) != NULL) {
    unsigned uid;
    bool canonical;
    if (!cs_live_parse_dir_name(de->d_name, &uid, &canonical)) continue;
    if (!s->f->all_users && uid != (unsigned)s->f->uid) continue;
    if (cs_live_late(s)) {
      s->out->out_of_time = true;
      break;
    }
    /* only the user's own: what another user put under the user's names costs a stat, no cap */
    if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) continue;
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
        (st.st_mode & 022) != 0)
      continue;
    /* one user's directories beyond its names' cap would not be looked at: not collected */
    if (!cs_live_count_dir(counts, uid)) continue;
    if (n == cap) {
      size_t bigger = cap ? cap * 2 : 16;
      cs_live_udir_t *w = realloc(v, bigger * sizeof *w);
      if (!w) {
        err = ENOMEM;
        break;
      }
      v = w;
      cap = bigger;
    }
    v[n].uid = uid;
    v[n].canonical = canonical;
    v[n].name = strdup(de->d_name);
    if (!v[n].name) {
      err = ENOMEM;
      break;
    }
    n++;
  }
  free(counts);
  if (n > 1) qsort(v, n, sizeof *v, cs_live_udir_cmp);
  *out = v;
  *count = n;
  return err;
}

static int cs_live_entry_cmp(const void *x, const void *y) {
  const cs_live_entry_t *a = x, *b = y;
  return (a->header.pid > b->header.pid) - (a->header.pid < b->header.pid);
}

int cs_live_list(const char *dir, const cs_live_filter_t *filter, cs_live_list_t *out) {
  memset(out, 0, sizeof *out);
  uint64_t start = cs_live_now_ns();
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : errno;
  cs_live_scan_t s = {.f = filter,
                      .own_ns = cs_live_pid_ns(),
                      .deadline_ns = start + (uint64_t)CS_LIVE_LIST_MS * 1000000u,
                      .retry_left_ns = (uint64_t)CS_LIVE_RETRY_MS * 1000000u,
                      .scratch = malloc(sizeof(cs_live_record_t)),
                      .out = out};
  cs_live_udir_t *udirs = NULL;
  size_t nudirs = 0;
  int err = s.scratch ? cs_live_user_dirs(&s, d, &udirs, &nudirs) : ENOMEM;
  cs_live_user_t u = {.uid = 0};
  for (size_t i = 0; !err && i < nudirs && !out->out_of_time; i++) {
    if (i == 0 || udirs[i].uid != u.uid) {
      out->users_capped += u.capped;
      u = (cs_live_user_t){.uid = udirs[i].uid};
    }
    if (u.capped) continue;
    if (++u.names > CS_LIVE_SCAN_PER_USER) { /* a directory costs a name */
      u.capped = true;
      continue;
    }
    DIR *ud = cs_live_open_user_dir(dirfd(d), udirs[i].name, u.uid);
    if (!ud) continue;
    err = cs_live_read_user_dir(&s, ud, &u);
    closedir(ud);
  }
  out->users_capped += u.capped;
  for (size_t i = 0; i < nudirs; i++) free(udirs[i].name);
  free(udirs);
  closedir(d);
  free(s.scratch);
  cs_live_nsmap_free(&s.map);
  if (err) {
    cs_live_list_free(out);
    return err;
  }
  if (out->count > 1) qsort(out->items, out->count, sizeof *out->items, cs_live_entry_cmp);
  /* one entry per process: its user may have copied its record into another directory of its own,
   * and two would repeat every series of the exposition */
  size_t kept = 0;
  for (size_t i = 0; i < out->count; i++) {
    if (kept > 0 && out->items[kept - 1].header.pid == out->items[i].header.pid) {
      free(out->items[i].devices);
      continue;
    }
    out->items[kept++] = out->items[i];
  }
  out->count = kept;
  return 0;
}

void cs_live_list_free(cs_live_list_t *list) {
  for (size_t i = 0; i < list->count; i++) free(list->items[i].devices);
  free(list->items);
  memset(list, 0, sizeof *list);
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

/* SPDX-License-Identifier: Apache-2.0 */
/* The live record's publisher side (contract in live/live_write.h). */
#include "live/live_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(offsetof(cs_live_header_t, seq) % 8 == 0, "seq is read and written as one word");

static _Atomic uint64_t *cs_live_seq(cs_live_writer_t *w) {
  return (_Atomic uint64_t *)(void *)&w->record->header.seq;
}

/* The directory at path opened, if it is uid's and nobody else may write in it: what another
 * user put under the name first (a file, a link, a directory of theirs) is refused. Returns a
 * descriptor, or -1. */
static int cs_live_open_own_dir(const char *path, uid_t uid) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  bool mine = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid;
  /* made by this user with other bits (a chmod): ours to close again */
  if (mine && (st.st_mode & 077) != 0 && fchmod(fd, 0700) != 0) mine = false;
  if (!mine) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The user's directory under dir: dir/cudasnap-live-UID, or when another user holds that name, a
 * new dir/cudasnap-live-UID-XXXXXX of this process's own. Returns a descriptor or -errno. */
static int cs_live_user_dir(cs_live_writer_t *w, const char *dir, uid_t uid) {
  char name[64];
  cs_live_user_dir_name(name, sizeof name, (unsigned)uid);
  if (snprintf(w->dir, sizeof w->dir, "%s/%s", dir, name) >= (int)sizeof w->dir) return -ENAMETOOLONG;
  if (mkdir(w->dir, 0700) != 0 && errno != EEXIST) return -errno;
  int fd = cs_live_open_own_dir(w->dir, uid);
  if (fd >= 0) return fd;
  /* taken by another user (sticky /dev/shm: they may make names there, not remove ours) */
  if (snprintf(w->dir, sizeof w->dir, "%s/%s-XXXXXX", dir, name) >= (int)sizeof w->dir) return -ENAMETOOLONG;
  if (!mkdtemp(w->dir)) return -errno;
  fd = cs_live_open_own_dir(w->dir, uid);
  if (fd < 0) {
    (void)rmdir(w->dir);
    return -EEXIST;
  }
  w->own_dir = true;
  return fd;
}

/* Made at its final name, without a rename (which a program may have interposed, and which runs
 * at activation on the program's thread): a reader skips the file until its magic is written,
 * last. A file left at the name by an earlier process of this pid is replaced (the directory is
 * this user's: nobody else can have put it there). */
int cs_live_writer_open(cs_live_writer_t *w, const char *dir, const cs_live_header_t *identity) {
  memset(w, 0, sizeof *w);
  int dfd = cs_live_user_dir(w, dir, (uid_t)identity->uid);
  if (dfd < 0) return -dfd;
  char name[64];
  cs_live_record_name(name, sizeof name, identity->pid_ns, (long)identity->pid);
  snprintf(w->path, sizeof w->path, "%s/%s", w->dir, name);
  const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(dfd, name, flags, 0600);
  if (fd < 0 && errno == EEXIST && unlinkat(dfd, name, 0) == 0) fd = openat(dfd, name, flags, 0600);
  int err = fd < 0 ? errno : 0;
  close(dfd);
  void *map = MAP_FAILED;
  if (!err && (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)sizeof(cs_live_record_t)) != 0)) err = errno;
  if (!err) {
    map = mmap(NULL, sizeof(cs_live_record_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) err = errno;
  }
  if (fd >= 0) close(fd);
  if (err) {
    if (map != MAP_FAILED) munmap(map, sizeof(cs_live_record_t));
    if (fd >= 0) (void)unlink(w->path);
    if (w->own_dir) (void)rmdir(w->dir);
    return err;
  }
  cs_live_record_t *r = map;
  r->header = *identity;
  r->header.magic = 0;
  r->header.version = CS_LIVE_VERSION;
  r->header.seq = 0;
  r->header.header_size = sizeof(cs_live_header_t);
  r->header.device_size = sizeof(cs_live_device_t);
  atomic_thread_fence(memory_order_release);
  r->header.magic = CS_LIVE_MAGIC; /* whole from here on */
  w->record = map;
  w->pid = (long)getpid();
  return 0;
}

void cs_live_writer_begin(cs_live_writer_t *w) {
  atomic_fetch_add_explicit(cs_live_seq(w), 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release); /* odd before any figure changes */
}

void cs_live_writer_end(cs_live_writer_t *w) {
  atomic_fetch_add_explicit(cs_live_seq(w), 1, memory_order_release); /* the figures before even */
}

void cs_live_writer_remove(const cs_live_writer_t *w) {
  if (w->pid != (long)getpid() || w->path[0] == '\0') return;
  (void)unlink(w->path);
  if (w->own_dir) (void)rmdir(w->dir);
}

void cs_live_writer_close(cs_live_writer_t *w, bool remove) {
  if (!w->record) return;
  munmap(w->record, sizeof(cs_live_record_t));
  w->record = NULL;
  if (remove) cs_live_writer_remove(w);
}

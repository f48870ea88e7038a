/* The live record's publisher side (contract in live/live_write.h). */
#include "live/live_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(offsetof(cs_live_header_t, seq) % 8 == 0, "seq is read and written as one word");

static _Atomic uint64_t *cs_live_seq(cs_live_writer_t *w) {
  return (_Atomic uint64_t *)(void *)&w->record->header.seq;
}

/* Made at its final name, without a rename (which a program may have interposed, and which runs
 * at activation on the program's thread): a reader skips the file until its magic is written,
 * last. A file left at the name by an earlier process of this pid is replaced. */
int cs_live_writer_open(cs_live_writer_t *w, const char *dir, const cs_live_header_t *identity) {
  memset(w, 0, sizeof *w);
  cs_live_path(w->path, sizeof w->path, dir, identity->uid, identity->pid_ns, (long)identity->pid);
  int fd = open(w->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST && unlink(w->path) == 0)
    fd = open(w->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  int err = 0;
  void *map = MAP_FAILED;
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)sizeof(cs_live_record_t)) != 0) err = errno;
  if (!err) {
    map = mmap(NULL, sizeof(cs_live_record_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) err = errno;
  }
  close(fd);
  if (err) {
    if (map != MAP_FAILED) munmap(map, sizeof(cs_live_record_t));
    (void)unlink(w->path);
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

void cs_live_writer_close(cs_live_writer_t *w, bool remove) {
  if (!w->record) return;
  munmap(w->record, sizeof(cs_live_record_t));
  w->record = NULL;
  if (remove && w->pid == (long)getpid()) (void)unlink(w->path);
}

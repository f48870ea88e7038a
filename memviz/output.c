/* SPDX-License-Identifier: Apache-2.0 */
#include "memviz/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int cs_output_append(char *buf, size_t len, size_t *used, const char *text) {
  size_t n = strlen(text);
  if (*used + n >= len) return -1;
  memcpy(buf + *used, text, n);
  *used += n;
  buf[*used] = '\0';
  return 0;
}

int cs_output_expand(const char *pattern, const cs_output_fields_t *f, char *buf, size_t len) {
  size_t used = 0;
  if (len == 0) return -1;
  buf[0] = '\0';
  for (const char *p = pattern; *p; p++) {
    char number[32];
    const char *piece = NULL;
    char literal[2] = {*p, '\0'};
    if (*p == '%' && p[1]) {
      switch (*++p) {
      case 'e': piece = f->executable; break;
      case 'p': snprintf(number, sizeof number, "%ld", f->pid); piece = number; break;
      case 'h': piece = f->host; break;
      case 'r': piece = f->rank; break;
      case 'n': snprintf(number, sizeof number, "%d", f->dump_number); piece = number; break;
      case 't': piece = f->trigger; break;
      case '%': piece = "%"; break;
      default: literal[0] = '%'; p--; piece = literal; break;
      }
    } else {
      piece = literal;
    }
    if (cs_output_append(buf, len, &used, piece ? piece : "") != 0) return -1;
  }
  return 0;
}

const char *cs_output_rank(void) {
  /* torchrun's RANK first: under `srun torchrun`, SLURM_PROCID counts nodes (snapshot/job.h) */
  static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return v;
  }
  return "0";
}

/* Six characters for a temporary name: the pid, a counter and the clock, mixed (splitmix64), so
 * that two processes or threads writing next to the same output do not keep colliding. */
static void cs_output_temp_suffix(char *suffix) {
  static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static unsigned long counter;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
               ((uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  for (int i = 0; i < 6; i++, x /= sizeof letters - 1) suffix[i] = letters[x % (sizeof letters - 1)];
}

int cs_output_open(cs_output_t *out, const char *path) {
  memset(out, 0, sizeof *out);
  out->fd = -1;
  int n = snprintf(out->temp_path, sizeof out->temp_path, "%s.tmp.XXXXXX", path);
  if (n < 0 || (size_t)n >= sizeof out->temp_path) return ENAMETOOLONG;
  /* Not mkostemp, which makes 0600 files: open asks for 0666 and the kernel takes the process's
   * umask (and a default ACL) off, so a snapshot is made as any file of the program is, readable
   * by others only where the user lets files be. Safe in a signal handler, as open is. */
  for (int tries = 0; tries < 100; tries++) {
    cs_output_temp_suffix(out->temp_path + n - 6);
    out->fd = open(out->temp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (out->fd >= 0) return 0;
    if (errno != EEXIST) break;
  }
  int err = errno;
  out->temp_path[0] = '\0'; /* nothing of ours to remove */
  return err;
}

void cs_output_abort(cs_output_t *out) {
  if (out->fd >= 0) close(out->fd);
  out->fd = -1;
  if (out->temp_path[0]) unlink(out->temp_path);
}

/* path with "-N" before the extension (the last '.' after the last '/'). */
static int cs_output_numbered(const char *path, int n, char *buf, size_t len) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1)) dot = path + strlen(path);
  int written = snprintf(buf, len, "%.*s-%d%s", (int)(dot - path), path, n, dot);
  return written < 0 || (size_t)written >= len ? -1 : 0;
}

/* Move temp to name unless name exists: renameat2(RENAME_NOREPLACE), or link + unlink where the
 * file system lacks that flag. 0, or -1 with errno (EEXIST when the name is taken). */
static int cs_output_place(const char *temp, const char *name) {
  if (renameat2(AT_FDCWD, temp, AT_FDCWD, name, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
  if (link(temp, name) != 0) return -1;
  unlink(temp);
  return 0;
}

int cs_output_commit(cs_output_t *out, const char *path) {
  int err = 0;
  if (fsync(out->fd) != 0 && errno != EINVAL) err = errno;
  if (close(out->fd) != 0 && !err) err = errno;
  out->fd = -1;
  if (err) {
    cs_output_abort(out);
    return err;
  }
  snprintf(out->final_path, sizeof out->final_path, "%s", path);
  for (int n = 1; n <= 1000; n++) {
    if (cs_output_place(out->temp_path, out->final_path) == 0) return 0;
    if (errno != EEXIST) {
      err = errno;
      break;
    }
    if (cs_output_numbered(path, n, out->final_path, sizeof out->final_path) != 0) {
      err = ENAMETOOLONG;
      break;
    }
  }
  if (!err) err = EEXIST;
  cs_output_abort(out);
  return err;
}

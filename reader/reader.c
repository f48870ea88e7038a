/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot files into the snapshot model (contract in reader/reader.h).
 *
 * Format: like the viewer, which tries JSON.parse and falls back to its unpickler. A file whose
 * first byte is 0x80 (PROTO) cannot be JSON and goes straight to the unpickler. Anything else is
 * parsed as JSON; if that fails, the unpickler gets a try too (a protocol-1 pickle without PROTO
 * loads in the viewer), and if it fails as well the more telling of the two errors is reported. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cs_compiler.h"
#include "reader/json_stream.h"
#include "reader/reader.h"
#include "reader/unpickle.h"

const char *cs_snapshot_format_name(cs_snapshot_format_t format) {
  return format == CS_SNAPSHOT_PICKLE ? "pickle" : "JSON";
}

/* After JSON failed on bytes that are not a PROTO pickle: the viewer's unpickler on the same bytes.
 * Returns the model, or NULL with *err rewritten when the unpickler got further than byte 0 (a
 * protocol 0/1 pickle, not JSON: its complaint is the telling one). */
static cs_doc_t *cs_reader_pickle_fallback(const uint8_t *p, size_t len, cs_snapshot_format_t *format,
                                           cs_read_error_t *err, cs_unpickle_stats_t *stats) {
  cs_read_error_t perr;
  cs_doc_t *doc = cs_unpickle(p, len, stats, &perr);
  if (doc != NULL) {
    if (format != NULL) *format = CS_SNAPSHOT_PICKLE;
    return doc;
  }
  if (perr.offset > 0) {
    if (format != NULL) *format = CS_SNAPSHOT_PICKLE;
    cs_read_error_set(err, perr.offset, "not JSON, and as a pickle: %.200s", perr.message);
  }
  memset(stats, 0, sizeof *stats);
  stats->protocol = -2;
  return NULL;
}

cs_doc_t *cs_read_snapshot_ex(const void *data, size_t len, cs_snapshot_format_t *format, cs_read_error_t *err,
                              cs_unpickle_stats_t *stats) {
  cs_read_error_t local_err;
  cs_unpickle_stats_t local_stats;
  if (err == NULL) err = &local_err;
  if (stats == NULL) stats = &local_stats;
  memset(stats, 0, sizeof *stats);
  stats->protocol = -2;
  memset(err, 0, sizeof *err);
  const uint8_t *p = data;
  if (len == 0 || p == NULL) {
    cs_read_error_set(err, 0, "empty file");
    return NULL;
  }
  if (p[0] == 0x80) {
    if (format != NULL) *format = CS_SNAPSHOT_PICKLE;
    return cs_unpickle(p, len, stats, err);
  }
  if (format != NULL) *format = CS_SNAPSHOT_JSON;
  cs_doc_t *doc = cs_json_read_bytes(p, len, err);
  if (doc != NULL) return doc;
  return cs_reader_pickle_fallback(p, len, format, err, stats);
}

cs_doc_t *cs_read_snapshot(const void *data, size_t len, cs_snapshot_format_t *format, cs_read_error_t *err) {
  return cs_read_snapshot_ex(data, len, format, err, NULL);
}

/* The rest of fd after `have` bytes already in *buf (capacity *cap), grown as needed. */
static bool cs_reader_slurp(int fd, uint8_t **buf, size_t *cap, size_t *have, cs_read_error_t *err) {
  for (;;) {
    if (*have == *cap) {
      uint8_t *nb = *cap <= SIZE_MAX / 2 ? realloc(*buf, *cap * 2) : NULL;
      if (nb == NULL) {
        cs_read_error_set(err, *have, "out of host memory");
        return false;
      }
      *buf = nb;
      *cap *= 2;
    }
    ssize_t n = read(fd, *buf + *have, *cap - *have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err->io_errno = errno;
      cs_read_error_set(err, *have, "%s", strerror(errno));
      return false;
    }
    if (n == 0) return true;
    *have += (size_t)n;
  }
}

/* ---- a pickle read in place ----------------------------------------------------------------------
 * A pickle file of CS_READER_MAP_MIN bytes or more is mapped rather than read into a buffer: the
 * copy and the buffer's fresh pages were a fifth of reading a 1,000,000-event pickle. A file that
 * shrinks while it is mapped makes the next access past its end raise SIGBUS; for the duration of
 * the read a handler turns a SIGBUS inside the mapping into a read error (what the read already
 * built is then not freed: a one-time leak in a failure that needs another process truncating the
 * file). A SIGBUS anywhere else keeps its default action. */
#define CS_READER_MAP_MIN ((size_t)1 << 20)

static sigjmp_buf cs_reader_bus_env;
static const uint8_t *volatile cs_reader_bus_lo, *volatile cs_reader_bus_hi;

static void cs_reader_on_sigbus(int sig, siginfo_t *si, void *uctx) {
  (void)uctx;
  const uint8_t *at = si->si_addr;
  if (cs_reader_bus_lo != NULL && at >= cs_reader_bus_lo && at < cs_reader_bus_hi) siglongjmp(cs_reader_bus_env, 1);
  signal(sig, SIG_DFL); /* not ours: the faulting access repeats and takes the default action */
}

/* The pickle in fd (size bytes, regular) read in place; *mapped false when it could not be mapped
 * (the caller reads it instead). */
static cs_doc_t *cs_reader_pickle_mapped(int fd, size_t size, cs_snapshot_format_t *format, cs_read_error_t *err,
                                         cs_unpickle_stats_t *stats, bool *mapped) {
  const uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  *mapped = map != MAP_FAILED;
  if (!*mapped) return NULL;
  (void)madvise((void *)map, size, MADV_SEQUENTIAL);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = cs_reader_on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  bool handled = sigaction(SIGBUS, &sa, &old) == 0;
  cs_doc_t *volatile doc = NULL;
  if (sigsetjmp(cs_reader_bus_env, 1) == 0) {
    cs_reader_bus_lo = map;
    cs_reader_bus_hi = map + size;
    doc = cs_read_snapshot_ex(map, size, format, err, stats);
  } else {
    cs_read_error_set(err, 0, "the file shrank while it was read (another process truncated it)");
    doc = NULL;
  }
  cs_reader_bus_lo = cs_reader_bus_hi = NULL;
  if (handled) sigaction(SIGBUS, &old, NULL);
  munmap((void *)map, size);
  return doc;
}

cs_doc_t *cs_read_snapshot_file(const char *path, cs_snapshot_format_t *format, size_t *bytes,
                                cs_read_error_t *err) {
  return cs_read_snapshot_file_ex(path, format, bytes, err, NULL);
}

cs_doc_t *cs_read_snapshot_file_ex(const char *path, cs_snapshot_format_t *format, size_t *bytes,
                                   cs_read_error_t *err, cs_unpickle_stats_t *stats) {
  cs_read_error_t local_err;
  cs_unpickle_stats_t local_stats;
  if (err == NULL) err = &local_err;
  if (stats == NULL) stats = &local_stats;
  memset(stats, 0, sizeof *stats);
  stats->protocol = -2;
  memset(err, 0, sizeof *err);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err->io_errno = errno;
    cs_read_error_set(err, 0, "%s", strerror(errno));
    return NULL;
  }
  struct stat sb;
  bool regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
  if (bytes != NULL) *bytes = regular ? (size_t)sb.st_size : 0;
  /* The first byte tells the format; read a little to see it. */
  size_t cap = 1 << 16, have = 0;
  uint8_t *buf = malloc(cap);
  if (buf == NULL) {
    close(fd);
    cs_read_error_set(err, 0, "out of host memory");
    return NULL;
  }
  while (have == 0) {
    ssize_t n = read(fd, buf, cap);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err->io_errno = errno;
      cs_read_error_set(err, 0, "%s", strerror(errno));
      goto fail;
    }
    if (n == 0) break;
    have = (size_t)n;
  }
  cs_doc_t *doc = NULL;
  if (have > 0 && buf[0] != 0x80) {
    if (format != NULL) *format = CS_SNAPSHOT_JSON;
    doc = cs_json_read_fd(fd, buf, have, err);
    if (doc != NULL || !regular || lseek(fd, 0, SEEK_SET) != 0) {
      if (bytes != NULL && !regular && doc != NULL) *bytes = 0;
      free(buf);
      close(fd);
      return doc;
    }
    /* Not JSON: the viewer's unpickler fallback needs the bytes in memory (a failure path only). */
    have = 0;
  } else if (have > 0 && regular && (size_t)sb.st_size >= CS_READER_MAP_MIN) {
    bool mapped;
    doc = cs_reader_pickle_mapped(fd, (size_t)sb.st_size, format, err, stats, &mapped);
    if (mapped) {
      free(buf);
      close(fd);
      return doc;
    }
  }
  if (regular && (size_t)sb.st_size + 1 > cap) {
    uint8_t *nb = realloc(buf, (size_t)sb.st_size + 1);
    if (nb == NULL) {
      cs_read_error_set(err, 0, "out of host memory for %zu bytes", (size_t)sb.st_size + 1);
      goto fail;
    }
    buf = nb;
    cap = (size_t)sb.st_size + 1;
  }
  if (!cs_reader_slurp(fd, &buf, &cap, &have, err)) goto fail;
  close(fd);
  if (bytes != NULL) *bytes = have;
  if (have > 0 && buf[0] != 0x80) {
    doc = cs_reader_pickle_fallback(buf, have, format, err, stats);
  } else {
    doc = cs_read_snapshot_ex(buf, have, format, err, stats);
  }
  free(buf);
  return doc;
fail:
  free(buf);
  close(fd);
  return NULL;
}

/* Snapshot files into memory and into trees (contract in cli/load.h).
 *
 * The reader has a file entry point of its own (cs_read_snapshot_file); reading here instead
 * gives the progress line, and `check` needs the bytes themselves (cs_validate_bytes). */
#include "cli/load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/progress.h"
#include "reader/validate.h"

/* read(2) in pieces of this size, so the progress line moves. */
enum { CS_LOAD_CHUNK = 8 << 20 };

static int cs_load_fail(const char *path, int fd, uint8_t *buf, int err) {
  fprintf(stderr, "%s: cannot read: %s\n", path, strerror(err));
  if (fd >= 0) close(fd);
  free(buf);
  return -1;
}

int cs_load_bytes(const char *path, cs_load_bytes_t *out) {
  *out = (cs_load_bytes_t){NULL, 0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cs_load_fail(path, -1, NULL, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) return cs_load_fail(path, fd, NULL, errno);
  if (S_ISDIR(st.st_mode)) return cs_load_fail(path, fd, NULL, EISDIR);
  /* A regular file's size is known (one byte more lets the read that sees its end fit without
   * growing the buffer); anything else (a pipe) grows the buffer as it comes. */
  size_t size = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size : 0;
  size_t cap = size > 0 ? size + 1 : CS_LOAD_CHUNK;
  uint8_t *buf = malloc(cap);
  if (buf == NULL) return cs_load_fail(path, fd, NULL, ENOMEM);
  char what[96];
  snprintf(what, sizeof what, "reading %s", path);
  cs_progress_t progress;
  cs_progress_start(&progress, what, size, size); /* off when the size is not known */
  size_t len = 0;
  for (;;) {
    if (len == cap) {
      uint8_t *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (bigger == NULL) {
        cs_progress_end(&progress);
        return cs_load_fail(path, fd, buf, ENOMEM);
      }
      buf = bigger;
      cap *= 2;
    }
    size_t want = cap - len < CS_LOAD_CHUNK ? cap - len : CS_LOAD_CHUNK;
    ssize_t n = read(fd, buf + len, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      cs_progress_end(&progress);
      return cs_load_fail(path, fd, buf, err);
    }
    if (n == 0) break;
    len += (size_t)n;
    cs_progress_update(&progress, len);
  }
  cs_progress_end(&progress);
  close(fd);
  *out = (cs_load_bytes_t){buf, len};
  return 0;
}

void cs_load_bytes_free(cs_load_bytes_t *b) {
  free(b->data);
  *b = (cs_load_bytes_t){NULL, 0};
}

cJSON *cs_load_parse(const char *path, const cs_load_bytes_t *b, cs_snapshot_format_t *format) {
  char what[96];
  snprintf(what, sizeof what, "reading %s", path);
  cs_progress_t progress;
  cs_progress_start(&progress, what, b->len, 0);
  cs_progress_step(&progress, "parsing");
  cs_read_error_t err;
  cJSON *root = cs_read_snapshot(b->data, b->len, format, &err);
  cs_progress_end(&progress);
  if (root == NULL) fprintf(stderr, "%s: byte %zu: %s\n", path, err.offset, err.message);
  return root;
}

/* Refuses (deletes) root when its numbers mean nothing. */
static cJSON *cs_load_refuse_unreadable(const char *path, cJSON *root) {
  cs_report_t report;
  cs_report_init(&report);
  if (!cs_validate_readable(root, &report)) {
    fprintf(stderr, "%s: %s: %s\n", path, report.first_unreadable.where, report.first_unreadable.message);
    cJSON_Delete(root);
    root = NULL;
  }
  cs_report_free(&report);
  return root;
}

cJSON *cs_load_snapshot(const char *path, cs_snapshot_format_t *format) {
  cs_load_bytes_t bytes;
  if (cs_load_bytes(path, &bytes) != 0) return NULL;
  cJSON *root = cs_load_parse(path, &bytes, format);
  cs_load_bytes_free(&bytes);
  return root != NULL ? cs_load_refuse_unreadable(path, root) : NULL;
}

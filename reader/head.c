/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a snapshot's head (contract in reader/head.h). */
#include "reader/head.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/json_stream.h"

/* A pickle's first try, and the most it reads before giving up on a head (then it is not ours:
 * cudasnap's head is a few KB). */
#define CS_HEAD_PICKLE_FIRST ((size_t)16 << 10)
#define CS_HEAD_PICKLE_MAX ((size_t)16 << 20)

static cs_head_status_t cs_head_pickle(int fd, size_t file_size, const char *key, cs_doc_t **out,
                                       cs_read_error_t *err) {
  size_t want = CS_HEAD_PICKLE_FIRST, have = 0;
  uint8_t *buf = NULL;
  cs_head_status_t status = CS_HEAD_SHORT;
  while (status == CS_HEAD_SHORT) {
    if (want > file_size) want = file_size;
    if (want <= have || want > CS_HEAD_PICKLE_MAX) break; /* nothing more to read */
    uint8_t *grown = realloc(buf, want);
    if (grown == NULL) break;
    buf = grown;
    while (have < want) {
      ssize_t n = pread(fd, buf + have, want - have, (off_t)have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      have += (size_t)n;
    }
    if (have < want) break; /* the file shrank, or an I/O error: the full read says which */
    status = cs_unpickle_head(buf, have, key, out, err);
    want *= 4;
  }
  free(buf);
  return status == CS_HEAD_SHORT ? CS_HEAD_ERROR : status;
}

cs_head_status_t cs_read_head(const char *path, const char *key, cs_doc_t **out, cs_read_error_t *err) {
  *out = NULL;
  memset(err, 0, sizeof *err);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CS_HEAD_ERROR;
  struct stat st;
  uint8_t first = 0;
  cs_head_status_t status = CS_HEAD_ERROR;
  if (fstat(fd, &st) == 0 && pread(fd, &first, 1, 0) == 1) {
    if (first == 0x80) status = cs_head_pickle(fd, (size_t)st.st_size, key, out, err);
    else status = cs_json_read_head_fd(fd, key, out, err);
  }
  close(fd);
  return status;
}

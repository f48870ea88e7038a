/* SPDX-License-Identifier: Apache-2.0 */
/* A process that publishes a hostile live record about itself, as any user can: the record of a
 * running process, made through the writer the library uses (live/live_write.h), with texts no
 * cudasnap would write. For the tests of what top and metrics make of other users' records
 * (live_safe_test.sh):
 *   prog_hostile hostile       one device whose phase, sites, and the process's job, host and
 *                            executable hold escape sequences, C1 controls, DEL, quotes, newlines
 *                            and invalid UTF-8 (hostile_texts below: the test reads them back)
 *   prog_hostile unterminated  every text field full to its last byte, without a terminator
 *   prog_hostile big N         N processes (this one and N-1 children), each with 64 devices of 16
 *                            sites with 239-byte names: an exposition of several MB
 * Each process prints "ready" once its record is written, and at the end of stdin removes it and
 * exits 0. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "live/live_write.h"

#define HOSTILE_CHECK(cond, ...)                          \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "prog_hostile: " __VA_ARGS__);      \
      fprintf(stderr, " (%s)\n", strerror(errno));        \
      exit(1);                                            \
    }                                                     \
  } while (0)

/* The hostile texts, field by field; the test (live_safe_test.sh, group names) has the same bytes. */
static const char *const hostile_sites[] = {
    "\x1b[2J\x1b[Hclear_screen",          /* ESC [ 2 J, ESC [ H: clear the screen, cursor home */
    "bad_utf8 \xff\xfe \xed\xa0\x80 \xe2\x82", /* invalid bytes, a surrogate, a cut sequence */
    "c1_csi \xc2\x9b" "2J \x7f del",      /* U+009B (CSI, C1) and DEL */
    "quote\" back\\slash new\nline tab\t", /* what the exposition escapes, and more controls */
    "valid \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", /* e acute, euro, an emoji: kept as they are */
};
static const char hostile_phase[] = "\x1b[2J\x1b[H";
static const char hostile_job[] = "job\x1b]0;title\x07";
static const char hostile_host[] = "host\xc3";
static const char hostile_exe[] = "exe\x1b[31mred\x9b";

static void put(char *field, size_t size, const char *text) {
  snprintf(field, size, "%s", text);
}

static void fill(char *field, size_t size, char c) { memset(field, c, size); }

static cs_live_record_t *record_identity(void) {
  cs_live_record_t *r = calloc(1, sizeof *r);
  HOSTILE_CHECK(r, "no memory");
  cs_live_header_t *h = &r->header;
  h->pid = getpid();
  h->uid = getuid();
  h->signal = 0; /* no dump signal: dump --all passes it over */
  h->start_ticks = cs_live_start_ticks((long)h->pid);
  h->pid_ns = cs_live_pid_ns();
  h->rank = h->local_rank = h->world_size = -1;
  h->interval_ms = 1000;
  h->published_ms = 1;
  h->publications = 1;
  return r;
}

static void record_device(cs_live_device_t *d, int device, uint64_t bytes) {
  d->device = device;
  d->allocated_bytes = d->reserved_bytes = d->peak_allocated_bytes = bytes;
}

static void record_hostile(cs_live_record_t *r) {
  cs_live_header_t *h = &r->header;
  put(h->job_id, sizeof h->job_id, hostile_job);
  put(h->host, sizeof h->host, hostile_host);
  put(h->exe, sizeof h->exe, hostile_exe);
  h->device_count = 1;
  cs_live_device_t *d = &r->devices[0];
  record_device(d, 0, 1 << 20);
  put(d->phase, sizeof d->phase, hostile_phase);
  d->site_count = sizeof hostile_sites / sizeof *hostile_sites;
  for (uint32_t s = 0; s < d->site_count; s++) {
    d->sites[s].bytes = (uint64_t)(d->site_count - s) << 10;
    d->sites[s].blocks = 1;
    put(d->sites[s].name, sizeof d->sites[s].name, hostile_sites[s]);
  }
}

/* Every text full, no terminator; each ends in the first byte of a 2-byte sequence. */
static void record_unterminated(cs_live_record_t *r) {
  cs_live_header_t *h = &r->header;
  fill(h->job_id, sizeof h->job_id, 'j');
  fill(h->host, sizeof h->host, 'h');
  fill(h->exe, sizeof h->exe, 'e');
  h->exe[sizeof h->exe - 1] = '\xc3';
  h->device_count = 2;
  for (int k = 0; k < 2; k++) {
    cs_live_device_t *d = &r->devices[k];
    record_device(d, k, 2 << 20);
    fill(d->phase, sizeof d->phase, '\x1b');
    d->site_count = CS_LIVE_TOP_SITES;
    for (uint32_t s = 0; s < d->site_count; s++) {
      d->sites[s].bytes = 1024;
      fill(d->sites[s].name, sizeof d->sites[s].name, 'a' + (char)s);
      d->sites[s].name[sizeof d->sites[s].name - 1] = '\xc3';
    }
  }
}

static void record_big(cs_live_record_t *r) {
  cs_live_header_t *h = &r->header;
  put(h->job_id, sizeof h->job_id, "big");
  /* a host name of 250 bytes, on every series: with 256 series a process at most (the exposition's
   * cap), the size that fills the sockets' buffers comes from the labels' length */
  memset(h->host, 'h', 250);
  h->host[250] = '\0';
  put(h->exe, sizeof h->exe, "prog_hostile");
  h->device_count = CS_LIVE_MAX_DEVICES;
  for (int k = 0; k < CS_LIVE_MAX_DEVICES; k++) {
    cs_live_device_t *d = &r->devices[k];
    record_device(d, k, (uint64_t)(k + 1) << 20);
    d->site_count = CS_LIVE_TOP_SITES;
    for (uint32_t s = 0; s < d->site_count; s++) {
      d->sites[s].bytes = 1024u * (CS_LIVE_TOP_SITES - s);
      d->sites[s].blocks = 1;
      memset(d->sites[s].name, 'a' + (char)s, sizeof d->sites[s].name - 1);
      snprintf(d->sites[s].name, 32, "site_%d_%u ", k, s);
      d->sites[s].name[strlen(d->sites[s].name)] = 'x'; /* the rest stays 'a' + s, 239 bytes in all */
      d->sites[s].name[sizeof d->sites[s].name - 1] = '\0';
    }
  }
}

int main(int argc, char **argv) {
  HOSTILE_CHECK(argc >= 2, "usage: prog_hostile hostile|unterminated|big N");
  int processes = 1;
  if (strcmp(argv[1], "big") == 0) {
    HOSTILE_CHECK(argc == 3 && (processes = atoi(argv[2])) >= 1 && processes <= 64, "big takes N from 1 to 64");
  }
  /* the children first: each is a process of its own, with a record of its own */
  pid_t children[64];
  int nchildren = 0;
  for (int i = 1; i < processes; i++) {
    pid_t child = fork();
    HOSTILE_CHECK(child >= 0, "cannot fork");
    if (child == 0) {
      nchildren = 0;
      break;
    }
    children[nchildren++] = child;
  }
  cs_live_record_t *r = record_identity();
  if (strcmp(argv[1], "hostile") == 0) record_hostile(r);
  else if (strcmp(argv[1], "unterminated") == 0) record_unterminated(r);
  else if (strcmp(argv[1], "big") == 0) record_big(r);
  else HOSTILE_CHECK(0, "unknown mode %s", argv[1]);
  /* the identity and texts first, then the figures under the sequence lock, as the library does */
  cs_live_writer_t w;
  errno = cs_live_writer_open(&w, CS_LIVE_DIR, &r->header);
  HOSTILE_CHECK(errno == 0, "cannot make the record in %s", CS_LIVE_DIR);
  cs_live_writer_begin(&w);
  memcpy(w.record->devices, r->devices, sizeof r->devices);
  cs_live_writer_end(&w);
  char ready[] = "ready\n";
  HOSTILE_CHECK(write(STDOUT_FILENO, ready, sizeof ready - 1) == (ssize_t)sizeof ready - 1, "stdout");
  char buf[256];
  while (read(STDIN_FILENO, buf, sizeof buf) > 0) continue;
  cs_live_writer_close(&w, true);
  for (int i = 0; i < nchildren; i++) waitpid(children[i], NULL, 0);
  free(r);
  return 0;
}

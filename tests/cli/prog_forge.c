/* SPDX-License-Identifier: Apache-2.0 */
/* Live records as a hostile user makes them (tests/cli/live_records_test.sh): the owner of a record
 * may write anything in it, so this writes what it is told, with the format of live/live_format.h.
 *
 *   cli_prog_forge make DIR PID [KEY=VALUE...]   write DIR/NS-PID (or COUNT records, PID upwards)
 *   cli_prog_forge set FILE KEY=VALUE...         change fields of a record in place
 *
 * KEYs: uid (default: the effective uid), ns (default: this PID namespace), start (default: PID's
 * start time, 1 when it has none), signal (USR1), seq (0; odd: a publication that never ends),
 * devices (1), sites (per device, 1), bytes (allocated per device), count (1), fill=1 (every string
 * filled to its field's end, no terminator), label=KEY=VALUE (repeatable), version (the format's). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live/live_format.h"

static void forge_die(const char *what) {
  fprintf(stderr, "cli_prog_forge: %s: %s\n", what, strerror(errno));
  exit(1);
}

typedef struct forge_s {
  long uid, signal, devices, sites, count, version;
  unsigned long long ns, start, seq, bytes;
  int fill, has_uid, has_ns, has_start, has_signal, has_seq;
  const char *labels[CS_LIVE_MAX_LABELS + 4];
  int label_count;
} forge_t;

static void forge_option(forge_t *f, const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq) {
    fprintf(stderr, "cli_prog_forge: not KEY=VALUE: %s\n", kv);
    exit(2);
  }
  size_t k = (size_t)(eq - kv);
  const char *v = eq + 1;
#define FORGE_IS(name) (k == strlen(name) && strncmp(kv, name, k) == 0)
  if (FORGE_IS("uid")) f->uid = strtol(v, NULL, 10), f->has_uid = 1;
  else if (FORGE_IS("ns")) f->ns = strtoull(v, NULL, 10), f->has_ns = 1;
  else if (FORGE_IS("start")) f->start = strtoull(v, NULL, 10), f->has_start = 1;
  else if (FORGE_IS("signal")) f->signal = strtol(v, NULL, 10), f->has_signal = 1;
  else if (FORGE_IS("seq")) f->seq = strtoull(v, NULL, 10), f->has_seq = 1;
  else if (FORGE_IS("devices")) f->devices = strtol(v, NULL, 10);
  else if (FORGE_IS("sites")) f->sites = strtol(v, NULL, 10);
  else if (FORGE_IS("bytes")) f->bytes = strtoull(v, NULL, 10);
  else if (FORGE_IS("count")) f->count = strtol(v, NULL, 10);
  else if (FORGE_IS("version")) f->version = strtol(v, NULL, 10);
  else if (FORGE_IS("fill")) f->fill = atoi(v);
  else if (FORGE_IS("label") && f->label_count < (int)(sizeof f->labels / sizeof f->labels[0]))
    f->labels[f->label_count++] = v;
  else {
    fprintf(stderr, "cli_prog_forge: unknown key in %s\n", kv);
    exit(2);
  }
#undef FORGE_IS
}

/* A string field: text, or with fill the whole field of 'x' and no terminator. */
static void forge_text(char *field, size_t size, const char *text, int fill) {
  if (fill) memset(field, 'x', size);
  else snprintf(field, size, "%s", text);
}

static void forge_record(cs_live_record_t *r, const forge_t *f, long pid) {
  memset(r, 0, sizeof *r);
  cs_live_header_t *h = &r->header;
  h->magic = CS_LIVE_MAGIC;
  h->version = (uint32_t)f->version;
  h->seq = f->seq;
  h->header_size = sizeof *h;
  h->device_size = sizeof(cs_live_device_t);
  h->pid = pid;
  h->uid = (uint32_t)(f->has_uid ? f->uid : (long)geteuid());
  h->signal = (int32_t)(f->has_signal ? f->signal : SIGUSR1);
  uint64_t start = f->has_start ? f->start : cs_live_start_ticks(pid);
  h->start_ticks = start ? start : 1;
  h->pid_ns = f->has_ns ? f->ns : cs_live_pid_ns();
  h->rank = h->local_rank = h->world_size = -1;
  forge_text(h->job_id, sizeof h->job_id, "forged", f->fill);
  forge_text(h->host, sizeof h->host, "forged-host", f->fill);
  forge_text(h->exe, sizeof h->exe, "/forged/exe", f->fill);
  h->interval_ms = 1000;
  h->published_ms = 1;
  h->publications = 1;
  h->device_count = (uint32_t)f->devices;
  for (int i = 0; i < f->label_count && i < CS_LIVE_MAX_LABELS; i++) {
    const char *eq = strchr(f->labels[i], '=');
    size_t k = eq ? (size_t)(eq - f->labels[i]) : strlen(f->labels[i]);
    snprintf(h->labels[i].key, sizeof h->labels[i].key, "%.*s", (int)k, f->labels[i]);
    snprintf(h->labels[i].value, sizeof h->labels[i].value, "%s", eq ? eq + 1 : "");
    h->label_count = (uint32_t)i + 1;
  }
  if (f->fill && f->label_count == 0) {
    h->label_count = 1;
    memset(h->labels[0].key, 'k', sizeof h->labels[0].key);
    memset(h->labels[0].value, 'v', sizeof h->labels[0].value);
  }
  for (long d = 0; d < f->devices && d < CS_LIVE_MAX_DEVICES; d++) {
    cs_live_device_t *dev = &r->devices[d];
    dev->device = (int32_t)d;
    dev->site_count = (uint32_t)f->sites;
    dev->allocated_bytes = dev->reserved_bytes = dev->peak_allocated_bytes = f->bytes;
    forge_text(dev->phase, sizeof dev->phase, "", f->fill);
    for (long s = 0; s < f->sites && s < CS_LIVE_TOP_SITES; s++) {
      dev->sites[s].bytes = f->bytes;
      dev->sites[s].blocks = 1;
      char name[64];
      snprintf(name, sizeof name, "forged_site_%ld_%ld forged.c:%ld", d, s, s + 1);
      forge_text(dev->sites[s].name, sizeof dev->sites[s].name, name, f->fill);
    }
  }
}

static int forge_make(const char *dir, long first, forge_t *f) {
  cs_live_record_t *r = malloc(sizeof *r);
  if (!r) forge_die("malloc");
  for (long i = 0; i < f->count; i++) {
    long pid = first + i;
    forge_record(r, f, pid);
    char name[64], path[4096];
    cs_live_record_name(name, sizeof name, r->header.pid_ns, pid);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    if (fd < 0) forge_die(path);
    /* as big as a record, but only the header and the devices written (tmpfs keeps the rest
     * unallocated, as it does for the library's records) */
    size_t used = sizeof r->header + (size_t)f->devices * sizeof r->devices[0];
    if (used > sizeof *r) used = sizeof *r;
    if (ftruncate(fd, (off_t)sizeof *r) != 0 || pwrite(fd, r, used, 0) != (ssize_t)used) forge_die(path);
    close(fd);
  }
  free(r);
  return 0;
}

/* Fields of an existing record changed in place, as its owner may at any moment: each written
 * alone, so that a publication going on keeps the rest. */
static void forge_put(int fd, const void *value, size_t size, size_t offset) {
  if (pwrite(fd, value, size, (off_t)offset) != (ssize_t)size) forge_die("write");
}

static int forge_set(const char *file, forge_t *f) {
  int fd = open(file, O_RDWR | O_NOFOLLOW);
  if (fd < 0) forge_die(file);
  int32_t signal = (int32_t)f->signal;
  uint32_t uid = (uint32_t)f->uid;
  uint64_t seq = f->seq, start = f->start;
  if (f->has_signal) forge_put(fd, &signal, sizeof signal, offsetof(cs_live_header_t, signal));
  if (f->has_seq) forge_put(fd, &seq, sizeof seq, offsetof(cs_live_header_t, seq));
  if (f->has_uid) forge_put(fd, &uid, sizeof uid, offsetof(cs_live_header_t, uid));
  if (f->has_start) forge_put(fd, &start, sizeof start, offsetof(cs_live_header_t, start_ticks));
  close(fd);
  return 0;
}

int main(int argc, char **argv) {
  forge_t f = {.devices = 1, .sites = 1, .count = 1, .version = CS_LIVE_VERSION, .bytes = 1 << 20};
  if (argc >= 4 && strcmp(argv[1], "make") == 0) {
    for (int i = 4; i < argc; i++) forge_option(&f, argv[i]);
    return forge_make(argv[2], strtol(argv[3], NULL, 10), &f);
  }
  if (argc >= 3 && strcmp(argv[1], "set") == 0) {
    for (int i = 3; i < argc; i++) forge_option(&f, argv[i]);
    return forge_set(argv[2], &f);
  }
  fprintf(stderr, "usage: cli_prog_forge make DIR PID [KEY=VALUE...] | set FILE KEY=VALUE...\n");
  return 2;
}

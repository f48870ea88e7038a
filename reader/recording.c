/* SPDX-License-Identifier: Apache-2.0 */
#include "reader/recording.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memviz/passthrough.h"
#include "record/recfile.h"

static int cs_rec_fail(char *why, size_t why_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cs_rec_fail(char *why, size_t why_len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
  return -1;
}

/* [offset, offset + bytes) lies in the file, without overflow. */
static bool cs_rec_within(const cs_recording_t *rec, uint64_t offset, uint64_t bytes) {
  return offset <= rec->len && bytes <= rec->len - offset;
}

/* ---- the clock ---- */

typedef struct cs_rec_clock_s {
  uint64_t origin_ticks, origin_epoch_us;
  double ns_per_tick;
} cs_rec_clock_t;

static cs_rec_clock_t cs_rec_clock(const cs_recfile_header_t *h) {
  cs_rec_clock_t c = {.origin_ticks = h->origin_ticks, .origin_epoch_us = h->origin_epoch_us, .ns_per_tick = 1.0};
  if (h->tick_source != CS_RECFILE_TICKS_TSC) return c;
  const uint32_t slot = h->calib_slot & 1u;
  const uint64_t ticks = h->calib_ticks[slot], ns = h->calib_monotonic_ns[slot];
  if (ticks > h->origin_ticks && ns > h->origin_monotonic_ns)
    c.ns_per_tick = (double)(ns - h->origin_monotonic_ns) / (double)(ticks - h->origin_ticks);
  return c;
}

/* An entry's time as the library keeps it (record/ring_entry.h: ring ticks, or microseconds since
 * the origin once a snapshot converted it) -> microseconds since the epoch. */
static uint64_t cs_rec_epoch_us(const cs_rec_clock_t *c, uint64_t when) {
  const uint64_t t = (when >> CS_RING_TIME_SHIFT) & CS_RING_TIME_MASK;
  if (when & CS_RING_TIME_CONVERTED) return c->origin_epoch_us + t;
  const double us = (double)(t << CS_RING_TICK_SHIFT) * c->ns_per_tick / 1000.0;
  return c->origin_epoch_us + (us < 1e18 ? (uint64_t)us : 0); /* a damaged rate: no overflow */
}

/* ---- rings ---- */

static bool cs_rec_entry_whole(const cs_ring_entry_t *e, uint64_t k) {
  return e->stream >> CS_RECFILE_TAG_SHIFT == cs_recfile_tag(k);
}

static int cs_rec_ring(cs_recording_t *rec, const cs_recfile_header_t *h, const cs_rec_clock_t *clock, uint32_t i,
                       char *why, size_t why_len) {
  const uint64_t offset = h->rings_offset + (uint64_t)i * h->ring_bytes;
  if (!cs_rec_within(rec, offset, h->ring_bytes))
    return cs_rec_fail(why, why_len, "ring %u of %u lies past the end of the file (cut short?)", i + 1, h->ring_count);
  const cs_recfile_ring_t *section = (const cs_recfile_ring_t *)(const void *)(rec->data + offset);
  if (section->magic != CS_RECFILE_RING_MAGIC || section->capacity != h->max_entries)
    return cs_rec_fail(why, why_len, "ring %u is not a ring section (bad magic or capacity)", i + 1);
  const cs_ring_entry_t *slots = (const cs_ring_entry_t *)(const void *)(rec->data + offset + CS_RECFILE_PAGE);
  const uint64_t cap = section->capacity;
  uint64_t published = section->published;
  cs_rec_ring_t *r = &rec->rings[i];
  r->device = section->device;
  r->passthrough = rec->version >= 2 && section->device == CS_RECFILE_RING_PASSTHROUGH;
  r->capacity = cap;
  r->published = published;
  if (cap == 0) return 0;
  /* the entry after the last published: whole but not yet counted, being written (tag 0), or an
   * older one. A tag cannot tell the new entry from one `cap` pushes older when cap is a multiple
   * of the tag's period: then it is left out. */
  const cs_ring_entry_t *next = &slots[published % cap];
  const bool period_ok = cap % (CS_RECFILE_TAG_SEQ + 1) != 0;
  if (period_ok && cs_rec_entry_whole(next, published + 1)) {
    published++;
  } else if ((next->stream >> CS_RECFILE_TAG_SHIFT) == 0 &&
             (published >= cap || next->addr || next->size || next->when || next->stack_id)) {
    r->lost_at_end = 1;
    if (published >= cap) r->dropped++; /* the oldest entry's slot was being reused */
  }
  const uint64_t n = published < cap ? published : cap;
  r->dropped += published - n;
  r->entries = calloc(n ? n : 1, sizeof *r->entries);
  if (r->passthrough) r->kinds = calloc(n ? n : 1, sizeof *r->kinds);
  if (!r->entries || (r->passthrough && !r->kinds))
    return cs_rec_fail(why, why_len, "out of host memory for %llu entries", (unsigned long long)n);
  uint64_t last_us = 0; /* times never go back along a ring (record/ring.h, cs_ring_convert_next) */
  for (uint64_t j = 0; j < n; j++) { /* by count: a damaged `published` near 2^64 cannot loop */
    const uint64_t k = published - n + 1 + j;
    const cs_ring_entry_t *e = &slots[(k - 1) % cap];
    if (r->lost_at_end && k == published - n + 1 && published >= cap && (k - 1) % cap == published % cap) continue;
    /* a pass-through entry names a kind that is drawn; the cache's have none */
    const int kind = cs_recfile_stack_kind(e->stack_id);
    if (!cs_rec_entry_whole(e, k) || (r->passthrough && (kind < 0 || kind >= CS_PASSTHROUGH_DRAWN_KINDS))) {
      r->damaged++;
      continue;
    }
    cs_ring_entry_t out = *e;
    if (r->passthrough) {
      r->kinds[r->count] = (int8_t)kind;
      out.stack_id = e->stack_id & CS_RECFILE_STACK_MASK;
    }
    out.stream = e->stream & CS_RECFILE_STREAM_MASK;
    uint64_t us = cs_rec_epoch_us(clock, e->when);
    if (us < last_us) us = last_us;
    last_us = us;
    out.when = us << CS_RING_TIME_SHIFT | (e->when & ((1u << CS_RING_TIME_SHIFT) - 1));
    r->entries[r->count++] = out;
  }
  return 0;
}

/* ---- stacks and modules ---- */

static int cs_rec_stacks(cs_recording_t *rec, const cs_recfile_header_t *h, char *why, size_t why_len) {
  const uint32_t count = h->stack_count;
  uint64_t bytes = h->stack_bytes;
  if (bytes > h->stacks_capacity) return cs_rec_fail(why, why_len, "the stack log claims more bytes than it has");
  if (!cs_rec_within(rec, h->stacks_offset, bytes)) return cs_rec_fail(why, why_len, "the stack log lies past the end of the file (cut short?)");
  if (count > bytes / sizeof(cs_recfile_stack_t)) return cs_rec_fail(why, why_len, "the stack log's count exceeds its bytes");
  rec->stacks = calloc(count ? count : 1, sizeof *rec->stacks);
  if (!rec->stacks) return cs_rec_fail(why, why_len, "out of host memory for %u stacks", count);
  rec->stack_count = count;
  const unsigned char *log = rec->data + h->stacks_offset;
  uint64_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    cs_recfile_stack_t s;
    if (bytes - at < sizeof s) return cs_rec_fail(why, why_len, "stack record %u is cut short", i + 1);
    memcpy(&s, log + at, sizeof s);
    if (s.n == 0 || s.n > CS_RECFILE_MAX_DEPTH || (bytes - at - sizeof s) / sizeof(uint64_t) < s.n)
      return cs_rec_fail(why, why_len, "stack record %u has a bad length (%u PCs)", i + 1, s.n);
    if (s.id == 0 || s.id > count || rec->stacks[s.id - 1].n != 0)
      return cs_rec_fail(why, why_len, "stack record %u has a bad id (%u)", i + 1, s.id);
    rec->stacks[s.id - 1] = (cs_rec_stack_t){.n = s.n, .pcs = (const uint64_t *)(const void *)(log + at + sizeof s)};
    at += sizeof s + (uint64_t)s.n * sizeof(uint64_t);
  }
  return 0;
}

static int cs_rec_modules(cs_recording_t *rec, const cs_recfile_header_t *h, char *why, size_t why_len) {
  const uint32_t count = h->module_count;
  if (count > CS_RECFILE_MODULES) return cs_rec_fail(why, why_len, "the module map claims %u modules (at most %d)", count, CS_RECFILE_MODULES);
  if (!cs_rec_within(rec, h->modules_offset, (uint64_t)count * sizeof(cs_recfile_module_t)))
    return cs_rec_fail(why, why_len, "the module map lies past the end of the file (cut short?)");
  rec->modules = calloc(count ? count : 1, sizeof *rec->modules);
  if (!rec->modules) return cs_rec_fail(why, why_len, "out of host memory for %u modules", count);
  const cs_recfile_module_t *mods = (const cs_recfile_module_t *)(const void *)(rec->data + h->modules_offset);
  for (uint32_t i = 0; i < count; i++) {
    const cs_recfile_module_t *m = &mods[i];
    if (!memchr(m->path, '\0', sizeof m->path) || m->path[0] != '/' || m->lo >= m->hi ||
        m->build_id_len > CS_RECFILE_BUILD_ID)
      return cs_rec_fail(why, why_len, "module record %u is damaged", i + 1);
    rec->modules[rec->module_count++] = (cs_rec_module_t){.lo = m->lo, .hi = m->hi, .bias = m->bias, .path = m->path,
                                                          .build_id = m->build_id, .build_id_len = m->build_id_len};
  }
  return 0;
}

/* ---- the whole ---- */

static int cs_rec_header(cs_recording_t *rec, char *why, size_t why_len) {
  if (rec->len < sizeof(cs_recfile_header_t) || memcmp(rec->data, CS_RECFILE_MAGIC, 8) != 0)
    return cs_rec_fail(why, why_len, "not a cudasnap recording (no %s header)", CS_RECFILE_MAGIC);
  cs_recfile_header_t *h = (cs_recfile_header_t *)(void *)rec->data;
  /* version 1 is version 2 without the pass-through ring: read as it is (recover says what it lacks) */
  if (h->version < 1 || h->version > CS_RECFILE_VERSION)
    return cs_rec_fail(why, why_len, "recording format version %u; this cudasnap reads versions 1 to %d%s", h->version,
                       CS_RECFILE_VERSION, h->version > CS_RECFILE_VERSION ? " (made by a newer cudasnap)" : "");
  rec->version = h->version;
  const uint64_t page = CS_RECFILE_PAGE;
  if (h->header_bytes != page || h->modules_offset % page || h->stacks_offset % page || h->rings_offset % page ||
      h->ring_bytes % page || h->modules_offset < page || h->stacks_offset < h->modules_offset ||
      h->rings_offset < h->stacks_offset || h->stacks_capacity > h->rings_offset - h->stacks_offset ||
      h->ring_max > CS_RECFILE_MAX_RINGS || h->ring_count > h->ring_max ||
      h->max_entries > ((uint64_t)1 << 40) / CS_RECFILE_MAX_RINGS ||
      h->ring_bytes < page + h->max_entries * sizeof(cs_ring_entry_t) || h->rings_offset > ((uint64_t)1 << 50))
    return cs_rec_fail(why, why_len, "the header's layout is damaged");
  h->exe[sizeof h->exe - 1] = '\0';
  h->argv[sizeof h->argv - 1] = '\0';
  rec->pid = (long)h->pid;
  rec->exe = h->exe;
  rec->max_entries = h->max_entries;
  rec->tsc = h->tick_source == CS_RECFILE_TICKS_TSC;
  size_t argc = 0;
  for (size_t at = 0; argc < h->argc && argc < 63 && at < sizeof h->argv && h->argv[at]; at += strlen(h->argv + at) + 1)
    rec->argv[argc++] = h->argv + at;
  rec->argv[argc] = NULL;
  /* any values are safe to size blocks by (the rounding takes any divisions) */
  cs_alloc_conf_init(&rec->conf);
  rec->conf_known = (h->conf_flags & CS_RECFILE_CONF_KNOWN) != 0;
  if (rec->conf_known) {
    rec->conf.split_large = (h->conf_flags & CS_RECFILE_CONF_SPLIT_LARGE) != 0;
    rec->conf.ipc_small = (h->conf_flags & CS_RECFILE_CONF_IPC_SMALL) != 0;
    rec->conf.max_split_size = h->conf_max_split_size > SIZE_MAX ? SIZE_MAX : (size_t)h->conf_max_split_size;
    memcpy(rec->conf.roundup_power2_divisions, h->conf_roundup, sizeof rec->conf.roundup_power2_divisions);
  }
  return 0;
}

int cs_recording_parse(unsigned char *data, size_t len, cs_recording_t *rec, char *why, size_t why_len) {
  memset(rec, 0, sizeof *rec);
  rec->data = data;
  rec->len = len;
  if (cs_rec_header(rec, why, why_len) != 0) goto fail;
  const cs_recfile_header_t *h = (const cs_recfile_header_t *)(const void *)rec->data;
  if (cs_rec_modules(rec, h, why, why_len) != 0 || cs_rec_stacks(rec, h, why, why_len) != 0) goto fail;
  rec->rings = calloc(h->ring_count ? h->ring_count : 1, sizeof *rec->rings);
  if (!rec->rings) {
    cs_rec_fail(why, why_len, "out of host memory");
    goto fail;
  }
  rec->ring_count = h->ring_count;
  const cs_rec_clock_t clock = cs_rec_clock(h);
  for (uint32_t i = 0; i < h->ring_count; i++)
    if (cs_rec_ring(rec, h, &clock, i, why, why_len) != 0) goto fail;
  return 0;
fail:
  cs_recording_free(rec);
  return -1;
}

int cs_recording_read(const char *path, cs_recording_t *rec, char *why, size_t why_len) {
  memset(rec, 0, sizeof *rec);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    return cs_rec_fail(why, why_len, "%s", strerror(err));
  }
  size_t len = (size_t)st.st_size;
  unsigned char *data = malloc(len ? len : 1);
  size_t got = 0;
  while (data && got < len) {
    ssize_t n = read(fd, data + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  int err = errno;
  close(fd);
  if (!data) return cs_rec_fail(why, why_len, "out of host memory for %zu bytes", len);
  if (got < len) {
    free(data);
    return cs_rec_fail(why, why_len, "cannot read: %s", got ? "the file shrank" : strerror(err));
  }
  return cs_recording_parse(data, len, rec, why, why_len);
}

void cs_recording_free(cs_recording_t *rec) {
  for (size_t i = 0; rec->rings && i < rec->ring_count; i++) {
    free(rec->rings[i].entries);
    free(rec->rings[i].kinds);
  }
  free(rec->rings);
  free(rec->stacks);
  free(rec->modules);
  free(rec->data);
  memset(rec, 0, sizeof *rec);
}

const uint64_t *cs_recording_stack(const cs_recording_t *rec, uint32_t id, size_t *n) {
  *n = 0;
  if (id == 0 || id > rec->stack_count || rec->stacks[id - 1].n == 0) return NULL;
  *n = rec->stacks[id - 1].n;
  return rec->stacks[id - 1].pcs;
}

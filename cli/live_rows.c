/* SPDX-License-Identifier: Apache-2.0 */
/* Rows of the live view (contract in cli/live_rows.h). */
#include "cli/live_rows.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/live_dir.h"
#include "cli/live_site.h"
#include "common/cs_format.h"
#include "common/cs_text.h"

static const char *const cs_live_sort_names[CS_LIVE_SORTS] = {"ALLOCATED", "RESERVED", "PEAK",
                                                              "DRIVER USED", "PID", "RANK"};

const char *cs_live_sort_name(cs_live_sort_t sort) {
  return sort < CS_LIVE_SORTS ? cs_live_sort_names[sort] : "?";
}

/* A record's text field made safe in place (common/cs_text.h): it came from another program, of
 * another user when root reads, and may hold anything, a terminator or not. */
static void cs_live_clean_field(char *field, size_t size) {
  char safe[CS_LIVE_TEXT_LEN];
  if (size > sizeof safe) size = sizeof safe; /* no field is bigger */
  cs_text_safe(safe, size, field, size);
  memcpy(field, safe, size);
}

/* Every text a list holds made safe once, here, so that the table, the sites view, the JSON and the
 * exposition all show the same valid UTF-8 without a control character. */
static void cs_live_clean(cs_live_list_t *list) {
  for (size_t i = 0; i < list->count; i++) {
    cs_live_header_t *h = &list->items[i].header;
    cs_live_clean_field(h->job_id, sizeof h->job_id);
    cs_live_clean_field(h->host, sizeof h->host);
    cs_live_clean_field(h->exe, sizeof h->exe);
    if (h->label_count > CS_LIVE_MAX_LABELS) h->label_count = CS_LIVE_MAX_LABELS;
    for (uint32_t k = 0; k < h->label_count; k++) cs_live_clean_field(h->labels[k].value, sizeof h->labels[k].value);
    for (size_t k = 0; k < h->device_count; k++) {
      cs_live_device_t *d = &list->items[i].devices[k];
      cs_live_clean_field(d->phase, sizeof d->phase);
      if (d->site_count > CS_LIVE_TOP_SITES) d->site_count = CS_LIVE_TOP_SITES;
      for (uint32_t s = 0; s < d->site_count; s++) cs_live_clean_field(d->sites[s].name, sizeof d->sites[s].name);
    }
  }
}

int cs_live_rows_list(long pid, cs_live_list_t *list) {
  cs_live_filter_t f = {.all_users = getuid() == 0, .uid = getuid(), .pid = pid, .job_id = NULL};
  int err = cs_live_list(cs_live_dir(), &f, list);
  if (!err) cs_live_clean(list);
  return err;
}

static uint64_t cs_live_key(const cs_live_row_t *r, cs_live_sort_t sort) {
  switch (sort) {
  case CS_LIVE_SORT_RESERVED: return r->device->reserved_bytes;
  case CS_LIVE_SORT_PEAK: return r->device->peak_allocated_bytes;
  case CS_LIVE_SORT_DRIVER: return r->device->driver_known ? r->device->driver_used_bytes : 0;
  default: return r->device->allocated_bytes;
  }
}

static cs_live_sort_t cs_live_sort_by;

static int cs_live_row_cmp(const void *x, const void *y) {
  const cs_live_row_t *a = x, *b = y;
  if (cs_live_sort_by == CS_LIVE_SORT_PID || cs_live_sort_by == CS_LIVE_SORT_RANK) {
    int64_t ka = cs_live_sort_by == CS_LIVE_SORT_PID ? a->process->pid : a->process->rank;
    int64_t kb = cs_live_sort_by == CS_LIVE_SORT_PID ? b->process->pid : b->process->rank;
    if (ka != kb) return ka < kb ? -1 : 1;
  } else {
    uint64_t ka = cs_live_key(a, cs_live_sort_by), kb = cs_live_key(b, cs_live_sort_by);
    if (ka != kb) return ka > kb ? -1 : 1;
  }
  if (a->process->pid != b->process->pid) return a->process->pid < b->process->pid ? -1 : 1;
  return (a->device->device > b->device->device) - (a->device->device < b->device->device);
}

int cs_live_rows(const cs_live_list_t *list, cs_live_sort_t sort, cs_live_row_t **rows, size_t *count) {
  size_t n = 0;
  for (size_t i = 0; i < list->count; i++) n += list->items[i].header.device_count;
  cs_live_row_t *r = malloc((n ? n : 1) * sizeof *r);
  if (!r) return -1;
  n = 0;
  for (size_t i = 0; i < list->count; i++)
    for (size_t d = 0; d < list->items[i].header.device_count; d++)
      r[n++] = (cs_live_row_t){.process = &list->items[i].header, .device = &list->items[i].devices[d]};
  cs_live_sort_by = sort;
  qsort(r, n, sizeof *r, cs_live_row_cmp);
  *rows = r;
  *count = n;
  return 0;
}

/* Compact sizes for the columns: "1.5G", "512M", "40K", "0". */
static void cs_live_size(uint64_t bytes, char *buf, size_t len) {
  static const char units[] = "BKMGTP";
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    u++;
  }
  if (u == 0) snprintf(buf, len, "%llu", (unsigned long long)bytes);
  else if (v < 10.0) snprintf(buf, len, "%.1f%c", v, units[u]);
  else snprintf(buf, len, "%.0f%c", v, units[u]);
}

/* The driver's used bytes with the age of its answer, which can be minutes where the cache has not
 * grown since: "4.0M 31s", "9.5G 12m", "106M 3h", "1.0G 2d". */
static void cs_live_driver(const cs_live_device_t *d, uint64_t now_us, char *buf, size_t len) {
  if (!d->driver_known) {
    snprintf(buf, len, "-");
    return;
  }
  char size[16];
  cs_live_size(d->driver_used_bytes, size, sizeof size);
  uint64_t age = now_us > d->driver_time_us ? (now_us - d->driver_time_us) / 1000000u : 0;
  char unit = 's';
  if (age >= 86400) age /= 86400, unit = 'd';
  else if (age >= 3600) age /= 3600, unit = 'h';
  else if (age >= 60) age /= 60, unit = 'm';
  snprintf(buf, len, "%s %llu%c", size, (unsigned long long)(age > 99 ? 99 : age), unit);
}

static uint64_t cs_live_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void cs_live_rank(int64_t rank, char *buf, size_t len) {
  if (rank < 0) snprintf(buf, len, "-");
  else snprintf(buf, len, "%lld", (long long)rank);
}

/* Print line cut to width columns (the text is ASCII apart from site names; a cut inside a UTF-8
 * sequence is avoided by cutting at a lead byte). */
static void cs_live_line(FILE *out, const char *line, int width) {
  size_t len = strlen(line);
  if (len > (size_t)width) {
    len = (size_t)width;
    while (len > 0 && ((unsigned char)line[len] & 0xC0) == 0x80) len--;
  }
  fprintf(out, "%.*s\n", (int)len, line);
}

/* text in a column of width characters: cut after the last whole character that fits, padded
 * with spaces (printf's %-7.7s counts bytes, and would cut a UTF-8 sequence). */
static void cs_live_cell(const char *text, size_t width, char *buf, size_t len) {
  size_t bytes = 0, chars = 0;
  while (text[bytes] && chars < width) {
    size_t next = bytes + 1;
    while (((unsigned char)text[next] & 0xC0) == 0x80) next++;
    if (next >= len) break;
    bytes = next;
    chars++;
  }
  memcpy(buf, text, bytes);
  while (chars++ < width && bytes < len - 1) buf[bytes++] = ' ';
  buf[bytes] = '\0';
}

/* Fixed columns: 69 characters (sizes take at most 5: "1023M", "9.5G"); TOP SITE takes what the
 * width leaves, the site fitted to it (cli/live_site.h). Where that is less than
 * CS_LIVE_SITE_COLUMN (11 in 80 columns: not even "main train.c:48"), the site goes on a line of
 * its own under its row, indented to the RANK column. */
enum { CS_LIVE_FIXED_COLUMNS = 69, CS_LIVE_SITE_COLUMN = 24, CS_LIVE_SITE_INDENT = 9 };

int cs_live_table_row_lines(int width) { return width - CS_LIVE_FIXED_COLUMNS < CS_LIVE_SITE_COLUMN ? 2 : 1; }

void cs_live_print_table(FILE *out, const cs_live_row_t *rows, size_t count, int width, size_t selected) {
  char line[1024], site[CS_LIVE_SITE_LEN + 1], fitted[sizeof site];
  const bool own_line = cs_live_table_row_lines(width) == 2;
  snprintf(line, sizeof line, " %7s %4s %3s %9s %8s %6s %11s %-7s %4s %s", "PID", "RANK", "DEV", "ALLOCATED",
           "RESERVED", "PEAK", "DRIVER USED", "PHASE", "OOMS", "TOP SITE");
  cs_live_line(out, line, width);
  const uint64_t now_us = cs_live_now_us();
  for (size_t i = 0; i < count; i++) {
    const cs_live_row_t *r = &rows[i];
    char rank[24], alloc[16], reserved[16], peak[16], driver[32];
    cs_live_rank(r->process->rank, rank, sizeof rank);
    cs_live_size(r->device->allocated_bytes, alloc, sizeof alloc);
    cs_live_size(r->device->reserved_bytes, reserved, sizeof reserved);
    cs_live_size(r->device->peak_allocated_bytes, peak, sizeof peak);
    cs_live_driver(r->device, now_us, driver, sizeof driver);
    if (r->device->site_count)
      snprintf(site, sizeof site, "%.*s", (int)sizeof r->device->sites[0].name, r->device->sites[0].name);
    else
      snprintf(site, sizeof site, "-");
    int room = own_line ? width - CS_LIVE_SITE_INDENT : width - CS_LIVE_FIXED_COLUMNS;
    cs_live_site_fit(site, room > 0 ? (size_t)room : 0, fitted, sizeof fitted);
    char phase[32];
    cs_live_cell(r->device->phase[0] ? r->device->phase : "-", 7, phase, sizeof phase);
    snprintf(line, sizeof line, "%c%7lld %4s %3d %9s %8s %6s %11s %s %4llu%s%s", i == selected ? '>' : ' ',
             (long long)r->process->pid, rank, r->device->device, alloc, reserved, peak, driver, phase,
             (unsigned long long)r->device->ooms, own_line ? "" : " ", own_line ? "" : fitted);
    cs_live_line(out, line, width);
    if (own_line) {
      snprintf(line, sizeof line, "%*s%s", CS_LIVE_SITE_INDENT, "", fitted);
      cs_live_line(out, line, width);
    }
  }
}

void cs_live_print_sites(FILE *out, const cs_live_row_t *row, int width) {
  char line[1024], rank[24], alloc[32];
  cs_live_rank(row->process->rank, rank, sizeof rank);
  cs_format_size(row->device->allocated_bytes, alloc, sizeof alloc);
  snprintf(line, sizeof line, "pid %lld (%s) rank %s device %d: %s allocated, %u site%s%s",
           (long long)row->process->pid, row->process->exe, rank, row->device->device, alloc,
           row->device->site_count, cs_plural(row->device->site_count), row->device->stale ? " (old figures)" : "");
  cs_live_line(out, line, width);
  snprintf(line, sizeof line, "  %10s %8s  %s", "BYTES", "BLOCKS", "SITE");
  cs_live_line(out, line, width);
  for (uint32_t i = 0; i < row->device->site_count && i < CS_LIVE_TOP_SITES; i++) {
    const cs_live_site_t *s = &row->device->sites[i];
    char bytes[16], name[CS_LIVE_SITE_LEN + 1], fitted[sizeof name];
    cs_live_size(s->bytes, bytes, sizeof bytes);
    snprintf(name, sizeof name, "%.*s", (int)sizeof s->name, s->name);
    int room = width - 22; /* after "  %10s %8llu  " */
    cs_live_site_fit(name, room > 0 ? (size_t)room : 0, fitted, sizeof fitted);
    snprintf(line, sizeof line, "  %10s %8llu  %s", bytes, (unsigned long long)s->blocks, fitted);
    cs_live_line(out, line, width);
  }
}

/* A byte count as a JSON number: exact up to 2^53, which any memory size is. */
static cJSON *cs_live_json_u64(uint64_t v) { return cJSON_CreateNumber((double)v); }

int cs_live_print_json(FILE *out, const cs_live_row_t *rows, size_t count) {
  cJSON *root = cJSON_CreateObject();
  cJSON *procs = root ? cJSON_AddArrayToObject(root, "processes") : NULL;
  bool ok = procs != NULL;
  for (size_t i = 0; ok && i < count; i++) {
    const cs_live_row_t *r = &rows[i];
    cJSON *p = cJSON_CreateObject();
    ok = p && cJSON_AddItemToArray(procs, p);
    if (!ok) break;
    cJSON_AddItemToObject(p, "pid", cs_live_json_u64((uint64_t)r->process->pid));
    cJSON_AddItemToObject(p, "rank", r->process->rank >= 0 ? cJSON_CreateNumber((double)r->process->rank) : cJSON_CreateNull());
    cJSON_AddItemToObject(p, "local_rank",
                          r->process->local_rank >= 0 ? cJSON_CreateNumber((double)r->process->local_rank) : cJSON_CreateNull());
    cJSON_AddStringToObject(p, "host", r->process->host);
    cJSON *labels = cJSON_AddObjectToObject(p, "labels");
    for (uint32_t k = 0; labels && k < r->process->label_count; k++)
      if (cs_live_label_shown(r->process, k))
        cJSON_AddStringToObject(labels, r->process->labels[k].key, r->process->labels[k].value);
    cJSON_AddNumberToObject(p, "device", r->device->device);
    cJSON_AddItemToObject(p, "allocated_bytes", cs_live_json_u64(r->device->allocated_bytes));
    cJSON_AddItemToObject(p, "reserved_bytes", cs_live_json_u64(r->device->reserved_bytes));
    cJSON_AddItemToObject(p, "peak_allocated_bytes", cs_live_json_u64(r->device->peak_allocated_bytes));
    cJSON_AddItemToObject(p, "driver_used_bytes",
                          r->device->driver_known ? cs_live_json_u64(r->device->driver_used_bytes) : cJSON_CreateNull());
    cJSON_AddItemToObject(p, "driver_used_timestamp_seconds",
                          r->device->driver_known ? cJSON_CreateNumber((double)r->device->driver_time_us / 1e6)
                                                  : cJSON_CreateNull());
    cJSON_AddItemToObject(p, "phase", r->device->phase[0] ? cJSON_CreateString(r->device->phase) : cJSON_CreateNull());
    cJSON_AddItemToObject(p, "ooms", cs_live_json_u64(r->device->ooms));
    cJSON *sites = cJSON_AddArrayToObject(p, "top_sites");
    for (uint32_t k = 0; sites && k < r->device->site_count && k < CS_LIVE_TOP_SITES; k++) {
      cJSON *s = cJSON_CreateObject();
      if (!s || !cJSON_AddItemToArray(sites, s)) {
        ok = false;
        break;
      }
      char name[CS_LIVE_SITE_LEN + 1];
      snprintf(name, sizeof name, "%.*s", (int)sizeof r->device->sites[k].name, r->device->sites[k].name);
      cJSON_AddStringToObject(s, "site", name);
      cJSON_AddItemToObject(s, "bytes", cs_live_json_u64(r->device->sites[k].bytes));
      cJSON_AddItemToObject(s, "blocks", cs_live_json_u64(r->device->sites[k].blocks));
    }
  }
  char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  if (!text) return -1;
  fprintf(out, "%s\n", text);
  free(text);
  return 0;
}

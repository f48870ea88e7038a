/* SPDX-License-Identifier: Apache-2.0 */
/* The exposition of the live records (contract in cli/metrics_text.h). */
#include "cli/metrics_text.h"

#include <inttypes.h>
#include <string.h>

#include "cli/live_dir.h"

/* A label value as the text format wants it: backslash, double quote and newline escaped. */
static void cs_metrics_value(FILE *out, const char *s, size_t max) {
  for (size_t i = 0; i < max && s[i]; i++) {
    char c = s[i];
    if (c == '\\') fputs("\\\\", out);
    else if (c == '"') fputs("\\\"", out);
    else if (c == '\n') fputs("\\n", out);
    else fputc(c, out);
  }
}

static void cs_metrics_int_or_empty(FILE *out, int64_t v) {
  if (v >= 0) fprintf(out, "%" PRId64, v);
}

/* {pid="..",rank="..",local_rank="..",job="..",host=".." : the process's labels, every sample's,
 * without the closing quote and brace. */
static void cs_metrics_process_labels(FILE *out, const cs_live_header_t *h) {
  fprintf(out, "{pid=\"%" PRId64 "\",rank=\"", h->pid);
  cs_metrics_int_or_empty(out, h->rank);
  fputs("\",local_rank=\"", out);
  cs_metrics_int_or_empty(out, h->local_rank);
  fputs("\",job=\"", out);
  cs_metrics_value(out, h->job_id, sizeof h->job_id);
  fputs("\",host=\"", out);
  cs_metrics_value(out, h->host, sizeof h->host);
  for (uint32_t i = 0; i < h->label_count; i++) {
    if (!cs_live_label_shown(h, i)) continue; /* a key its owner made up that would break the exposition */
    fprintf(out, "\",%s=\"", h->labels[i].key);
    cs_metrics_value(out, h->labels[i].value, sizeof h->labels[i].value);
  }
}

/* {pid="..",rank="..",local_rank="..",job="..",host="..",device=".."} without the closing brace. */
static void cs_metrics_labels(FILE *out, const cs_live_header_t *h, const cs_live_device_t *d) {
  cs_metrics_process_labels(out, h);
  fprintf(out, "\",device=\"%d\"", d->device);
}

/* The gauges of a device: 6, or 4 before the driver was asked (no driver samples). */
static uint32_t cs_metrics_gauges(const cs_live_device_t *d) { return d->driver_known ? 6 : 4; }

static uint32_t cs_metrics_site_count(const cs_live_device_t *d) {
  return d->site_count < CS_LIVE_TOP_SITES ? d->site_count : CS_LIVE_TOP_SITES;
}

/* The cap on a process's series: its info sample, then every device's gauges while they fit,
 * then sites, device by device, while room is left. How many devices get samples; *left: the room
 * for sites. */
static uint32_t cs_metrics_devices_shown(const cs_live_entry_t *e, uint32_t *left) {
  uint32_t room = CS_METRICS_SERIES_PER_PROCESS - 1, k = 0;
  for (; k < e->header.device_count && cs_metrics_gauges(&e->devices[k]) <= room; k++)
    room -= cs_metrics_gauges(&e->devices[k]);
  if (left) *left = room;
  return k;
}

/* How many sites of device k get a sample. */
static uint32_t cs_metrics_sites_shown(const cs_live_entry_t *e, size_t k) {
  uint32_t left;
  cs_metrics_devices_shown(e, &left);
  for (size_t i = 0; i <= k; i++) {
    uint32_t n = cs_metrics_site_count(&e->devices[i]);
    if (n > left) n = left;
    if (i == k) return n;
    left -= n;
  }
  return 0;
}

/* The series a process would have without the cap. */
static size_t cs_metrics_series_wanted(const cs_live_entry_t *e) {
  size_t n = 1;
  for (size_t k = 0; k < e->header.device_count; k++)
    n += cs_metrics_gauges(&e->devices[k]) + cs_metrics_site_count(&e->devices[k]);
  return n;
}

typedef enum {
  CS_METRIC_ALLOCATED,
  CS_METRIC_RESERVED,
  CS_METRIC_PEAK,
  CS_METRIC_DRIVER,
  CS_METRIC_DRIVER_TIME,
  CS_METRIC_OOMS
} cs_metric_t;

static const struct {
  const char *name, *type, *help;
} cs_metrics[] = {
    {"cudasnap_allocated_bytes", "gauge", "Bytes of device memory the program holds (torch allocated_bytes.all.current)."},
    {"cudasnap_reserved_bytes", "gauge", "Bytes of device memory cudasnap's cache holds (torch reserved_bytes.all.current)."},
    {"cudasnap_peak_allocated_bytes", "gauge", "The most bytes held at once so far (torch allocated_bytes.all.peak)."},
    {"cudasnap_driver_used_bytes", "gauge", "Device memory in use by every process as the driver last answered (total - free)."},
    {"cudasnap_driver_used_timestamp_seconds", "gauge", "When the driver gave that answer (Unix time): it is asked where the cache grows."},
    {"cudasnap_ooms_total", "counter", "Out-of-memory errors returned to the program."},
};

static void cs_metrics_family(FILE *out, const cs_live_list_t *list, cs_metric_t m) {
  fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", cs_metrics[m].name, cs_metrics[m].help, cs_metrics[m].name,
          cs_metrics[m].type);
  for (size_t i = 0; i < list->count; i++) {
    const cs_live_entry_t *e = &list->items[i];
    for (size_t k = 0; k < cs_metrics_devices_shown(e, NULL); k++) {
      const cs_live_device_t *d = &e->devices[k];
      uint64_t v = 0;
      switch (m) {
      case CS_METRIC_ALLOCATED: v = d->allocated_bytes; break;
      case CS_METRIC_RESERVED: v = d->reserved_bytes; break;
      case CS_METRIC_PEAK: v = d->peak_allocated_bytes; break;
      case CS_METRIC_DRIVER:
      case CS_METRIC_DRIVER_TIME:
        if (!d->driver_known) continue; /* never asked: no sample rather than a false 0 */
        v = m == CS_METRIC_DRIVER ? d->driver_used_bytes : d->driver_time_us;
        break;
      case CS_METRIC_OOMS: v = d->ooms; break;
      }
      fputs(cs_metrics[m].name, out);
      cs_metrics_labels(out, &e->header, d);
      if (m == CS_METRIC_DRIVER_TIME) fprintf(out, "} %" PRIu64 ".%06" PRIu64 "\n", v / 1000000u, v % 1000000u);
      else fprintf(out, "} %" PRIu64 "\n", v);
    }
  }
}

void cs_metrics_write(FILE *out, const cs_live_list_t *list) {
  char note[512];
  cs_live_passed_over(list, note, sizeof note);
  if (note[0]) fprintf(out, "# cudasnap: %s\n", note);
  for (size_t i = 0; i < list->count; i++) {
    size_t wanted = cs_metrics_series_wanted(&list->items[i]);
    if (wanted > CS_METRICS_SERIES_PER_PROCESS)
      fprintf(out, "# cudasnap: process %" PRId64 ": %zu of its %zu series left out (at most %d per process)\n",
              list->items[i].header.pid, wanted - CS_METRICS_SERIES_PER_PROCESS, wanted,
              CS_METRICS_SERIES_PER_PROCESS);
  }
  for (cs_metric_t m = CS_METRIC_ALLOCATED; m <= CS_METRIC_OOMS; m++) cs_metrics_family(out, list, m);
  fputs("# HELP cudasnap_site_allocated_bytes Bytes requested by the live blocks of an allocation site (the site as "
        "cudasnap summary names it; the top sites of each device).\n"
        "# TYPE cudasnap_site_allocated_bytes gauge\n",
        out);
  for (size_t i = 0; i < list->count; i++) {
    const cs_live_entry_t *e = &list->items[i];
    for (size_t k = 0; k < cs_metrics_devices_shown(e, NULL); k++) {
      const cs_live_device_t *d = &e->devices[k];
      for (uint32_t s = 0, n = cs_metrics_sites_shown(e, k); s < n; s++) {
        fputs("cudasnap_site_allocated_bytes", out);
        cs_metrics_labels(out, &e->header, d);
        fputs(",site=\"", out);
        cs_metrics_value(out, d->sites[s].name, sizeof d->sites[s].name);
        fprintf(out, "\"} %" PRIu64 "\n", d->sites[s].bytes);
      }
    }
  }
  fputs("# HELP cudasnap_process_info A profiled process: its executable and how often it publishes (value 1).\n"
        "# TYPE cudasnap_process_info gauge\n",
        out);
  for (size_t i = 0; i < list->count; i++) {
    const cs_live_header_t *h = &list->items[i].header;
    fputs("cudasnap_process_info", out);
    cs_metrics_process_labels(out, h);
    fputs("\",exe=\"", out);
    cs_metrics_value(out, h->exe, sizeof h->exe);
    fprintf(out, "\",interval_ms=\"%" PRIu64 "\"} 1\n", h->interval_ms);
  }
}

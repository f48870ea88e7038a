/* The data of a report page (contract in cli/report_data.h). */
#include "cli/report_data.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/device_blocks.h"
#include "common/cs_format.h"
#include "cli/report_device.h"
#include "cli/report_stacks.h"
#include "cli/snapview.h"

static void cs_rdata_fact(cs_emitter_t *e, const char *label, const char *text) {
  cs_emit_list_begin(e);
  cs_emit_str(e, label);
  cs_emit_str(e, text);
  cs_emit_list_end(e);
}

static void cs_rdata_fact_int(cs_emitter_t *e, const char *label, const cJSON *obj, const char *key) {
  int64_t v;
  char text[32];
  if (!cs_view_int(obj, key, &v)) return;
  snprintf(text, sizeof text, "%" PRId64, v);
  cs_rdata_fact(e, label, text);
}

/* A JSON value as one line of text: strings as they are, anything else as JSON. */
static int cs_rdata_fact_value(cs_emitter_t *e, const char *label, const cJSON *value) {
  if (cJSON_IsString(value)) {
    cs_rdata_fact(e, label, value->valuestring);
    return 0;
  }
  char *text = cJSON_PrintUnformatted(value);
  if (text == NULL) return -1;
  cs_rdata_fact(e, label, text);
  cJSON_free(text);
  return 0;
}

/* "2026-11-25 05:03:01.123 UTC" */
static void cs_rdata_time(int64_t time_us, char *buf, size_t len) {
  time_t seconds = (time_t)(time_us / 1000000);
  struct tm tm;
  char day[32];
  if (time_us < 0 || gmtime_r(&seconds, &tm) == NULL || strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm) == 0) {
    snprintf(buf, len, "%" PRId64 " us", time_us);
    return;
  }
  snprintf(buf, len, "%s.%03d UTC", day, (int)(time_us % 1000000 / 1000));
}

static const char *cs_rdata_writer(const cJSON *root, char *buf, size_t len) {
  const cJSON *cudasnap = cJSON_GetObjectItemCaseSensitive(root, "cudasnap");
  if (cJSON_IsObject(cudasnap)) {
    const char *version = cs_view_str(cudasnap, "version");
    snprintf(buf, len, "cudasnap %s", version != NULL ? version : "?");
  } else if (cJSON_IsArray(root)) {
    snprintf(buf, len, "PyTorch (a segment list: torch.cuda.memory_snapshot())");
  } else {
    snprintf(buf, len, "PyTorch (torch.cuda.memory._snapshot())");
  }
  return buf;
}

/* The program's command line, its words joined by spaces. */
static void cs_rdata_argv(cs_emitter_t *e, const cJSON *argv) {
  size_t len = 1;
  const cJSON *word;
  cJSON_ArrayForEach(word, argv) if (cJSON_IsString(word)) len += strlen(word->valuestring) + 1;
  char *text = malloc(len);
  if (text == NULL || len == 1) {
    free(text);
    return;
  }
  text[0] = '\0';
  cJSON_ArrayForEach(word, argv) {
    if (!cJSON_IsString(word)) continue;
    if (text[0] != '\0') strcat(text, " ");
    strcat(text, word->valuestring);
  }
  cs_rdata_fact(e, "program", text);
  free(text);
}

static int cs_rdata_facts(const cJSON *root, const cs_report_source_t *src, int devices, cs_emitter_t *e) {
  char text[512], size[64];
  cs_emit_key(e, "facts");
  cs_emit_list_begin(e);
  cs_rdata_fact(e, "file", src->path);
  cs_format_bytes(src->bytes, size, sizeof size);
  snprintf(text, sizeof text, "%s, %s", src->format == CS_SNAPSHOT_PICKLE ? "pickle" : "JSON", size);
  cs_rdata_fact(e, "format", text);
  cs_rdata_fact(e, "written by", cs_rdata_writer(root, text, sizeof text));
  const cJSON *cudasnap = cJSON_GetObjectItemCaseSensitive(root, "cudasnap");
  if (cJSON_IsObject(cudasnap)) {
    cs_rdata_argv(e, cJSON_GetObjectItemCaseSensitive(cudasnap, "argv"));
    cs_rdata_fact_int(e, "pid", cudasnap, "pid");
    const char *host = cs_view_str(cudasnap, "host");
    if (host != NULL && host[0] != '\0') cs_rdata_fact(e, "host", host);
    const char *trigger = cs_view_str(cudasnap, "trigger");
    if (trigger != NULL) cs_rdata_fact(e, "trigger", trigger);
    cs_rdata_fact_int(e, "dump number", cudasnap, "dump_number");
    int64_t time_us;
    if (cs_view_int(cudasnap, "time_us", &time_us)) {
      cs_rdata_time(time_us, text, sizeof text);
      cs_rdata_fact(e, "time", text);
    }
    const char *stacks = cs_view_str(cudasnap, "stacks");
    if (stacks != NULL) cs_rdata_fact(e, "stacks", stacks);
    cs_rdata_fact_int(e, "events dropped (history full)", cudasnap, "dropped_events");
  }
  snprintf(text, sizeof text, "%d", devices);
  cs_rdata_fact(e, "devices in the snapshot", text);
  cs_emit_list_end(e);

  cs_emit_key(e, "settings");
  cs_emit_list_begin(e);
  const cJSON *settings = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "allocator_settings") : NULL;
  if (!cJSON_IsObject(settings)) settings = NULL;
  const cJSON *item;
  int rc = 0;
  cJSON_ArrayForEach(item, settings) {
    if (item->string != NULL && cs_rdata_fact_value(e, item->string, item) != 0) rc = -1;
  }
  cs_emit_list_end(e); /* closed whatever happened: the emitter stays well nested */
  return rc;
}

static const char *cs_rdata_basename(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

int cs_report_data(const cJSON *root, const cs_report_source_t *src, cs_emitter_t *e) {
  char writer[96];
  int devices = cs_view_device_count(root);
  cs_emit_dict_begin(e);
  cs_emit_key(e, "title");
  cs_emit_str(e, cs_rdata_basename(src->path));
  cs_emit_key(e, "path");
  cs_emit_str(e, src->path);
  cs_emit_key(e, "writer");
  cs_emit_str(e, cs_rdata_writer(root, writer, sizeof writer));
  int rc = cs_rdata_facts(root, src, devices, e);

  cs_report_stacks_t r;
  cs_report_stacks_init(&r);
  cs_emit_key(e, "devices");
  cs_emit_list_begin(e);
  for (int d = 0; rc == 0 && d < devices; d++) {
    if (cs_device_used(root, d)) rc = cs_report_device(root, d, &r, e);
  }
  cs_emit_list_end(e);
  if (rc == 0) rc = cs_report_stacks_emit(&r, e);
  cs_emit_dict_end(e);
  cs_report_stacks_free(&r);
  return rc;
}

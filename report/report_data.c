/* SPDX-License-Identifier: Apache-2.0 */
/* The data of a report page (contract in report/report_data.h). */
#include "report/report_data.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "analysis/device_blocks.h"
#include "analysis/lower_bound.h"
#include "analysis/oom.h"
#include "analysis/snapview.h"
#include "common/cs_format.h"
#include "report/report_device.h"
#include "report/report_stacks.h"

static void cs_rdata_fact(cs_emitter_t *e, const char *label, const char *text) {
  cs_emit_list_begin(e);
  cs_emit_str(e, label);
  cs_emit_str(e, text);
  cs_emit_list_end(e);
}

static void cs_rdata_fact_int(cs_emitter_t *e, const char *label, const cs_doc_t *doc, cs_val_t obj,
                              const char *key) {
  int64_t v;
  char text[32];
  if (!cs_view_int(doc, obj, key, &v)) return;
  snprintf(text, sizeof text, "%" PRId64, v);
  cs_rdata_fact(e, label, text);
}

/* A value as a cJSON tree, to be printed as JSON: the text the page has always shown, numbers
 * printed from their doubles as cJSON prints them. NULL without host memory. Recursion is bounded
 * by the doc's depth (CS_DOC_MAX_DEPTH). */
static cJSON *cs_rdata_tree(const cs_doc_t *doc, cs_val_t v) {
  if (cs_val_is_number(v)) return cJSON_CreateNumber(cs_doc_number(doc, v));
  if (cs_val_is_string(v)) return cJSON_CreateString(cs_doc_str(doc, v, NULL));
  if (cs_val_is_bool(v)) return cJSON_CreateBool(cs_val_is_true(v));
  if (!cs_val_is_container(v)) return cJSON_CreateNull();
  bool dict = cs_val_is_dict(v);
  cJSON *tree = dict ? cJSON_CreateObject() : cJSON_CreateArray();
  size_t n = cs_doc_len(doc, v);
  const cs_val_t *items = cs_doc_items(doc, v);
  for (size_t i = 0; tree != NULL && i < n; i++) {
    cJSON *item = cs_rdata_tree(doc, items[i]);
    bool added = item != NULL && (dict ? cJSON_AddItemToObject(tree, cs_doc_key_at(doc, v, i), item)
                                       : cJSON_AddItemToArray(tree, item));
    if (!added) {
      cJSON_Delete(item);
      cJSON_Delete(tree);
      tree = NULL;
    }
  }
  return tree;
}

/* A value as one line of text: strings as they are, anything else as JSON. */
static int cs_rdata_fact_value(cs_emitter_t *e, const char *label, const cs_doc_t *doc, cs_val_t value) {
  const char *str = cs_doc_str(doc, value, NULL);
  if (str != NULL) {
    cs_rdata_fact(e, label, str);
    return 0;
  }
  cJSON *tree = cs_rdata_tree(doc, value);
  char *text = tree != NULL ? cJSON_PrintUnformatted(tree) : NULL;
  cJSON_Delete(tree);
  if (text == NULL) return -1;
  cs_rdata_fact(e, label, text);
  cJSON_free(text);
  return 0;
}

static const char *cs_rdata_writer(const cs_doc_t *doc, char *buf, size_t len) {
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  if (cs_val_is_dict(cudasnap)) {
    const char *version = cs_view_str(doc, cudasnap, "version");
    snprintf(buf, len, "cudasnap %s", version != NULL ? version : "?");
  } else if (cs_val_is_array(cs_doc_root(doc))) {
    snprintf(buf, len, "PyTorch (a segment list: torch.cuda.memory_snapshot())");
  } else {
    snprintf(buf, len, "PyTorch (torch.cuda.memory._snapshot())");
  }
  return buf;
}

/* The program's command line, its words joined by spaces. Whatever container argv is: a dict's
 * members are walked as its items, as they always were. */
static void cs_rdata_argv(cs_emitter_t *e, const cs_doc_t *doc, cs_val_t argv) {
  size_t n = cs_doc_len(doc, argv);
  const cs_val_t *words = cs_doc_items(doc, argv);
  size_t len = 1;
  for (size_t i = 0; i < n; i++) {
    const char *word = cs_doc_str(doc, words[i], NULL);
    if (word != NULL) len += strlen(word) + 1;
  }
  char *text = malloc(len);
  if (text == NULL || len == 1) {
    free(text);
    return;
  }
  text[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    const char *word = cs_doc_str(doc, words[i], NULL);
    if (word == NULL) continue;
    if (text[0] != '\0') strcat(text, " ");
    strcat(text, word);
  }
  cs_rdata_fact(e, "program", text);
  free(text);
}

static int cs_rdata_facts(const cs_doc_t *doc, const cs_report_source_t *src, int devices, cs_emitter_t *e) {
  char text[512], size[64];
  cs_emit_key(e, "facts");
  cs_emit_list_begin(e);
  cs_rdata_fact(e, "file", src->path);
  cs_format_bytes(src->bytes, size, sizeof size);
  snprintf(text, sizeof text, "%s, %s", src->format, size);
  cs_rdata_fact(e, "format", text);
  cs_rdata_fact(e, "written by", cs_rdata_writer(doc, text, sizeof text));
  cs_val_t root = cs_doc_root(doc);
  cs_val_t cudasnap = cs_doc_get_key(doc, root, CS_KEY_CUDASNAP);
  if (cs_val_is_dict(cudasnap)) {
    cs_rdata_argv(e, doc, cs_doc_get(doc, cudasnap, "argv"));
    cs_rdata_fact_int(e, "pid", doc, cudasnap, "pid");
    const char *host = cs_view_str(doc, cudasnap, "host");
    if (host != NULL && host[0] != '\0') cs_rdata_fact(e, "host", host);
    const char *trigger = cs_view_str_key(doc, cudasnap, CS_KEY_TRIGGER);
    if (trigger != NULL) cs_rdata_fact(e, "trigger", trigger);
    cs_rdata_fact_int(e, "dump number", doc, cudasnap, "dump_number");
    int64_t time_us;
    if (cs_view_int_key(doc, cudasnap, CS_KEY_TIME_US, &time_us)) {
      cs_format_utc(time_us, text, sizeof text);
      cs_rdata_fact(e, "time", text);
    }
    const char *stacks = cs_view_str(doc, cudasnap, "stacks");
    if (stacks != NULL) cs_rdata_fact(e, "stacks", stacks);
    cs_rdata_fact_int(e, "events dropped (history full)", doc, cudasnap, "dropped_events");
  }
  snprintf(text, sizeof text, "%d", devices);
  cs_rdata_fact(e, "devices in the snapshot", text);
  cs_emit_list_end(e);

  cs_emit_key(e, "settings");
  cs_emit_list_begin(e);
  cs_val_t settings = cs_doc_get_key(doc, root, CS_KEY_ALLOCATOR_SETTINGS);
  size_t nsettings = cs_val_is_dict(settings) ? cs_doc_len(doc, settings) : 0;
  int rc = 0;
  for (size_t i = 0; i < nsettings; i++) {
    if (cs_rdata_fact_value(e, cs_doc_key_at(doc, settings, i), doc, cs_doc_at(doc, settings, i)) != 0) rc = -1;
  }
  cs_emit_list_end(e); /* closed whatever happened: the emitter stays well nested */
  return rc;
}

/* The user callers shown under the site that asked, as in `summary`. */
enum { CS_REPORT_OOM_CALLERS = 5 };

/* The OOM answer, as `summary` words it: {"device": D, "headline": first line, "lines": [...]}. */
static int cs_rdata_oom(const cs_doc_t *doc, cs_emitter_t *e) {
  cs_oom_t oom;
  if (cs_oom_find(doc, &oom) != 0) return -1;
  if (!oom.found) return 0;
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (mem == NULL) return -1;
  cs_oom_write(mem, doc, &oom, "", CS_REPORT_OOM_CALLERS);
  if (fclose(mem) != 0 || text == NULL) {
    free(text);
    return -1;
  }
  cs_emit_key(e, "oom");
  cs_emit_dict_begin(e);
  cs_emit_kv_int(e, "device", oom.device);
  cs_emit_key(e, "lines");
  cs_emit_list_begin(e);
  for (char *line = text; *line != '\0';) {
    char *end = strchr(line, '\n');
    if (end != NULL) *end = '\0';
    cs_emit_str(e, line);
    if (end == NULL) break;
    line = end + 1;
  }
  cs_emit_list_end(e);
  cs_emit_dict_end(e);
  free(text);
  return 0;
}

/* Warnings the page shows above everything (a banner): the live figures as lower bounds. */
static void cs_rdata_warnings(const cs_doc_t *doc, cs_emitter_t *e) {
  cs_emit_key(e, "warnings");
  cs_emit_list_begin(e);
  uint64_t dropped, kept;
  if (cs_lower_bound(doc, &dropped, &kept)) {
    char text[512];
    cs_lower_bound_text(dropped, kept, text, sizeof text);
    text[0] = (char)(text[0] - 'a' + 'A');
    cs_emit_str(e, text);
  }
  cs_emit_list_end(e);
}

static const char *cs_rdata_basename(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

int cs_report_data(const cs_doc_t *doc, const cs_report_source_t *src, cs_emitter_t *e) {
  char writer[96];
  int devices = cs_view_device_count(doc);
  cs_emit_dict_begin(e);
  cs_emit_key(e, "title");
  cs_emit_str(e, cs_rdata_basename(src->path));
  cs_emit_key(e, "path");
  cs_emit_str(e, src->path);
  cs_emit_key(e, "writer");
  cs_emit_str(e, cs_rdata_writer(doc, writer, sizeof writer));
  int rc = cs_rdata_facts(doc, src, devices, e);
  cs_rdata_warnings(doc, e);
  if (rc == 0) rc = cs_rdata_oom(doc, e);

  cs_report_stacks_t r;
  cs_report_stacks_init(&r, doc);
  cs_emit_key(e, "devices");
  cs_emit_list_begin(e);
  for (int d = 0; rc == 0 && d < devices; d++) {
    if (cs_device_used(doc, d)) rc = cs_report_device(doc, d, &r, e);
  }
  cs_emit_list_end(e);
  if (rc == 0) rc = cs_report_stacks_emit(&r, e);
  cs_emit_dict_end(e);
  cs_report_stacks_free(&r);
  return rc;
}

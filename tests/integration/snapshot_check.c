/* snapshot_check FILE [--frame NAME FILE LINE] [--action NAME] [--devices N] [--dropped]
 *
 * Reads a snapshot (JSON or pickle), checks it against the viewer's rules (reader/validate.h)
 * and the expectations given:
 *   --frame NAME FILE LINE  some frame names function NAME in a file ending with FILE at LINE
 *   --action NAME           the trace has an entry with this action
 *   --devices N             device_traces has N lists
 *   --dropped               the ring dropped entries (trace_alloc_overflowed)
 * Exits 0 when everything holds; otherwise prints what failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/reader.h"
#include "reader/validate.h"

static bool frame_matches(const cJSON *frames, const char *name, const char *file, int line) {
  const cJSON *f;
  cJSON_ArrayForEach(f, frames) {
    const cJSON *n = cJSON_GetObjectItem(f, "name"), *fn = cJSON_GetObjectItem(f, "filename");
    const cJSON *l = cJSON_GetObjectItem(f, "line");
    if (!cJSON_IsString(n) || !cJSON_IsString(fn) || !cJSON_IsNumber(l)) continue;
    size_t flen = strlen(fn->valuestring), want = strlen(file);
    if (strcmp(n->valuestring, name) == 0 && flen >= want && strcmp(fn->valuestring + flen - want, file) == 0 &&
        l->valueint == line)
      return true;
  }
  return false;
}

static bool has_frame(const cJSON *snap, const char *name, const char *file, int line) {
  const cJSON *trace, *entry, *seg, *blk;
  cJSON_ArrayForEach(trace, cJSON_GetObjectItem(snap, "device_traces"))
    cJSON_ArrayForEach(entry, trace) if (frame_matches(cJSON_GetObjectItem(entry, "frames"), name, file, line)) return true;
  cJSON_ArrayForEach(seg, cJSON_GetObjectItem(snap, "segments"))
    cJSON_ArrayForEach(blk, cJSON_GetObjectItem(seg, "blocks"))
      if (frame_matches(cJSON_GetObjectItem(blk, "frames"), name, file, line)) return true;
  return false;
}

static bool has_action(const cJSON *snap, const char *action) {
  const cJSON *trace, *entry;
  cJSON_ArrayForEach(trace, cJSON_GetObjectItem(snap, "device_traces")) cJSON_ArrayForEach(entry, trace) {
    const cJSON *a = cJSON_GetObjectItem(entry, "action");
    if (cJSON_IsString(a) && strcmp(a->valuestring, action) == 0) return true;
  }
  return false;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: snapshot_check FILE [--frame NAME FILE LINE] [--action NAME] [--devices N] [--dropped]\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char *data = malloc((size_t)size + 1);
  if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) return 1;
  fclose(f);

  int failures = 0;
  cs_report_t report;
  cs_report_init(&report);
  if (!cs_validate_bytes(data, (size_t)size, &report)) failures++;
  for (size_t i = 0; i < report.count; i++)
    fprintf(stderr, "%s: %s: %s: %s\n", argv[1], report.findings[i].level == CS_FINDING_ERROR ? "error" : "warning",
            report.findings[i].where, report.findings[i].message);
  cs_report_free(&report);

  cs_read_error_t err;
  cJSON *snap = cs_read_snapshot(data, (size_t)size, NULL, &err);
  if (!snap) {
    fprintf(stderr, "%s: byte %zu: %s\n", argv[1], err.offset, err.message);
    return 1;
  }
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--frame") == 0 && i + 3 < argc) {
      if (!has_frame(snap, argv[i + 1], argv[i + 2], atoi(argv[i + 3]))) {
        fprintf(stderr, "%s: no frame %s at %s:%s\n", argv[1], argv[i + 1], argv[i + 2], argv[i + 3]);
        failures++;
      }
      i += 3;
    } else if (strcmp(argv[i], "--action") == 0 && i + 1 < argc) {
      if (!has_action(snap, argv[++i])) {
        fprintf(stderr, "%s: no %s entry in the trace\n", argv[1], argv[i]);
        failures++;
      }
    } else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
      int want = atoi(argv[++i]);
      if (cJSON_GetArraySize(cJSON_GetObjectItem(snap, "device_traces")) != want) {
        fprintf(stderr, "%s: expected %d device traces\n", argv[1], want);
        failures++;
      }
    } else if (strcmp(argv[i], "--dropped") == 0) {
      const cJSON *o = cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "allocator_settings"), "trace_alloc_overflowed");
      if (!cJSON_IsTrue(o)) {
        fprintf(stderr, "%s: expected the ring to have dropped entries\n", argv[1]);
        failures++;
      }
    } else {
      fprintf(stderr, "snapshot_check: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  cJSON_Delete(snap);
  free(data);
  return failures ? 1 : 0;
}

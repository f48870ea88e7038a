/* SPDX-License-Identifier: Apache-2.0 */
/* snapshot_check FILE [--frame NAME FILE LINE] [--action NAME] [--devices N] [--dropped]
 *
 * Reads a snapshot (JSON or pickle), checks it against the viewer's rules (reader/validate.h)
 * and the expectations given:
 *   --frame NAME FILE LINE  some frame names function NAME in a file ending with FILE at LINE
 *   --action NAME           the trace has an entry with this action
 *   --devices N             device_traces has N lists
 *   --dropped               the ring dropped entries (trace_alloc_overflowed)
 * Exits 0 when everything holds; otherwise prints what failed. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/doc.h"
#include "reader/reader.h"
#include "reader/validate.h"

static bool frame_matches(const cs_doc_t *doc, cs_val_t frames, const char *name, const char *file, int line) {
  size_t n = cs_doc_len(doc, frames);
  const cs_val_t *it = cs_doc_items(doc, frames);
  for (size_t i = 0; i < n; i++) {
    size_t flen;
    const char *nm = cs_doc_str(doc, cs_doc_get_key(doc, it[i], CS_KEY_NAME), NULL);
    const char *fn = cs_doc_str(doc, cs_doc_get_key(doc, it[i], CS_KEY_FILENAME), &flen);
    int64_t l;
    if (nm == NULL || fn == NULL || !cs_doc_int(doc, cs_doc_get_key(doc, it[i], CS_KEY_LINE), &l)) continue;
    size_t want = strlen(file);
    if (strcmp(nm, name) == 0 && flen >= want && strcmp(fn + flen - want, file) == 0 && l == line) return true;
  }
  return false;
}

static bool has_frame(const cs_doc_t *doc, const char *name, const char *file, int line) {
  cs_val_t root = cs_doc_root(doc);
  cs_val_t traces = cs_doc_get_key(doc, root, CS_KEY_DEVICE_TRACES);
  for (size_t d = 0; d < cs_doc_len(doc, traces); d++) {
    cs_val_t trace = cs_doc_at(doc, traces, d);
    for (size_t i = 0; i < cs_doc_len(doc, trace); i++)
      if (frame_matches(doc, cs_doc_get_key(doc, cs_doc_at(doc, trace, i), CS_KEY_FRAMES), name, file, line))
        return true;
  }
  cs_val_t segs = cs_doc_get_key(doc, root, CS_KEY_SEGMENTS);
  for (size_t s = 0; s < cs_doc_len(doc, segs); s++) {
    cs_val_t blocks = cs_doc_get_key(doc, cs_doc_at(doc, segs, s), CS_KEY_BLOCKS);
    for (size_t b = 0; b < cs_doc_len(doc, blocks); b++)
      if (frame_matches(doc, cs_doc_get_key(doc, cs_doc_at(doc, blocks, b), CS_KEY_FRAMES), name, file, line))
        return true;
  }
  return false;
}

static bool has_action(const cs_doc_t *doc, const char *action) {
  cs_val_t traces = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_DEVICE_TRACES);
  for (size_t d = 0; d < cs_doc_len(doc, traces); d++) {
    cs_val_t trace = cs_doc_at(doc, traces, d);
    for (size_t i = 0; i < cs_doc_len(doc, trace); i++) {
      const char *a = cs_doc_str(doc, cs_doc_get_key(doc, cs_doc_at(doc, trace, i), CS_KEY_ACTION), NULL);
      if (a != NULL && strcmp(a, action) == 0) return true;
    }
  }
  return false;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: snapshot_check FILE [--frame NAME FILE LINE] [--action NAME] [--devices N] [--dropped]\n");
    return 2;
  }
  int failures = 0;
  cs_report_t report;
  cs_report_init(&report);
  if (!cs_validate_file(argv[1], &report)) failures++;
  for (size_t i = 0; i < report.count; i++)
    fprintf(stderr, "%s: %s: %s: %s\n", argv[1], report.findings[i].level == CS_FINDING_ERROR ? "error" : "warning",
            report.findings[i].where, report.findings[i].message);
  cs_report_free(&report);

  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot_file(argv[1], NULL, NULL, &err);
  if (!doc) {
    fprintf(stderr, "%s: byte %zu: %s\n", argv[1], err.offset, err.message);
    return 1;
  }
  cs_val_t root = cs_doc_root(doc);
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--frame") == 0 && i + 3 < argc) {
      if (!has_frame(doc, argv[i + 1], argv[i + 2], atoi(argv[i + 3]))) {
        fprintf(stderr, "%s: no frame %s at %s:%s\n", argv[1], argv[i + 1], argv[i + 2], argv[i + 3]);
        failures++;
      }
      i += 3;
    } else if (strcmp(argv[i], "--action") == 0 && i + 1 < argc) {
      if (!has_action(doc, argv[++i])) {
        fprintf(stderr, "%s: no %s entry in the trace\n", argv[1], argv[i]);
        failures++;
      }
    } else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
      int want = atoi(argv[++i]);
      cs_val_t traces = cs_doc_get_key(doc, root, CS_KEY_DEVICE_TRACES);
      if (!cs_val_is_array(traces) || cs_doc_len(doc, traces) != (size_t)want) {
        fprintf(stderr, "%s: expected %d device traces\n", argv[1], want);
        failures++;
      }
    } else if (strcmp(argv[i], "--dropped") == 0) {
      cs_val_t o = cs_doc_get(doc, cs_doc_get_key(doc, root, CS_KEY_ALLOCATOR_SETTINGS), "trace_alloc_overflowed");
      if (!cs_val_is_true(o)) {
        fprintf(stderr, "%s: expected the ring to have dropped entries\n", argv[1]);
        failures++;
      }
    } else {
      fprintf(stderr, "snapshot_check: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  cs_doc_free(doc);
  return failures ? 1 : 0;
}

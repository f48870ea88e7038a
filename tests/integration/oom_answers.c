/* SPDX-License-Identifier: Apache-2.0 */
/* oom_answers FILE
 *
 * The out-of-memory answer (analysis/oom.h) about every `oom` entry of a snapshot, not only the
 * last one that `cudasnap summary` leads with: for each, a line "== TIME_US" and the answer as
 * summary writes it (cs_oom_write), then "verdict-inline: " and the verdict as the report's banner
 * and Perfetto's OOM event say it in one line. server.sh compares what a later snapshot says about
 * each OOM with what the OOM's own snapshot said. Exits 0, or 1 when the file cannot be read. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/oom.h"
#include "analysis/snapview.h"
#include "model/doc.h"
#include "reader/reader.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: oom_answers FILE\n");
    return 2;
  }
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot_file(argv[1], NULL, NULL, &err);
  if (!doc) {
    fprintf(stderr, "%s: cannot be read\n", argv[1]);
    return 1;
  }
  int rc = 0, devices = cs_view_device_count(doc);
  for (int d = 0; d < devices && rc == 0; d++) {
    cs_val_t trace = cs_view_trace(doc, d);
    size_t n = cs_val_is_array(trace) ? cs_doc_len(doc, trace) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
      const char *action = cs_view_str_key(doc, cs_doc_at(doc, trace, i), CS_KEY_ACTION);
      if (action == NULL || strcmp(action, "oom") != 0) continue;
      cs_oom_t o;
      rc = cs_oom_at(doc, d, i, &o);
      if (rc != 0 || !o.found) break;
      char verdict[4096];
      cs_oom_verdict_text(&o, CS_OOM_SITES_INLINE, verdict, sizeof verdict);
      printf("== %" PRId64 "\n", o.time_us);
      cs_oom_write(stdout, doc, &o, "", 5);
      printf("verdict-inline: %s\n", verdict);
    }
  }
  cs_doc_free(doc);
  return rc == 0 ? 0 : 1;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot files into the snapshot model for the subcommands (contract in cli/load.h). */
#include "cli/load.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "reader/validate.h"

/* before: "" for a refusal, or "cudasnap SUB: skipped " for a file passed over. */
static cs_doc_t *cs_load_parse_said(const char *path, cs_snapshot_format_t *format, size_t *bytes, const char *before) {
  struct stat st;
  uint64_t size = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
  char what[96];
  snprintf(what, sizeof what, "reading %s", path);
  cs_progress_t progress;
  cs_progress_start(&progress, what, size, 0);
  cs_progress_step(&progress, "parsing");
  cs_read_error_t err;
  cs_doc_t *doc = cs_read_snapshot_file(path, format, bytes, &err);
  cs_progress_end(&progress);
  if (doc == NULL && err.io_errno != 0)
    cs_cli_message("%s%s: cannot read: %s", before, path, strerror(err.io_errno));
  else if (doc == NULL)
    cs_cli_message("%s%s: byte %zu: %s", before, path, err.offset, err.message);
  return doc;
}

cs_doc_t *cs_load_parse(const char *path, cs_snapshot_format_t *format, size_t *bytes) {
  return cs_load_parse_said(path, format, bytes, "");
}

static cs_doc_t *cs_load_snapshot_said(const char *path, cs_snapshot_format_t *format, size_t *bytes,
                                       const char *before) {
  cs_doc_t *doc = cs_load_parse_said(path, format, bytes, before);
  if (doc == NULL) return NULL;
  cs_report_t report;
  cs_report_init(&report);
  if (!cs_validate_readable(doc, &report)) {
    cs_cli_message("%s%s: %s: %s", before, path, report.first_unreadable.where, report.first_unreadable.message);
    cs_doc_free(doc);
    doc = NULL;
  }
  cs_report_free(&report);
  return doc;
}

cs_doc_t *cs_load_snapshot(const char *path, cs_snapshot_format_t *format, size_t *bytes) {
  return cs_load_snapshot_said(path, format, bytes, "");
}

cs_doc_t *cs_load_snapshot_or_skip(const char *path, const char *subcommand, cs_snapshot_format_t *format,
                                   size_t *bytes, bool *skipped) {
  struct stat st;
  *skipped = false;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return cs_load_snapshot(path, format, bytes); /* refused */
  *skipped = true;
  char before[64];
  snprintf(before, sizeof before, "cudasnap %s: skipped ", subcommand);
  return cs_load_snapshot_said(path, format, bytes, before);
}

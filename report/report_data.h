/* SPDX-License-Identifier: Apache-2.0 */
/* The data of a report page: everything `cudasnap report` computes from a snapshot, written as
 * one JSON dict that the page's script (report/report_assets/report.js) lays out. Members:
 *   title, path, writer       the file's name, as given, and who wrote the snapshot
 *   facts [[label, text]...]  the snapshot's facts: file, program, pid, trigger, time, ...
 *   settings [[key, text]...] allocator_settings
 *   devices [...]             one dict per device in use (report/report_device.h)
 *   stacks, frames, sites     the tables the devices refer to (report/report_stacks.h) */
#ifndef CS_REPORT_DATA_H
#define CS_REPORT_DATA_H

#include <stdint.h>

#include "memviz/emit.h"
#include "model/doc.h"

/* What the page says of the file the model was read from: the caller read it (the page takes
 * models, never files). */
typedef struct cs_report_source_s {
  const char *path;             /* as the user gave it */
  uint64_t bytes;               /* the file's size */
  const char *format;           /* as the reader told it: "JSON" or "pickle" */
} cs_report_source_t;

/* Returns 0, or -1 without host memory. */
int cs_report_data(const cs_doc_t *doc, const cs_report_source_t *src, cs_emitter_t *e);

#endif

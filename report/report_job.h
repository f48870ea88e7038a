/* SPDX-License-Identifier: Apache-2.0 */
/* The data of the job page, `cudasnap report -o OUT.html FILE...` with several files (docs/ranks.md,
 * "The job page"). The page's data (report/report_assets/report.js lays it out) is
 *   {"title", "job": {"ranks": [ROW...], "t0", "t1", "ymax"}, "details": [DATA...]}
 * where ROW is a row of `cudasnap ranks` (rank, host, pid, trigger, peak_allocated, peak_reserved,
 * phase, oom, top_site, file) with "curve": [[time_us, bytes]...], the allocated bytes over time
 * down-sampled to at most CS_JOB_CURVE_POINTS points (each bucket's lowest and highest, so peaks
 * stay), rows sorted by peak as `ranks` sorts them, and DATA the single-file report's data of the
 * same file (report/report_data.h), in the same order. The caller reads the files, one at a time,
 * and adds each snapshot; only its row and its page data are kept. */
#ifndef CS_REPORT_JOB_H
#define CS_REPORT_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "memviz/sink.h"
#include "model/doc.h"
#include "report/report_data.h"

enum { CS_JOB_CURVE_POINTS = 400 };

typedef struct cs_job_page_s cs_job_page_t;

/* A page for up to `files` snapshots; NULL without host memory. */
cs_job_page_t *cs_job_page_create(size_t files);

/* One file's snapshot: its row (its rank from the snapshot, else rank_from_name; -1 for none) and
 * its single-file data. src->path must outlive the page. 0, or -1 without host memory. */
int cs_job_page_add(cs_job_page_t *p, const cs_doc_t *doc, const cs_report_source_t *src, int64_t rank_from_name);

/* The page's data into data (initialized here): one row per process, sorted. 0, or -1 without
 * host memory. */
int cs_job_page_write(cs_job_page_t *p, cs_mem_sink_t *data);

void cs_job_page_free(cs_job_page_t *p);

#endif

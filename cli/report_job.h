/* `cudasnap report -o OUT.html FILE...` with several files: one page for a job (docs/ranks.md,
 * "The job page"). The page's data (report/report_assets/report.js lays it out) is
 *   {"title", "job": {"ranks": [ROW...], "t0", "t1", "ymax"}, "details": [DATA...]}
 * where ROW is a row of `cudasnap ranks` (rank, host, pid, trigger, peak_allocated, peak_reserved,
 * phase, oom, top_site, file) with "curve": [[time_us, bytes]...], the allocated bytes over time
 * down-sampled to at most CS_JOB_CURVE_POINTS points (each bucket's lowest and highest, so peaks
 * stay), rows sorted by peak as `ranks` sorts them, and DATA the single-file report's data of the
 * same file (report/report_data.h), in the same order. Files are read one at a time. */
#ifndef CS_CLI_REPORT_JOB_H
#define CS_CLI_REPORT_JOB_H

#include "memviz/sink.h"

enum { CS_JOB_CURVE_POINTS = 400 };

/* Build the data of the page over files[0..n) into data (initialized here). Returns 0, or -1
 * after one line on stderr (a file that is not a snapshot, no host memory). */
int cs_report_job_data(char *const *files, int n, cs_mem_sink_t *data);

#endif

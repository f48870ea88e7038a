/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap check FILE`: the memory_viz viewer's rules (reader/validate.h), one line per
 * finding, then a verdict. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cs_format.h"
#include "analysis/lower_bound.h"
#include "cli/load.h"
#include "reader/validate.h"

static const char cs_check_help[] =
    "usage: cudasnap check FILE\n"
    "\n"
    "Does the snapshot FILE (JSON or pickle) load and render in the memory_viz viewer? The\n"
    "rules are the viewer's: the keys and types it reads, the encoding (strict JSON, the pickle\n"
    "opcodes and batch sizes it accepts), and a backward replay of every device's trace from the\n"
    "final state, as its Allocator State History view does. Output, on stdout, one line per\n"
    "finding, then the verdict:\n"
    "  FILE: error: WHERE: MESSAGE      the viewer fails (an exception at load, in a view, on hover)\n"
    "  FILE: warning: WHERE: MESSAGE    it renders, but wrongly or degraded in places\n"
    "  FILE: note: N more findings not shown\n"
    "  FILE: clean                      (or: FILE: N error(s), M warning(s))\n"
    "WHERE is a path into the snapshot (device_traces[0][17]) or a byte offset (byte 1234).\n"
    "A snapshot `cudasnap recover` made from a recording whose history dropped its oldest events\n"
    "also gets, before the verdict (about its figures, not the viewer: the verdict and the exit\n"
    "status stay the viewer's):\n"
    "  FILE: warning: cudasnap.dropped_events: the live figures are lower bounds: ...\n"
    "A file that does not parse at all gets one line on stderr instead: FILE: byte N: problem.\n"
    "\n"
    "exit status: 0 when clean (no error, no warning), 1 otherwise.\n"
    "\n"
    "options:\n"
    "  -h, --help  this text\n";

static const char cs_check_name[] = "check";

/* A recovery whose history dropped events renders fine but shows less than was live. */
static void cs_check_lower_bound(const char *path) {
  cs_doc_t *doc = cs_load_parse(path, NULL, NULL);
  uint64_t dropped, kept;
  if (doc != NULL && cs_lower_bound(doc, &dropped, &kept)) {
    char text[512];
    cs_lower_bound_text(dropped, kept, text, sizeof text);
    printf("%s: warning: cudasnap.dropped_events: %s\n", path, text);
  }
  cs_doc_free(doc);
}

static void cs_check_print(const char *path, const cs_report_t *r) {
  for (size_t i = 0; i < r->count; i++) {
    const cs_finding_t *f = &r->findings[i];
    printf("%s: %s: %s: %s\n", path, f->level == CS_FINDING_ERROR ? "error" : "warning", f->where, f->message);
  }
  if (r->dropped > 0) printf("%s: note: %zu more findings not shown\n", path, r->dropped);
  if (r->errors == 0) cs_check_lower_bound(path);
  if (r->errors == 0 && r->warnings == 0) {
    printf("%s: clean\n", path);
  } else {
    printf("%s: %zu error%s, %zu warning%s\n", path, r->errors, cs_plural(r->errors), r->warnings,
           cs_plural(r->warnings));
  }
}

int cs_cli_check(int argc, char **argv) {
  static const struct option options[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    if (c != 'h') return cs_cli_bad_option(cs_check_name, c, argv);
    fputs(cs_check_help, stdout);
    return CS_CLI_OK;
  }
  if (!cs_cli_operands(cs_check_name, argc, argv, 1, "FILE")) return CS_CLI_USAGE;
  const char *path = argv[optind];
  cs_report_t report;
  cs_report_init(&report);
  int rc = CS_CLI_OK;
  if (!cs_validate_file(path, &report) && report.read_failed) {
    /* A file that does not parse at all is reported like every unreadable input (cli/load.h):
     * one line on stderr, not a verdict. */
    const cs_finding_t *f = report.count > 0 ? &report.findings[0] : &report.first_unreadable;
    if (report.io_errno != 0)
      cs_cli_message("%s: cannot read: %s", path, strerror(report.io_errno));
    else
      cs_cli_message("%s: %s: %s", path, f->where, f->message);
    rc = CS_CLI_FAIL;
  }
  if (rc == CS_CLI_OK) {
    cs_check_print(path, &report);
    if (report.errors > 0 || report.warnings > 0) rc = CS_CLI_FAIL;
  }
  cs_report_free(&report);
  return rc;
}

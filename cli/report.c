/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap report FILE [-o OUT.html]`: one self-contained HTML page per snapshot, readable
 * offline in any current browser; a job's page for several files or a folder
 * (report/report_data.h computes, report/report_page.h writes). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/load.h"
#include "cli/ranks.h"
#include "cli/replace.h"
#include "cli/snapshot_dir.h"
#include "report/report_data.h"
#include "report/report_job.h"
#include "report/report_page.h"
#include "memviz/emit.h"
#include "memviz/output.h"
#include "memviz/sink.h"

static const char cs_report_help[] =
    "usage: cudasnap report [-o OUT.html] [--allocator-frames GLOB[,GLOB...]] FILE\n"
    "       cudasnap report [-o OUT.html] [--allocator-frames GLOB[,GLOB...]] DIR\n"
    "       cudasnap report -o OUT.html [--allocator-frames GLOB[,GLOB...]] FILE|DIR FILE|DIR...\n"
    "\n"
    "Write one HTML page that shows the snapshot FILE (JSON or pickle; cudasnap's or PyTorch's)\n"
    "at a glance. The page is self-contained: it makes no network request and needs no other\n"
    "file, so it opens from a machine without internet access, as a CI artifact or attached to a\n"
    "bug report, with a double click, in any current browser (JavaScript on). Per device in use:\n"
    "\n"
    "  the answer first: for an out-of-memory snapshot, what failed and why, as `summary`\n"
    "    says it (Tried to allocate SIZE; SIZE free; the site, the cache, the verdict); a banner\n"
    "    when the live figures are lower bounds (a recovery that lost its oldest events); the\n"
    "    peak of requested bytes (before rounding; the memory_summary table counts blocks, as\n"
    "    memory_allocated() does) and when it was reached, the top allocation site at the peak,\n"
    "    reserved bytes, the bytes still allocated at the snapshot and the free bytes inside\n"
    "    segments;\n"
    "  memory over time: allocated bytes after every trace entry, split by the top 8 allocation\n"
    "    sites at the peak (the others as one band), reserved bytes as a line, the peak, OOMs\n"
    "    and snapshots marked; hovering shows the time, the bytes and the site under the\n"
    "    pointer with its stack; x is the entry number, or the time (a button switches);\n"
    "  at the peak: the bytes each site held then, largest first; hovering or clicking a site\n"
    "    shows its stack;\n"
    "  segments at the snapshot: each segment a row, its blocks by state (allocated, pending\n"
    "    free, free) so fragmentation shows, largest segments first; hovering names the block;\n"
    "  tables: the memory_summary table (as `cudasnap summary` prints it), the blocks still\n"
    "    allocated at the snapshot by site (the leak list of an exit snapshot), the\n"
    "    reconciliation of cudasnap's statistics with the segments (cudasnap snapshots only),\n"
    "    and the snapshot's facts (program, pid, trigger, time, allocator settings).\n"
    "\n"
    "Sites, the peak and the tables follow `cudasnap summary`'s rules (its --help says them): the\n"
    "peak and the top site are the ones summary prints. The page holds at most a few thousand\n"
    "points per series: the trace is down-sampled keeping every bucket's highest and lowest\n"
    "point, so peaks stay where they are.\n"
    "\n"
    "A file whose numbers would mean nothing is refused with one line on stderr, exit 1, as\n"
    "summary refuses it:\n"
    "  FILE: WHERE: problem    not a snapshot (neither segments nor device_traces), or an\n"
    "                          address or size that is not a finite non-negative number\n"
    "Other problems the viewer has with a file (`cudasnap check` lists them) do not stop it.\n"
    "\n"
    "OUT defaults to FILE with its extension (.json, .pickle, .pkl) replaced by .html. It is\n"
    "written to a temporary file in its directory and renamed into place, replacing an existing\n"
    "OUT (but never FILE itself). On success, one line on stdout:\n"
    "  wrote OUT: N bytes\n"
    "\n"
    "Several FILEs (the snapshots of a job's processes) make one page for the job, to OUT: the\n"
    "table of `cudasnap ranks` first (OOM rows marked), then each process's allocated bytes over\n"
    "time, small multiples on one wall-clock axis (down-sampled to 400 points each), and each\n"
    "one's own report (the page above) a click away. Still one self-contained file. Among them,\n"
    "a file that is not a snapshot is skipped with one line, \"cudasnap report: skipped FILE:\n"
    "problem\"; with none left, exit 1. A DIR stands for every snapshot in it, as `cudasnap ranks\n"
    "DIR` reads it (*.json, *.pickle, *.pkl, in name order): `report DIR` writes the job's page to\n"
    "DIR/job.html unless -o names it; a DIR with no snapshot file is refused, exit 1.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT  the page to write\n"
    "  --allocator-frames GLOB[,GLOB...]\n"
    "                    functions that are part of the program's allocator: a site is the first\n"
    "                    frame outside them (as summary's --allocator-frames)\n"
    "  -h, --help        this text\n";

static const char cs_report_name[] = "report";

/* FILE with its snapshot extension replaced by .html (or .html added). NULL without memory. */
static char *cs_report_default_out(const char *in) {
  static const char *const extensions[] = {".json", ".pickle", ".pkl"};
  size_t len = strlen(in);
  const char *base = strrchr(in, '/');
  base = base != NULL ? base + 1 : in;
  for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++) {
    size_t n = strlen(extensions[i]);
    if (len > n && (size_t)(in + len - base) > n && strcmp(in + len - n, extensions[i]) == 0) {
      len -= n;
      break;
    }
  }
  char *out = malloc(len + sizeof ".html");
  if (out != NULL) {
    memcpy(out, in, len);
    memcpy(out + len, ".html", sizeof ".html");
  }
  return out;
}

/* The data blob of doc, in memory. Returns 0, or -1 after reporting why. */
static int cs_report_build(const cs_doc_t *doc, const cs_report_source_t *src, cs_mem_sink_t *data) {
  cs_mem_sink_init(data);
  cs_emitter_t *e = cs_emitter_create(CS_EMIT_JSON, cs_mem_sink(data), 2);
  int rc = e != NULL ? cs_report_data(doc, src, e) : -1;
  int err = e != NULL ? cs_emit_finish(e) : ENOMEM;
  if (rc != 0 || err != 0) {
    cs_cli_error(cs_report_name, "out of host memory");
    return -1;
  }
  return 0;
}

/* Write the page to path. Returns 0, or -1 after reporting why (nothing is left at path). */
static int cs_report_write(const char *path, const char *title, const cs_mem_sink_t *data) {
  cs_output_t out;
  int err = cs_output_open(&out, path);
  cs_fd_sink_t *sink = err == 0 ? malloc(sizeof *sink) : NULL;
  if (err == 0 && sink == NULL) err = ENOMEM;
  if (err == 0) {
    cs_fd_sink_init(sink, out.fd);
    err = cs_report_page(cs_fd_sink(sink), title, data->data, data->len);
    int flushed = cs_fd_sink_flush(sink);
    if (err == 0) err = flushed;
  }
  if (err == 0) err = cs_replace_commit(&out, path);
  else if (out.fd >= 0) cs_output_abort(&out);
  if (err != 0) {
    cs_cli_message("%s: cannot write: %s", path, strerror(err));
  } else {
    printf("wrote %s: %zu bytes\n", path, sink->total);
  }
  free(sink);
  return err != 0 ? -1 : 0;
}

/* The job page's data over files[0..n), read one at a time (report/report_job.h); a file that is
 * not a snapshot (another output beside them, caught by the same glob) is skipped with one line.
 * CS_CLI_OK (*added: the processes on the page), or CS_CLI_FAIL after one line on stderr (no
 * snapshot at all, no host memory). */
static int cs_report_job_read(char *const *files, int n, cs_mem_sink_t *data, int *added) {
  cs_job_page_t *page = cs_job_page_create((size_t)n);
  bool ok = page != NULL, no_memory = page == NULL;
  *added = 0;
  for (int i = 0; ok && i < n; i++) {
    cs_snapshot_format_t format = CS_SNAPSHOT_JSON;
    size_t bytes = 0;
    bool skipped = false;
    cs_doc_t *doc = cs_load_snapshot_or_skip(files[i], cs_report_name, &format, &bytes, &skipped);
    if (doc == NULL && !skipped) ok = false; /* a missing file: said why, refused */
    if (doc == NULL) continue;
    cs_report_source_t src = {.path = files[i], .bytes = bytes, .format = cs_snapshot_format_name(format)};
    if (cs_job_page_add(page, doc, &src, cs_ranks_from_name(files[i])) != 0) ok = false, no_memory = true;
    else ++*added;
    cs_doc_free(doc);
  }
  if (ok && *added == 0) {
    cs_cli_error(cs_report_name, "none of the files is a snapshot");
    ok = false;
  }
  if (ok && cs_job_page_write(page, data) != 0) ok = false, no_memory = true;
  if (no_memory) cs_cli_error(cs_report_name, "out of host memory");
  cs_job_page_free(page);
  return ok ? CS_CLI_OK : CS_CLI_FAIL;
}

/* Several files: the job page, to OUT, which must be given. */
static int cs_report_job(int n, char **files, const char *out) {
  if (out == NULL || out[0] == '\0') {
    cs_cli_error(cs_report_name, "several FILEs make one page for the job: give it a name with -o OUT.html");
    return CS_CLI_USAGE;
  }
  for (int i = 0; i < n; i++) {
    if (cs_replace_same_file(files[i], out)) {
      cs_cli_error(cs_report_name, "%s is one of the snapshots: give another OUT with -o", out);
      return CS_CLI_FAIL;
    }
  }
  cs_mem_sink_t data = {.data = NULL};
  int added = 0;
  int rc = cs_report_job_read(files, n, &data, &added);
  if (rc == CS_CLI_OK) {
    char title[64];
    snprintf(title, sizeof title, "a job of %d processes", added);
    if (cs_report_write(out, title, &data) != 0) rc = CS_CLI_FAIL;
  }
  cs_mem_sink_free(&data);
  return rc;
}

/* The operands with each DIR replaced by its snapshot files (cli/snapshot_dir.h), every path
 * malloc'ed. CS_CLI_OK, or CS_CLI_FAIL after one line (a DIR unreadable or without snapshots). */
static int cs_report_expand(char **operands, int n, char ***files, size_t *count) {
  size_t cap = (size_t)n, used = 0;
  char **list = calloc(cap, sizeof *list);
  int rc = list != NULL ? CS_CLI_OK : CS_CLI_FAIL;
  bool no_memory = list == NULL;
  for (int i = 0; rc == CS_CLI_OK && i < n; i++) {
    char **found = NULL;
    size_t k = 0;
    if (cs_snapshot_dir_is(operands[i])) {
      int err = cs_snapshot_dir_list(operands[i], &found, &k);
      if (err == ENOMEM) no_memory = true;
      else if (err != 0 || k == 0) cs_snapshot_dir_report(operands[i], err);
      if (err != 0 || k == 0) {
        rc = CS_CLI_FAIL;
        break;
      }
    } else {
      found = malloc(sizeof *found);
      if (found != NULL && (found[0] = strdup(operands[i])) != NULL) k = 1;
      else {
        free(found);
        no_memory = true;
        rc = CS_CLI_FAIL;
        break;
      }
    }
    char **bigger = used + k > cap ? realloc(list, (cap = used + k + (size_t)(n - i)) * sizeof *list) : list;
    if (bigger == NULL) {
      cs_snapshot_dir_free(found, k);
      no_memory = true;
      rc = CS_CLI_FAIL;
      break;
    }
    list = bigger;
    memcpy(list + used, found, k * sizeof *found);
    used += k;
    free(found);
  }
  if (no_memory) cs_cli_error(cs_report_name, "out of host memory");
  if (rc != CS_CLI_OK) {
    cs_snapshot_dir_free(list, used);
    return rc;
  }
  *files = list;
  *count = used;
  return CS_CLI_OK;
}

/* Several files, or a DIR: the job page. OUT defaults to DIR/job.html for one DIR; else it must
 * be given. */
static int cs_report_operands(char **operands, int n, const char *out) {
  bool one_dir = n == 1 && cs_snapshot_dir_is(operands[0]);
  if (out != NULL && out[0] == '\0') {
    cs_cli_error(cs_report_name, "--output '' is not accepted: a file name");
    return CS_CLI_USAGE;
  }
  if (out == NULL && !one_dir) {
    cs_cli_error(cs_report_name, "several FILEs make one page for the job: give it a name with -o OUT.html");
    return CS_CLI_USAGE;
  }
  char **files = NULL;
  size_t count = 0;
  int rc = cs_report_expand(operands, n, &files, &count);
  char *default_out = NULL;
  if (rc == CS_CLI_OK && out == NULL) {
    size_t len = strlen(operands[0]) + sizeof "/job.html";
    default_out = malloc(len);
    if (default_out == NULL) {
      cs_cli_error(cs_report_name, "out of host memory");
      rc = CS_CLI_FAIL;
    } else {
      const char *dir = operands[0];
      snprintf(default_out, len, "%s%sjob.html", dir, dir[strlen(dir) - 1] == '/' ? "" : "/");
      out = default_out;
    }
  }
  if (rc == CS_CLI_OK) rc = cs_report_job(count > INT_MAX ? INT_MAX : (int)count, files, out);
  cs_snapshot_dir_free(files, count);
  free(default_out);
  return rc;
}

int cs_cli_report(int argc, char **argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"allocator-frames", required_argument, NULL, 'A'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char *out_arg = NULL;
  int c;
  while ((c = getopt_long(argc, argv, ":ho:", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_report_help, stdout); return CS_CLI_OK;
    case 'o': out_arg = optarg; break;
    case 'A':
      if (!cs_cli_allocator_frames(cs_report_name, optarg)) return CS_CLI_USAGE;
      break;
    default: return cs_cli_bad_option(cs_report_name, c, argv);
    }
  }
  if (argc - optind > 1 || (argc - optind == 1 && cs_snapshot_dir_is(argv[optind])))
    return cs_report_operands(argv + optind, argc - optind, out_arg);
  if (!cs_cli_operands(cs_report_name, argc, argv, 1, "FILE")) return CS_CLI_USAGE;
  const char *in = argv[optind];
  if (out_arg != NULL && out_arg[0] == '\0') {
    cs_cli_error(cs_report_name, "--output '' is not accepted: a file name");
    return CS_CLI_USAGE;
  }
  char *out = out_arg != NULL ? strdup(out_arg) : cs_report_default_out(in);
  if (out == NULL) {
    cs_cli_error(cs_report_name, "out of host memory");
    return CS_CLI_FAIL;
  }
  if (cs_replace_same_file(in, out)) {
    cs_cli_error(cs_report_name, "%s is the snapshot itself: give another OUT with -o", out);
    free(out);
    return CS_CLI_FAIL;
  }

  /* As summary reads it: a file whose numbers mean nothing is refused (cli/load.h). */
  cs_snapshot_format_t format = CS_SNAPSHOT_JSON;
  size_t in_bytes = 0;
  cs_doc_t *doc = cs_load_snapshot(in, &format, &in_bytes);
  int rc = doc != NULL ? CS_CLI_OK : CS_CLI_FAIL;
  cs_mem_sink_t data = {.data = NULL};
  if (rc == CS_CLI_OK) {
    cs_report_source_t src = {.path = in, .bytes = in_bytes, .format = cs_snapshot_format_name(format)};
    if (cs_report_build(doc, &src, &data) != 0) rc = CS_CLI_FAIL;
  }
  cs_doc_free(doc); /* the data blob holds copies of all it needs */
  if (rc == CS_CLI_OK) {
    const char *title = strrchr(in, '/') != NULL ? strrchr(in, '/') + 1 : in;
    if (cs_report_write(out, title, &data) != 0) rc = CS_CLI_FAIL;
  }
  cs_mem_sink_free(&data);
  free(out);
  return rc;
}

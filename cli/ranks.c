/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap ranks [--json] [--top N] DIR|FILE...`: one row per process of a job (cli/ranks.h). */
#include "cli/ranks.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/load.h"
#include "cli/ranks_job.h"
#include "cli/ranks_print.h"
#include "cli/snapshot_dir.h"
#include "reader/head.h"

static const char cs_ranks_help[] =
    "usage: cudasnap ranks [--json] [--top N] [--full] [--allocator-frames GLOB[,GLOB...]] DIR|FILE...\n"
    "\n"
    "The processes of a job side by side (docs/ranks.md): which rank peaked, by how much more than\n"
    "the others, which ranks hit OOM, which allocation sites make the difference. A DIR stands for\n"
    "every snapshot in it (*.json, *.pickle, *.pkl: cudasnap's and PyTorch's own, such as\n"
    "snapshot_{rank}.pickle or memory_snapshot-rank{r}.pickle). Files are read one at a time;\n"
    "of cudasnap's own, only their head (the first key, cudasnap_summary, a few KB).\n"
    "\n"
    "One row per process (its snapshots share host and pid; each PyTorch file is one process): its\n"
    "latest snapshot (cudasnap.time_us, then dump_number), sorted by the peak's live bytes, highest\n"
    "first:\n"
    "  RANK HOST PID TRIGGER PEAK_ALLOC PEAK_RESERVED PASSTHROUGH PHASE OOM TOP_SITE\n"
    "RANK comes from cudasnap.job.rank, else from the file's name (rank7, _7.pickle), else '?'.\n"
    "PEAK_ALLOC: the requested bytes of the cache's blocks live at the trace's peak (as `summary`);\n"
    "for a file without a trace, those live at the snapshot. PEAK_RESERVED: memory_stats' reserved\n"
    "peak, or the high point of the cache's segments over the trace. PASSTHROUGH: memory passed\n"
    "through the cache (cudaMallocAsync, pools, VMM...) live at the same peak. PHASE: the NVTX /\n"
    "record_function phases open at the peak on the thread that made it, then ' on thread T (NAME)'\n"
    "when several threads have phases ('-': none). OOM: the size the last OOM asked (as `summary`'s\n"
    "\"Tried to allocate\"), when any snapshot of the process was taken at an OOM, counts one\n"
    "(num_ooms) or has an oom trace entry; yes when the size is not known; else no. TOP_SITE: the\n"
    "site with most bytes at the peak.\n"
    "A recovered snapshot whose history dropped events adds a line under the table:\n"
    "  note: rank R (FILE): the live figures are lower bounds: ...\n"
    "Then:\n"
    "  spread: highest / median peak = X (rank R BYTES / rank M BYTES)\n"
    "  sites that differ most at the peak, rank R vs rank M:\n"
    "    +BYTES  SITE  (BYTES vs BYTES)\n"
    "The median is the lower one (for 8 ranks, the 5th highest). Sites are compared among the 32\n"
    "with most bytes at each peak.\n"
    "\n"
    "--json prints one object instead: {\"ranks\": [{\"rank\", \"local_rank\", \"world_size\", \"job_id\",\n"
    "\"host\", \"pid\", \"trigger\", \"peak_allocated\", \"peak_reserved\", \"peak_passthrough\", \"phase\",\n"
    "\"oom\", \"oom_bytes\",\n"
    "\"dropped_events\" (> 0: lower bounds), \"top_site\",\n"
    "\"top_site_bytes\", \"device\", \"snapshots\", \"file\"}], \"spread\", \"highest_rank\",\n"
    "\"median_rank\", \"differing_sites\": [{\"site\", \"bytes_highest\", \"bytes_median\"}]}; unknown\n"
    "values are null.\n"
    "\n"
    "One FILE that is not a snapshot is refused with one line on stderr, exit 1 (as summary); so is\n"
    "a DIR with no snapshot file. Among several files (a DIR, or FILE...), one that is not a\n"
    "snapshot is skipped with one line, \"cudasnap ranks: skipped FILE: problem\", and the others\n"
    "are read.\n"
    "\n"
    "options:\n"
    "  --json       the JSON object\n"
    "  --top N      at most N rows and N differing sites (default: every row, 10 sites)\n"
    "  --full       read every file whole, even cudasnap's, whose head (cudasnap_summary) says the\n"
    "               same in a few KB: a check, and the way to time the full read\n"
    "  --allocator-frames GLOB[,GLOB...]\n"
    "               functions that are part of the program's allocator: a site is the first frame\n"
    "               outside them (as summary's --allocator-frames); every file is then read whole,\n"
    "               since a head's sites were named by the program's own list\n"
    "  -h, --help   this text\n";

static const char cs_ranks_name[] = "ranks";

/* snapshot/snap_summary.h's key (the library's side; the tool does not link the writer) */
#define CS_RANKS_HEAD_KEY "cudasnap_summary"

enum { CS_RANKS_SITES_DEFAULT = 10, CS_RANKS_TOP_MAX = 1000000 };

/* ---- the rank in a file's name --------------------------------------------------------------- */

int64_t cs_ranks_from_name(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  for (size_t i = 0; i + 4 <= len; i++) {
    if (strncasecmp(base + i, "rank", 4) != 0) continue;
    size_t j = i + 4;
    if (j < len && (base[j] == '_' || base[j] == '-' || base[j] == '=')) j++;
    if (j < len && base[j] >= '0' && base[j] <= '9') return strtoll(base + j, NULL, 10);
  }
  size_t end = len;
  while (end > 0 && base[end - 1] >= '0' && base[end - 1] <= '9') end--;
  if (end < len && end > 0 && (base[end - 1] == '_' || base[end - 1] == '-') && len - end < 10)
    return strtoll(base + end, NULL, 10);
  return -1;
}

/* ---- the files ------------------------------------------------------------------------------- */

/* The file's summary from its head (a few KB: cudasnap's files), else from the whole file.
 * 0, -1 without host memory, or 1 when the file could not be read (its line is on stderr). */
static int cs_ranks_summarize(const char *path, bool full, bool *skip, cs_rank_summary_t *s) {
  cs_doc_t *doc = NULL;
  cs_read_error_t err;
  if (!full && cs_read_head(path, CS_RANKS_HEAD_KEY, &doc, &err) == CS_HEAD_FOUND) {
    int rc = cs_rank_summary_of_head(doc, s);
    cs_doc_free(doc);
    if (rc <= 0) return rc;
  }
  doc = *skip ? cs_load_snapshot_or_skip(path, cs_ranks_name, NULL, NULL, skip) : cs_load_snapshot(path, NULL, NULL);
  if (doc == NULL) return 1;
  int rc = cs_rank_summary_of(doc, s);
  cs_doc_free(doc);
  return rc;
}

/* Read one file into the job. CS_CLI_OK, or CS_CLI_FAIL after one line on stderr. With skip (one
 * file of many), a file that is not a snapshot is passed over with its line: CS_CLI_OK. */
static int cs_ranks_read(cs_ranks_job_t *job, const char *path, bool full, bool skip) {
  cs_rank_summary_t s;
  int rc = cs_ranks_summarize(path, full, &skip, &s);
  if (rc > 0) return skip ? CS_CLI_OK : CS_CLI_FAIL;
  if (rc == 0 && s.rank < 0) s.rank = cs_ranks_from_name(path);
  if (rc == 0 && cs_ranks_job_add(job, &s, path) != 0) {
    cs_rank_summary_free(&s);
    rc = -1;
  }
  if (rc != 0) {
    cs_cli_error(cs_ranks_name, "out of host memory");
    return CS_CLI_FAIL;
  }
  return CS_CLI_OK;
}

/* Every snapshot file of a directory (cli/snapshot_dir.h), in name order. */
static int cs_ranks_read_dir(cs_ranks_job_t *job, const char *dir, bool full) {
  char **paths;
  size_t n;
  int err = cs_snapshot_dir_list(dir, &paths, &n);
  if (err == ENOMEM) {
    cs_cli_error(cs_ranks_name, "out of host memory");
    return CS_CLI_FAIL;
  }
  if (err != 0 || n == 0) {
    cs_snapshot_dir_report(dir, err);
    return CS_CLI_FAIL;
  }
  int rc = CS_CLI_OK;
  for (size_t i = 0; i < n && rc == CS_CLI_OK; i++) rc = cs_ranks_read(job, paths[i], full, true);
  cs_snapshot_dir_free(paths, n);
  return rc;
}

/* ---- the subcommand -------------------------------------------------------------------------- */

typedef struct cs_ranks_opts_s {
  bool json;
  bool full; /* --full: read every file whole, even where it has a head */
  uint64_t top; /* 0: every row, CS_RANKS_SITES_DEFAULT sites */
} cs_ranks_opts_t;

/* Returns -1 to go on, else the exit status (--help, a bad option). */
static int cs_ranks_options(int argc, char **argv, cs_ranks_opts_t *o) {
  static const struct option options[] = {{"json", no_argument, NULL, 'j'},
                                          {"top", required_argument, NULL, 't'},
                                          {"full", no_argument, NULL, 'f'},
                                          {"allocator-frames", required_argument, NULL, 'A'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_ranks_help, stdout); return CS_CLI_OK;
    case 'j': o->json = true; break;
    case 'f': o->full = true; break;
    case 'A':
      if (!cs_cli_allocator_frames(cs_ranks_name, optarg)) return CS_CLI_USAGE;
      o->full = true; /* the heads' sites were named without these */
      break;
    case 't':
      if (!cs_cli_parse_count(cs_ranks_name, "--top", optarg, 1, CS_RANKS_TOP_MAX, &o->top)) return CS_CLI_USAGE;
      break;
    default: return cs_cli_bad_option(cs_ranks_name, c, argv);
    }
  }
  if (optind >= argc && !cs_cli_operands(cs_ranks_name, argc, argv, 1, "DIR|FILE...")) return CS_CLI_USAGE;
  return -1;
}

int cs_cli_ranks(int argc, char **argv) {
  cs_ranks_opts_t o = {.json = false, .full = false, .top = 0};
  int status = cs_ranks_options(argc, argv, &o);
  if (status >= 0) return status;
  cs_ranks_job_t job = {0};
  int rc = CS_CLI_OK;
  bool many = argc - optind > 1;
  for (int i = optind; i < argc && rc == CS_CLI_OK; i++) {
    if (cs_snapshot_dir_is(argv[i])) rc = cs_ranks_read_dir(&job, argv[i], o.full);
    else rc = cs_ranks_read(&job, argv[i], o.full, many);
  }
  if (rc == CS_CLI_OK && job.count == 0) {
    cs_cli_error(cs_ranks_name, "none of the files is a snapshot");
    rc = CS_CLI_FAIL;
  }
  if (rc == CS_CLI_OK) {
    cs_ranks_job_sort(&job);
    size_t rows = o.top ? (size_t)o.top : job.count;
    size_t sites = o.top ? (size_t)o.top : CS_RANKS_SITES_DEFAULT;
    if (o.json) {
      int err = cs_ranks_print_json(&job, rows, sites);
      if (err != 0) {
        cs_cli_error(cs_ranks_name, "cannot write: %s", strerror(err));
        rc = CS_CLI_FAIL;
      }
    } else {
      cs_ranks_print_table(&job, rows, sites);
    }
  }
  cs_ranks_job_free(&job);
  return rc;
}

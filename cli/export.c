/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap export --format pprof|perfetto`: a snapshot for the viewers users already have
 * (export/: the formats; this file: options, files in and out). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/load.h"
#include "cli/replace.h"
#include "export/gzip.h"
#include "export/perfetto.h"
#include "export/pprof.h"
#include "memviz/output.h"
#include "memviz/sink.h"

static const char cs_export_help[] =
    "usage: cudasnap export --format pprof [--at peak] [--all-frames] [--allocator-frames GLOBS] [-o OUT] FILE\n"
    "       cudasnap export --format perfetto [--allocator-frames GLOBS] [-o OUT] FILE...\n"
    "\n"
    "Write a snapshot (JSON or pickle) in the format of another viewer (docs/other-viewers.md).\n"
    "\n"
    "pprof: a gzip-compressed profile.proto for `go tool pprof` (-top, -web, -diff_base),\n"
    "  speedscope, Perfetto, Pyroscope. Default OUT: FILE's name without its extension + .pb.gz.\n"
    "  Sample types: inuse_objects/count, inuse_space/bytes (the blocks live at the snapshot;\n"
    "  with --at peak, at each device's peak), alloc_objects/count, alloc_space/bytes (every\n"
    "  allocation of the trace); default inuse_space; requested bytes. One location per frame\n"
    "  (per return address, a line per function inlined there), leaf first; the leaf is the\n"
    "  stack's site, the frame summary, report and ranks name (the\n"
    "  allocator, unwinder, CUDA libraries and framework internals above it are left out unless\n"
    "  --all-frames). Labels: device, stream\n"
    "  (numbers), kind (cache, or the kind of memory passed through: device, pitch, managed,\n"
    "  async, array, vmm_mapped, ipc_imported, graph; unknown for a cudasnap address whose segment\n"
    "  is gone), phase (the innermost NVTX / record_function phase open at the allocation, on the\n"
    "  thread that made it).\n"
    "perfetto: Chrome Trace Event JSON ({\"traceEvents\": [...]}) for ui.perfetto.dev,\n"
    "  chrome://tracing, HTA and TensorBoard; several FILEs (the ranks of a job) become processes\n"
    "  of one trace, on wall-clock microseconds. Default OUT: the first FILE's name without its\n"
    "  extension + .trace.json.gz (gzip-compressed, as an OUT ending in .gz is). Per device: counter tracks of allocated and reserved bytes and of\n"
    "  each kind passed through (at most 4096 points each: per time bucket, the minimum and the\n"
    "  maximum), torch.profiler's [memory] instant events, the phases as nested slices (a track\n"
    "  per thread), instant events for OOMs and for the snapshot.\n"
    "\n"
    "Prints \"wrote OUT: N bytes\". A file whose numbers would mean nothing is refused with one\n"
    "line on stderr, exit 1 (as summary).\n"
    "\n"
    "options:\n"
    "  --format F        pprof or perfetto (required)\n"
    "  --at WHEN         pprof's in-use samples: snapshot (default) or peak\n"
    "  --all-frames      pprof: keep the frames above each stack's site (the allocator's too)\n"
    "  --allocator-frames GLOB[,GLOB...]\n"
    "                    functions that are part of the program's allocator: a site (pprof's\n"
    "                    leaf, Perfetto's OOM site) is the first frame outside them (as\n"
    "                    summary's --allocator-frames)\n"
    "  -o, --output OUT  the file to write (replaced if it exists)\n"
    "  -h, --help        this text\n";

static const char cs_export_name[] = "export";

typedef enum cs_export_format_e { CS_EXPORT_NONE, CS_EXPORT_PPROF, CS_EXPORT_PERFETTO } cs_export_format_t;

typedef struct cs_export_opts_s {
  cs_export_format_t format;
  bool at_peak;
  bool all_frames;
  const char *out;
} cs_export_opts_t;

/* FILE without its snapshot extension, + suffix. NULL without memory. */
static char *cs_export_default_out(const char *in, const char *suffix) {
  static const char *const extensions[] = {".json", ".pickle", ".pkl"};
  size_t len = strlen(in);
  const char *base = strrchr(in, '/');
  base = base != NULL ? base + 1 : in;
  for (size_t i = 0; i < CS_ARRAY_SIZE(extensions); i++) {
    size_t n = strlen(extensions[i]);
    if (len > n && (size_t)(in + len - base) > n && strcmp(in + len - n, extensions[i]) == 0) {
      len -= n;
      break;
    }
  }
  size_t slen = strlen(suffix);
  char *out = malloc(len + slen + 1);
  if (out != NULL) {
    memcpy(out, in, len);
    memcpy(out + len, suffix, slen + 1);
  }
  return out;
}

/* ---- pprof ----------------------------------------------------------------------------------- */

static int cs_export_pprof_to(cs_sink_t sink, const cs_doc_t *doc, const cs_export_opts_t *o) {
  cs_gzip_sink_t *gz = cs_gzip_sink_create(sink);
  if (gz == NULL) return ENOMEM;
  int err = cs_pprof_write(doc, o->at_peak, o->all_frames, cs_gzip_sink(gz));
  int finished = cs_gzip_sink_finish(gz);
  return err != 0 ? err : finished;
}

/* ---- perfetto -------------------------------------------------------------------------------- */

static int cs_export_perfetto_events(cs_sink_t sink, char **paths, int npaths, bool *bad_input) {
  cs_perfetto_t *pf = cs_perfetto_begin(sink);
  if (pf == NULL) return ENOMEM;
  int err = 0;
  for (int i = 0; i < npaths && err == 0 && !*bad_input; i++) {
    cs_doc_t *doc = cs_load_snapshot(paths[i], NULL, NULL);
    if (doc == NULL) {
      *bad_input = true;
      break;
    }
    err = cs_perfetto_add(pf, doc, paths[i], i);
    cs_doc_free(doc);
  }
  int finished = cs_perfetto_finish(pf);
  return err != 0 ? err : finished;
}

/* Every input, one after the other: only one model is held at a time. gzip-compressed when OUT
 * ends in .gz (the default name does: Perfetto, chrome://tracing, HTA and TensorBoard read
 * .json.gz, and no *.json glob of the inputs catches it). */
static int cs_export_perfetto_to(cs_sink_t sink, char **paths, int npaths, bool *bad_input, bool gzip) {
  cs_gzip_sink_t *gz = gzip ? cs_gzip_sink_create(sink) : NULL;
  if (gzip && gz == NULL) return ENOMEM;
  int err = cs_export_perfetto_events(gz != NULL ? cs_gzip_sink(gz) : sink, paths, npaths, bad_input);
  int finished = gz != NULL ? cs_gzip_sink_finish(gz) : 0;
  return err != 0 ? err : finished;
}

/* ---- the subcommand -------------------------------------------------------------------------- */

/* Returns -1 to go on, else the exit status (--help, a bad option). */
static int cs_export_options(int argc, char **argv, cs_export_opts_t *o) {
  static const struct option options[] = {{"format", required_argument, NULL, 'f'},
                                          {"at", required_argument, NULL, 'a'},
                                          {"all-frames", no_argument, NULL, 'F'},
                                          {"allocator-frames", required_argument, NULL, 'A'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, ":ho:", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_export_help, stdout); return CS_CLI_OK;
    case 'o': o->out = optarg; break;
    case 'F': o->all_frames = true; break;
    case 'A':
      if (!cs_cli_allocator_frames(cs_export_name, optarg)) return CS_CLI_USAGE;
      break;
    case 'f':
      if (strcmp(optarg, "pprof") == 0) o->format = CS_EXPORT_PPROF;
      else if (strcmp(optarg, "perfetto") == 0) o->format = CS_EXPORT_PERFETTO;
      else {
        cs_cli_error(cs_export_name, "--format '%s' is not accepted: pprof or perfetto", optarg);
        return CS_CLI_USAGE;
      }
      break;
    case 'a':
      if (strcmp(optarg, "peak") == 0) o->at_peak = true;
      else if (strcmp(optarg, "snapshot") == 0) o->at_peak = false;
      else {
        cs_cli_error(cs_export_name, "--at '%s' is not accepted: snapshot or peak", optarg);
        return CS_CLI_USAGE;
      }
      break;
    default: return cs_cli_bad_option(cs_export_name, c, argv);
    }
  }
  if (o->format == CS_EXPORT_NONE) {
    cs_cli_error(cs_export_name, "--format is required: pprof or perfetto");
    return CS_CLI_USAGE;
  }
  if ((o->at_peak || o->all_frames) && o->format != CS_EXPORT_PPROF) {
    cs_cli_error(cs_export_name, "%s is for --format pprof only", o->at_peak ? "--at" : "--all-frames");
    return CS_CLI_USAGE;
  }
  if (o->out != NULL && o->out[0] == '\0') {
    cs_cli_error(cs_export_name, "--output '' is not accepted: a file name");
    return CS_CLI_USAGE;
  }
  if (o->format == CS_EXPORT_PPROF ? !cs_cli_operands(cs_export_name, argc, argv, 1, "FILE")
                                   : optind >= argc && !cs_cli_operands(cs_export_name, argc, argv, 1, "FILE..."))
    return CS_CLI_USAGE;
  return -1;
}

int cs_cli_export(int argc, char **argv) {
  cs_export_opts_t o = {.format = CS_EXPORT_NONE};
  int status = cs_export_options(argc, argv, &o);
  if (status >= 0) return status;
  char **inputs = argv + optind;
  int ninputs = argc - optind;
  bool pprof = o.format == CS_EXPORT_PPROF;
  char *out = o.out != NULL ? strdup(o.out) : cs_export_default_out(inputs[0], pprof ? ".pb.gz" : ".trace.json.gz");
  if (out == NULL) {
    cs_cli_error(cs_export_name, "out of host memory");
    return CS_CLI_FAIL;
  }
  for (int i = 0; i < ninputs; i++) {
    if (cs_replace_same_file(inputs[i], out)) {
      cs_cli_error(cs_export_name, "%s is a snapshot being read: give another OUT with -o", out);
      free(out);
      return CS_CLI_FAIL;
    }
  }
  /* pprof reads its one input before anything is created; perfetto streams its inputs through */
  cs_doc_t *doc = pprof ? cs_load_snapshot(inputs[0], NULL, NULL) : NULL;
  if (pprof && doc == NULL) {
    free(out);
    return CS_CLI_FAIL;
  }
  cs_output_t file;
  int err = cs_output_open(&file, out);
  cs_fd_sink_t *fd = err == 0 ? malloc(sizeof *fd) : NULL;
  if (err == 0 && fd == NULL) err = ENOMEM;
  bool bad_input = false;
  if (err == 0) {
    cs_fd_sink_init(fd, file.fd);
    err = pprof ? cs_export_pprof_to(cs_fd_sink(fd), doc, &o)
                : cs_export_perfetto_to(cs_fd_sink(fd), inputs, ninputs, &bad_input,
                                        strlen(out) > 3 && strcmp(out + strlen(out) - 3, ".gz") == 0);
    int flushed = cs_fd_sink_flush(fd);
    if (err == 0) err = flushed;
  }
  cs_doc_free(doc);
  if (err == 0 && !bad_input) err = cs_replace_commit(&file, out);
  else if (file.fd >= 0) cs_output_abort(&file);
  int rc = CS_CLI_OK;
  if (bad_input) {
    rc = CS_CLI_FAIL; /* cs_load_snapshot said why */
  } else if (err != 0) {
    if (err == ENOMEM) cs_cli_error(cs_export_name, "out of host memory");
    else cs_cli_message("%s: cannot write: %s", out, strerror(err));
    rc = CS_CLI_FAIL;
  } else {
    printf("wrote %s: %zu bytes\n", out, fd->total);
  }
  free(fd);
  free(out);
  return rc;
}

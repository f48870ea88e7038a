/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap convert IN OUT`: JSON <-> pickle, the content unchanged (model/write.h). OUT is
 * written under a temporary name and renamed into place, so it is never left half-written, and an
 * existing OUT is replaced, as every output of the tool is (docs/tool.md), never IN itself. */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/load.h"
#include "cli/progress.h"
#include "cli/replace.h"
#include "memviz/output.h"
#include "memviz/sink.h"
#include "model/write.h"

static const char cs_convert_help[] =
    "usage: cudasnap convert [--format json|pickle] [--force] IN OUT\n"
    "\n"
    "Write the snapshot IN (JSON or pickle) to OUT in the other format, or the same one: the\n"
    "content is unchanged, and reading OUT back gives what reading IN gives. The format is\n"
    "pickle when OUT ends in .pickle or .pkl, else JSON; --format overrides that. Pickles use\n"
    "protocol 2 and the opcodes every memory_viz viewer reads, with equal frame lists shared,\n"
    "so a pickle made from a JSON snapshot is several times smaller. Numbers keep their type:\n"
    "an integer stays an integer and a float a float (0.0 stays 0.0), so Python loads the same\n"
    "objects from IN and OUT.\n"
    "\n"
    "OUT is written to a temporary file in its directory and renamed into place: it is never\n"
    "left half-written, and an existing OUT is replaced (as by every subcommand that writes a\n"
    "file), but never IN itself. On success, one line on stdout:\n"
    "  wrote OUT: json|pickle, N bytes\n"
    "\n"
    "options:\n"
    "  --format json|pickle   the output format, whatever OUT's extension\n"
    "  --force                accepted for older scripts: OUT is always replaced\n"
    "  -h, --help             this text\n";

static const char cs_convert_name[] = "convert";

static bool cs_convert_has_suffix(const char *path, const char *suffix) {
  size_t n = strlen(path), m = strlen(suffix);
  return n >= m && strcmp(path + n - m, suffix) == 0;
}

static void cs_convert_tick(void *ctx, uint64_t values) {
  cs_progress_update(ctx, values);
}

/* Write doc to path. Returns 0, or -1 after reporting why (nothing is left at path). */
static int cs_convert_write(const cs_doc_t *doc, uint64_t values, const char *path, cs_emit_format_t format,
                            size_t input_bytes) {
  cs_output_t out;
  int err = cs_output_open(&out, path);
  cs_fd_sink_t *sink = err == 0 ? malloc(sizeof *sink) : NULL;
  if (err == 0 && sink == NULL) err = ENOMEM;
  cs_emitter_t *e = NULL;
  if (err == 0) {
    cs_fd_sink_init(sink, out.fd);
    e = cs_emitter_create(format, cs_fd_sink(sink), 2);
    if (e == NULL) err = ENOMEM;
  }
  if (err == 0) {
    char what[96];
    snprintf(what, sizeof what, "writing %s", path);
    cs_progress_t progress;
    cs_progress_start(&progress, what, input_bytes, values);
    err = cs_doc_write(doc, e, format, cs_convert_tick, &progress);
    cs_progress_end(&progress);
    int flushed = cs_fd_sink_flush(sink);
    if (err == 0) err = flushed;
  }
  if (err == 0) err = cs_replace_commit(&out, path);
  else if (out.fd >= 0) cs_output_abort(&out);
  if (err != 0) {
    cs_cli_message("%s: cannot write: %s", path, strerror(err));
  } else {
    printf("wrote %s: %s, %zu bytes\n", out.final_path, format == CS_EMIT_PICKLE ? "pickle" : "json", sink->total);
  }
  free(sink);
  return err != 0 ? -1 : 0;
}

/* A snapshot the writer cannot take, or one whose shared values would expand without bound (a
 * hostile pickle's "billion laughs"): why, in *why. Real snapshots write out at most a few values
 * per input byte even as JSON from a pickle whose frame lists are all shared; the bound allows 64. */
static bool cs_convert_refuse(const cs_doc_extent_t *x, size_t input_bytes, char *why, size_t why_len) {
  uint64_t limit = (uint64_t)input_bytes * 64 + ((uint64_t)1 << 20);
  if (x->depth > CS_EMIT_MAX_DEPTH) {
    snprintf(why, why_len, "values nest %u deep; snapshots nest far less, and the writer takes at most %d",
             x->depth, CS_EMIT_MAX_DEPTH);
  } else if (x->nan) {
    snprintf(why, why_len, "holds a NaN (from a pickle's float), which JSON cannot write and JSON.parse never makes");
  } else if (x->values > limit) {
    snprintf(why, why_len,
             "a %zu-byte file whose shared values expand to more than %" PRIu64 " values when written out",
             input_bytes, limit);
  } else {
    return false;
  }
  return true;
}

int cs_cli_convert(int argc, char **argv) {
  static const struct option options[] = {{"format", required_argument, NULL, 'f'},
                                          {"force", no_argument, NULL, 'F'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char *format_name = NULL;
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_convert_help, stdout); return CS_CLI_OK;
    case 'f': format_name = optarg; break;
    case 'F': break; /* the rule was "refuse unless --force" before it became "replace" */
    default: return cs_cli_bad_option(cs_convert_name, c, argv);
    }
  }
  if (format_name != NULL && strcmp(format_name, "json") != 0 && strcmp(format_name, "pickle") != 0) {
    cs_cli_error(cs_convert_name, "--format %s is not accepted: json or pickle", format_name);
    return CS_CLI_USAGE;
  }
  if (!cs_cli_operands(cs_convert_name, argc, argv, 2, "IN OUT")) return CS_CLI_USAGE;
  const char *in = argv[optind], *out = argv[optind + 1];
  bool pickle = format_name != NULL ? strcmp(format_name, "pickle") == 0
                                    : cs_convert_has_suffix(out, ".pickle") || cs_convert_has_suffix(out, ".pkl");
  if (cs_replace_same_file(in, out)) {
    cs_cli_error(cs_convert_name, "%s is the snapshot being read: give another OUT", out);
    return CS_CLI_FAIL;
  }

  size_t input_bytes = 0;
  cs_doc_t *doc = cs_load_parse(in, NULL, &input_bytes);
  if (doc == NULL) return CS_CLI_FAIL;
  char why[160];
  int rc = CS_CLI_OK;
  cs_doc_extent_t extent;
  if (cs_doc_extent(doc, &extent) != 0) {
    cs_cli_message("%s: cannot convert: out of host memory", in);
    rc = CS_CLI_FAIL;
  } else if (cs_convert_refuse(&extent, input_bytes, why, sizeof why)) {
    cs_cli_message("%s: cannot convert: %s", in, why);
    rc = CS_CLI_FAIL;
  } else if (cs_convert_write(doc, extent.values, out, pickle ? CS_EMIT_PICKLE : CS_EMIT_JSON,
                              input_bytes) != 0) {
    rc = CS_CLI_FAIL;
  }
  cs_doc_free(doc);
  return rc;
}

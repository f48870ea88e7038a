/* SPDX-License-Identifier: Apache-2.0 */
/* The cudasnap tool (docs/design.md section 6): one entry point per subcommand, dispatched by
 * main.c, and the conventions they share.
 *
 * Output: results on stdout; every problem is one line on stderr. A file that cannot be read or
 * parsed is reported as "FILE: byte N: problem" (load.h); anything else as
 * "cudasnap SUBCOMMAND: problem". Exit statuses are the CS_CLI_* values below; `run` passes the
 * program's own status through. */
#ifndef CS_CLI_H
#define CS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "common/cs_compiler.h"

enum {
  CS_CLI_OK = 0,
  CS_CLI_FAIL = 1,      /* the input was bad, a check found problems, no snapshot came */
  CS_CLI_USAGE = 2,     /* an unknown option, a bad option value, a missing argument */
  CS_CLI_NO_EXEC = 127, /* run: the program could not be started (the shell's status for it) */
};

/* Each takes the subcommand's own argv: argv[0] is the subcommand's name. */
int cs_cli_run(int argc, char **argv);
int cs_cli_dump(int argc, char **argv);
int cs_cli_summary(int argc, char **argv);
int cs_cli_convert(int argc, char **argv);
int cs_cli_check(int argc, char **argv);
int cs_cli_diff(int argc, char **argv);
int cs_cli_report(int argc, char **argv);
int cs_cli_recover(int argc, char **argv);
int cs_cli_export(int argc, char **argv);
int cs_cli_ranks(int argc, char **argv);
int cs_cli_top(int argc, char **argv);
int cs_cli_metrics(int argc, char **argv);

/* "cudasnap SUBCOMMAND: ..." and a newline on stderr. What the format expands to is made safe for
 * a terminal first (common/cs_text.h: valid UTF-8, control characters replaced by '?'), since
 * messages quote names that came from a program or a file. */
CS_PRINTF(2, 3) void cs_cli_error(const char *subcommand, const char *fmt, ...);

/* The same line without the prefix: "FILE: problem" (load.h's form). */
CS_PRINTF(1, 2) void cs_cli_message(const char *fmt, ...);

/* ------------------------------------------------------------------------------------------------
 * Option parsing (args.c), around getopt_long. Every subcommand's option string starts with ':'
 * (getopt then reports a missing value as ':' instead of printing its own message).
 * ---------------------------------------------------------------------------------------------- */

/* Report what getopt_long just rejected ('?': unknown option, ':': missing value) as one line
 * naming the option; returns CS_CLI_USAGE. */
int cs_cli_bad_option(const char *subcommand, int rc, char **argv);

/* Exactly `want` operands must remain after the options (argv[optind...]); otherwise one line
 * saying what is missing or extra. `names` describes them for that line ("FILE", "IN OUT"). */
bool cs_cli_operands(const char *subcommand, int argc, char **argv, int want, const char *names);

/* A decimal count for option `option` in [min, max]; otherwise one line saying what is accepted. */
bool cs_cli_parse_count(const char *subcommand, const char *option, const char *text, uint64_t min,
                        uint64_t max, uint64_t *out);

/* --allocator-frames GLOB[,GLOB...]: the globs join the tool's list of allocator frames
 * (memviz/allocator_frames.h), which every file read is named by, besides the file's own.
 * Otherwise one line saying which glob is wrong and why. */
bool cs_cli_allocator_frames(const char *subcommand, const char *text);

/* The options of a subcommand whose one option is a count (`--NAME N`, 1..max) besides -h/--help:
 * *count keeps its default unless given. Returns -1 to go on with the operands at argv[optind],
 * otherwise the status to exit with (CS_CLI_OK after printing help, CS_CLI_USAGE). */
int cs_cli_count_options(const char *subcommand, const char *help, int argc, char **argv,
                         const char *name, uint64_t max, uint64_t *count);

#endif

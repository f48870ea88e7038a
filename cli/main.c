/* SPDX-License-Identifier: Apache-2.0 */
/* cudasnap: launch a program under libcudasnap.so, ask a running one for a snapshot, and read,
 * check, convert and compare snapshot files. main() only picks the subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/safe_stdout.h"

typedef struct cs_cli_command_s {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *synopsis;    /* the command and its arguments */
  const char *description; /* what it does, in the column beside */
} cs_cli_command_t;

/* The width of the synopsis column of the command list. */
enum { CS_CLI_SYNOPSIS_WIDTH = 40 };

static const cs_cli_command_t cs_cli_commands[] = {
    {"run", cs_cli_run, "run [OPTIONS] -- PROGRAM [ARGS...]",
     "run a program with cudasnap preloaded"},
    {"dump", cs_cli_dump, "dump [--timeout S] PID|--all",
     "ask a running program (or every one) for a snapshot"},
    {"summary", cs_cli_summary, "summary [--top N] FILE",
     "memory table, top sites, leaks"},
    {"convert", cs_cli_convert, "convert [--format F] [--force] IN OUT",
     "JSON <-> pickle"},
    {"check", cs_cli_check, "check FILE",
     "does the viewer load and render it?"},
    {"diff", cs_cli_diff, "diff [--top N] A B",
     "live bytes per allocation site, A -> B"},
    {"report", cs_cli_report, "report [-o OUT.html] FILE",
     "one self-contained HTML page, no network"},
    {"report", cs_cli_report, "report -o OUT.html FILE FILE...",
     "one page for a job's processes"},
    {"export", cs_cli_export, "export --format F [-o OUT] FILE...",
     "for pprof (F=pprof) or Perfetto (F=perfetto)"},
    {"ranks", cs_cli_ranks, "ranks [--json] [--top N] DIR|FILE...",
     "every rank of a job: peaks, OOMs, sites"},
    {"top", cs_cli_top, "top [--once] [--json] [--interval S]",
     "the profiled processes' GPU memory, live"},
    {"metrics", cs_cli_metrics, "metrics [--listen ADDR:PORT]",
     "a Prometheus exporter of the same"},
    {"recover", cs_cli_recover, "recover [-o SNAPSHOT] RECORDING",
     "a snapshot from a recording file (kill -9)"},
};

static void cs_cli_usage(FILE *out) {
  fputs("usage: cudasnap COMMAND [ARGS...]\n"
        "\n"
        "cudasnap shows where the GPU memory of a CUDA program goes. Snapshots open at\n"
        "https://pytorch.org/memory_viz; this tool reads and writes them too (JSON or pickle),\n"
        "and `cudasnap report` makes one an HTML page that opens offline, in any browser.\n"
        "\n"
        "commands:\n",
        out);
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_cli_commands); i++) 
    fprintf(out, "  %-*s%s\n", CS_CLI_SYNOPSIS_WIDTH, cs_cli_commands[i].synopsis, cs_cli_commands[i].description);
  fputs("\n"
        "`cudasnap COMMAND --help` describes each one and its output.\n"
        "\n"
        "exit status: 0 success; 1 failure (unreadable input, a check that is not clean, no\n"
        "snapshot); 2 usage error (unknown option, bad value, missing argument); `run` exits with\n"
        "the program's status, or 127 when the program cannot be started.\n"
        "\n"
        "options: -h, --help   this text;   --version   print the version\n",
        out);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    cs_cli_usage(stderr);
    return CS_CLI_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
    cs_cli_usage(stdout);
    return CS_CLI_OK;
  }
  if (strcmp(name, "--version") == 0) {
    printf("cudasnap %s\n", CS_VERSION_STRING);
    return CS_CLI_OK;
  }
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_cli_commands); i++) {
    if (strcmp(name, cs_cli_commands[i].name) != 0) continue;
    /* What a subcommand prints quotes names from programs: stdout is filtered for a terminal
     * (cli/safe_stdout.h), but for top's screen, which draws its own escape sequences and makes
     * each of its texts safe itself (live_rows.c). */
    if (strcmp(name, "top") != 0) cs_safe_stdout_install();
    return cs_cli_commands[i].fn(argc - 1, argv + 1);
  }
  cs_cli_message("cudasnap: unknown command '%s' (cudasnap --help lists them)", name);
  return CS_CLI_USAGE;
}

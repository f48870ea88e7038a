/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap run [OPTIONS] -- PROGRAM [ARGS...]`: PROGRAM with libcudasnap.so preloaded and the
 * CUDASNAP_* variables the options stand for. The tool execs the program in its own place, so the
 * program keeps the pid the user sees, its arguments exactly, and its exit status. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/env_options.h"
#include "cli/libpath.h"
#include "common/cs_compiler.h"

static const char cs_run_help[] =
    "usage: cudasnap run [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Run PROGRAM with libcudasnap.so preloaded: LD_PRELOAD gets the library first, and keeps\n"
    "what it held. The program then runs in this process (its pid, arguments and exit status are\n"
    "its own) and writes snapshots at exit, on the signal and at out-of-memory. Each option sets\n"
    "one variable (docs/configuration.md lists every variable and its values); anything else\n"
    "set in the environment passes through. A value the library would not accept is refused\n"
    "here, with exit status 2. A program that never uses CUDA gets one line saying so at its\n"
    "exit, and no snapshot; one whose CUDA calls all failed (no driver found) gets one line\n"
    "naming the first call that failed and why.\n"
    "\n"
    "options:\n"
    "  -o, --output PATTERN   CUDASNAP_OUTPUT: snapshot path, default cudasnap-%e-%p-%n-%t.json\n"
    "                         (%e executable, %p pid, %h host, %r rank, %n dump number, %t trigger)\n"
    "  --format json|pickle   CUDASNAP_FORMAT (default: from the extension)\n"
    "  --stacks all|native|python|none  CUDASNAP_STACKS\n"
    "  --depth N              CUDASNAP_STACK_DEPTH: frames per stack, 1-256 (default 32)\n"
    "  --max-entries N        CUDASNAP_MAX_ENTRIES: trace events kept (default 100000; 0: none)\n"
    "  --free sync|fence|stream  CUDASNAP_FREE: when a freed block is reused (default sync)\n"
    "  --no-cache             CUDASNAP_CACHE=0: record only, every allocation goes to the driver\n"
    "  --no-nvtx              CUDASNAP_NVTX=0: the program's NVTX ranges are not recorded as phases\n"
    "  --no-argv              CUDASNAP_ARGV=0: the program's command line (tokens, passwords)\n"
    "                         is left out of its snapshots and recording file\n"
    "  --signal USR1|USR2|N|none  CUDASNAP_SIGNAL: the snapshot signal (default USR1)\n"
    "  --record PATH          CUDASNAP_RECORD: keep the history, stacks and module map in this\n"
    "                         file as the program runs (%e %p %h %r expand), so that even after\n"
    "                         kill -9 `cudasnap recover PATH` makes the snapshot\n"
    "  -h, --help             this text\n"
    "\n"
    "exit status: the program's; 2 for a bad option or when libcudasnap.so is not found next to\n"
    "this tool (../lib or ../interpose); 127 when the program cannot be started.\n";

static const char cs_run_name[] = "run";

/* The options that stand for a variable, in the order of the help text. */
typedef struct cs_run_option_s {
  const char *name;     /* long option */
  int val;              /* getopt_long's code for it */
  const char *variable; /* set to the option's value */
} cs_run_option_t;

static const cs_run_option_t cs_run_options[] = {
    {"output", 'o', "CUDASNAP_OUTPUT"},        {"format", 'f', "CUDASNAP_FORMAT"},
    {"stacks", 's', "CUDASNAP_STACKS"},        {"depth", 'd', "CUDASNAP_STACK_DEPTH"},
    {"max-entries", 'm', "CUDASNAP_MAX_ENTRIES"}, {"free", 'F', "CUDASNAP_FREE"},
    {"signal", 'S', "CUDASNAP_SIGNAL"},        {"record", 'R', "CUDASNAP_RECORD"},
};

enum { CS_RUN_NO_CACHE = 'C', CS_RUN_NO_NVTX = 'N', CS_RUN_NO_ARGV = 'A' };

static const cs_run_option_t *cs_run_option(int val) {
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_run_options); i++) {
    if (cs_run_options[i].val == val) return &cs_run_options[i];
  }
  return NULL;
}

/* LD_PRELOAD with the library first. Returns 0, or -1 after reporting. */
static int cs_run_set_preload(void) {
  char library[2 * PATH_MAX];
  if (cs_libpath_find(library, sizeof library) != 0) {
    cs_cli_error(cs_run_name, "libcudasnap.so not found: looked for %s", library);
    return -1;
  }
  const char *existing = getenv("LD_PRELOAD");
  size_t len = strlen(library) + 1 + (existing != NULL ? strlen(existing) : 0) + 1;
  char *value = malloc(len);
  int rc = -1;
  if (value != NULL) {
    /* ld.so takes ':' or ' ' between entries */
    snprintf(value, len, "%s%s%s", library, existing != NULL && existing[0] ? ":" : "", existing ? existing : "");
    rc = setenv("LD_PRELOAD", value, 1);
    free(value);
  }
  if (rc != 0) cs_cli_error(cs_run_name, "cannot set LD_PRELOAD: out of host memory");
  return rc;
}

int cs_cli_run(int argc, char **argv) {
  struct option longopts[CS_ARRAY_SIZE(cs_run_options) + 5];
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_run_options); i++) {
    longopts[i] = (struct option){cs_run_options[i].name, required_argument, NULL, cs_run_options[i].val};
  }
  longopts[CS_ARRAY_SIZE(cs_run_options)] = (struct option){"no-cache", no_argument, NULL, CS_RUN_NO_CACHE};
  longopts[CS_ARRAY_SIZE(cs_run_options) + 1] = (struct option){"no-nvtx", no_argument, NULL, CS_RUN_NO_NVTX};
  longopts[CS_ARRAY_SIZE(cs_run_options) + 2] = (struct option){"no-argv", no_argument, NULL, CS_RUN_NO_ARGV};
  longopts[CS_ARRAY_SIZE(cs_run_options) + 3] = (struct option){"help", no_argument, NULL, 'h'};
  longopts[CS_ARRAY_SIZE(cs_run_options) + 4] = (struct option){NULL, 0, NULL, 0};

  /* Options end at the program's name ('+'), so `run prog -o x` leaves -o to prog, as `--` does. */
  int c;
  while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
    if (c == 'h') {
      fputs(cs_run_help, stdout);
      return CS_CLI_OK;
    }
    if (c == CS_RUN_NO_CACHE || c == CS_RUN_NO_NVTX || c == CS_RUN_NO_ARGV) {
      setenv(c == CS_RUN_NO_CACHE ? "CUDASNAP_CACHE" : c == CS_RUN_NO_NVTX ? "CUDASNAP_NVTX" : "CUDASNAP_ARGV", "0", 1);
      continue;
    }
    const cs_run_option_t *option = cs_run_option(c);
    if (option == NULL) return cs_cli_bad_option(cs_run_name, c, argv);
    const char *accepted;
    if (!cs_env_option_accepted(option->variable, optarg, &accepted)) {
      cs_cli_error(cs_run_name, "--%s '%s' is not accepted: %s", option->name, optarg, accepted);
      return CS_CLI_USAGE;
    }
    setenv(option->variable, optarg, 1);
  }
  if (optind >= argc) {
    cs_cli_error(cs_run_name, "expected the program to run (cudasnap run --help)");
    return CS_CLI_USAGE;
  }
  if (cs_run_set_preload() != 0) return CS_CLI_USAGE;
  char pid[32]; /* the program keeps this pid: at its exit the library knows it is the one run */
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  setenv("_CUDASNAP_RUN_PID", pid, 1);
  execvp(argv[optind], argv + optind);
  cs_cli_error(cs_run_name, "cannot run %s: %s", argv[optind], strerror(errno));
  return CS_CLI_NO_EXEC;
}

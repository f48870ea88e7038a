/* `cudasnap dump PID`: ask a running program for a snapshot. The library writes one when its
 * CUDASNAP_SIGNAL arrives (docs/design.md section 4); this sends the signal and waits for the
 * file. */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/dump_pattern.h"
#include "cli/env_options.h"
#include "cli/proc.h"

static const char cs_dump_help[] =
    "usage: cudasnap dump [--timeout SECONDS] PID\n"
    "\n"
    "Ask the running program PID, started under cudasnap (cudasnap run, or LD_PRELOAD), for a\n"
    "snapshot now; the program goes on. This reads the program's CUDASNAP_SIGNAL, CUDASNAP_DUMP_ON\n"
    "and CUDASNAP_OUTPUT from its environment, sends the signal, and waits for the new file (the\n"
    "output pattern with %t = signal, from the program's current directory). Output, on stdout:\n"
    "  wrote PATH\n"
    "Otherwise one line on stderr says why not: PID does not have libcudasnap loaded; its signal\n"
    "trigger is off; it has not started cudasnap yet (no CUDA call so far: the signal would end\n"
    "it, so none is sent); or no file appeared in time.\n"
    "\n"
    "exit status: 0 when a snapshot was written, 1 otherwise.\n"
    "\n"
    "options:\n"
    "  --timeout SECONDS   how long to wait for the file (default 30)\n"
    "  -h, --help          this text\n";

enum { CS_DUMP_TIMEOUT_DEFAULT = 30, CS_DUMP_TIMEOUT_MAX = 24 * 3600 };

static const char cs_dump_name[] = "dump";

/* "USR1" for the usual signals, else the number, as CUDASNAP_SIGNAL spells them. */
static void cs_dump_signal_name(int sig, char *buf, size_t len) {
  if (sig == SIGUSR1) snprintf(buf, len, "USR1");
  else if (sig == SIGUSR2) snprintf(buf, len, "USR2");
  else snprintf(buf, len, "%d", sig);
}

static int cs_dump_proc_error(pid_t pid, const char *what, int err) {
  if (err == ENOENT || err == ESRCH) cs_cli_error(cs_dump_name, "no process %ld", (long)pid);
  else cs_cli_error(cs_dump_name, "cannot read /proc/%ld/%s: %s", (long)pid, what, strerror(err));
  return CS_CLI_FAIL;
}

/* The options the library inside pid runs with. Returns 0, or an exit status after reporting. */
static int cs_dump_options(pid_t pid, cs_options_t *opts) {
  char **env;
  size_t count;
  int err = cs_proc_environ(pid, &env, &count);
  if (err != 0) return cs_dump_proc_error(pid, "environ", err);
  int rc = cs_env_options_read((const char *const *)env, count, opts);
  free(env);
  if (rc != 0) {
    cs_cli_error(cs_dump_name, "out of host memory");
    return CS_CLI_FAIL;
  }
  return 0;
}

/* May pid be sent its dump signal? Returns 0, or an exit status after saying why not. */
static int cs_dump_precheck(pid_t pid, const cs_options_t *opts) {
  bool mapped;
  int err = cs_proc_has_library(pid, "libcudasnap", &mapped);
  if (err != 0) return cs_dump_proc_error(pid, "maps", err);
  if (!mapped) {
    cs_cli_error(cs_dump_name, "process %ld does not have libcudasnap loaded (start it with cudasnap run)",
                 (long)pid);
    return CS_CLI_FAIL;
  }
  if (opts->signal == 0 || (opts->dump_on & CS_DUMP_ON_SIGNAL) == 0) {
    cs_cli_error(cs_dump_name, "process %ld has snapshots on signal turned off (its %s)", (long)pid,
                 opts->signal == 0 ? "CUDASNAP_SIGNAL is none" : "CUDASNAP_DUMP_ON leaves out signal");
    return CS_CLI_FAIL;
  }
  bool caught;
  err = cs_proc_catches(pid, opts->signal, &caught);
  if (err != 0) return cs_dump_proc_error(pid, "status", err);
  if (!caught) {
    /* The library installs its handler at the program's first CUDA call; until then the signal's
     * default action applies, which for USR1 ends the program. */
    char name[16];
    cs_dump_signal_name(opts->signal, name, sizeof name);
    cs_cli_error(cs_dump_name,
                 "process %ld has not started cudasnap yet (no CUDA call so far), and signal %s would end "
                 "it; nothing sent",
                 (long)pid, name);
    return CS_CLI_FAIL;
  }
  return 0;
}

/* The files matching pattern now (sorted); an empty list when there are none. */
static void cs_dump_glob(const char *pattern, glob_t *g) {
  memset(g, 0, sizeof *g);
  if (glob(pattern, 0, NULL, g) != 0) {
    globfree(g);
    memset(g, 0, sizeof *g);
  }
}

static int cs_dump_strcmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file matching now that did not match before, or NULL. */
static const char *cs_dump_new_file(const glob_t *before, const glob_t *now) {
  for (size_t i = 0; i < now->gl_pathc; i++) {
    if (before->gl_pathc == 0 ||
        bsearch(&now->gl_pathv[i], before->gl_pathv, before->gl_pathc, sizeof(char *), cs_dump_strcmp) == NULL)
      return now->gl_pathv[i];
  }
  return NULL;
}

static double cs_dump_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Signal pid and wait for a new file matching pattern. */
static int cs_dump_signal_and_wait(pid_t pid, int sig, const char *pattern, uint64_t timeout) {
  glob_t before, now;
  cs_dump_glob(pattern, &before);
  if (kill(pid, sig) != 0) {
    cs_cli_error(cs_dump_name, "cannot signal process %ld: %s", (long)pid, strerror(errno));
    globfree(&before);
    return CS_CLI_FAIL;
  }
  int rc = -1;
  double deadline = cs_dump_now() + (double)timeout;
  while (rc < 0) {
    /* The library writes under a temporary name and renames: a file that matches is complete. */
    cs_dump_glob(pattern, &now);
    const char *file = cs_dump_new_file(&before, &now);
    if (file != NULL) {
      printf("wrote %s\n", file);
      rc = CS_CLI_OK;
    } else if (kill(pid, 0) != 0 && errno == ESRCH) {
      cs_cli_error(cs_dump_name, "process %ld ended before a snapshot appeared (looked for %s)", (long)pid,
                   pattern);
      rc = CS_CLI_FAIL;
    } else if (cs_dump_now() >= deadline) {
      cs_cli_error(cs_dump_name,
                   "no snapshot from process %ld within %llu s (looked for %s); it may have no CUDA "
                   "allocations yet, or cannot write there",
                   (long)pid, (unsigned long long)timeout, pattern);
      rc = CS_CLI_FAIL;
    } else {
      nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000}, NULL);
    }
    globfree(&now);
  }
  globfree(&before);
  return rc;
}

int cs_cli_dump(int argc, char **argv) {
  uint64_t timeout = CS_DUMP_TIMEOUT_DEFAULT;
  int status = cs_cli_count_options(cs_dump_name, cs_dump_help, argc, argv, "timeout", CS_DUMP_TIMEOUT_MAX,
                                    &timeout);
  if (status >= 0) return status;
  if (!cs_cli_operands(cs_dump_name, argc, argv, 1, "PID")) return CS_CLI_USAGE;
  uint64_t pid;
  if (!cs_cli_parse_count(cs_dump_name, "PID", argv[optind], 1, INT_MAX, &pid)) return CS_CLI_USAGE;

  cs_options_t opts;
  int rc = cs_dump_options((pid_t)pid, &opts);
  if (rc == 0) rc = cs_dump_precheck((pid_t)pid, &opts);
  if (rc != 0) return rc;
  char cwd[PATH_MAX], pattern[2 * PATH_MAX];
  int err = cs_proc_cwd((pid_t)pid, cwd, sizeof cwd);
  if (err != 0) return cs_dump_proc_error((pid_t)pid, "cwd", err);
  if (cs_dump_glob_pattern(opts.output, (long)pid, cwd, pattern, sizeof pattern) != 0) {
    cs_cli_error(cs_dump_name, "the output pattern of process %ld is too long", (long)pid);
    return CS_CLI_FAIL;
  }
  return cs_dump_signal_and_wait((pid_t)pid, opts.signal, pattern, timeout);
}

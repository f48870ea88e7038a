/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap dump PID` and `cudasnap dump --all`: ask running programs for a snapshot. The library
 * writes one when its CUDASNAP_SIGNAL arrives (docs/design.md section 4); this sends the signal
 * and waits for the file. */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/dump_pattern.h"
#include "cli/dump_signal.h"
#include "cli/env_options.h"
#include "cli/live_dir.h"
#include "cli/proc.h"
#include "common/cs_text.h"
#include "live/live_proc.h"
#include "live/live_read.h"

static const char cs_dump_help[] =
    "usage: cudasnap dump [--timeout SECONDS] PID\n"
    "       cudasnap dump [--timeout SECONDS] --all [--job ID] [--all-users]\n"
    "\n"
    "Ask the running program PID, started under cudasnap (cudasnap run, or LD_PRELOAD), for a\n"
    "snapshot now; the program goes on. This reads the program's CUDASNAP_SIGNAL, CUDASNAP_DUMP_ON\n"
    "and CUDASNAP_OUTPUT from its environment, sends the signal, and waits for the new file (the\n"
    "output pattern with %t = signal, from the program's current directory). Output, on stdout:\n"
    "  wrote PATH\n"
    "Otherwise one line on stderr says why not: PID does not have libcudasnap loaded; its signal\n"
    "trigger is off; it has not started cudasnap yet (no CUDA call so far: the signal would end\n"
    "it, so none is sent); or no file appeared in time. The signal goes to the process checked\n"
    "only: fixed by a pidfd when it is looked at, checked again through it (its start time, its\n"
    "user, that it catches the signal) and signalled through it, with nothing in between.\n"
    "\n"
    "--all asks every process of this user on this machine that cudasnap profiles: those that\n"
    "registered when cudasnap started in them (their live record, docs/live.md, naming the\n"
    "signal they listen on), never any other process, whatever it maps or handles. All are\n"
    "signalled first, then waited for: one 'wrote PATH' line per snapshot, as each appears. A\n"
    "process that cannot be asked (its signal trigger off) is passed over with its line on\n"
    "stderr; so is one whose record names another signal than its CUDASNAP_SIGNAL. The records\n"
    "are read in CUDASNAP_LIVE_DIR (default /dev/shm), as the programs wrote them there.\n"
    "Run as root, it asks the invoking user's processes only (under sudo, SUDO_UID's),\n"
    "unless --all-users. --job ID asks only the processes of that job (cudasnap.job's id:\n"
    "SLURM_JOB_ID, TORCHELASTIC_RUN_ID), for a user running two jobs on one node. For every node\n"
    "of a job, run it through the launcher\n"
    "(docs/ranks.md): srun --overlap --jobid JOB --ntasks-per-node 1 cudasnap dump --all, or\n"
    "pdsh -w NODES cudasnap dump --all, or mpirun --map-by ppr:1:node cudasnap dump --all.\n"
    "\n"
    "exit status: 0 when a snapshot was written (--all: at least one, and one from every process\n"
    "signalled), 1 otherwise.\n"
    "\n"
    "options:\n"
    "  --all               every profiled process of this user on this machine\n"
    "  --job ID            with --all: only the processes of job ID\n"
    "  --all-users         with --all, as root: every user's profiled processes\n"
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

/* One process asked for a snapshot: who it is, where its file will appear, the files there
 * before. */
typedef struct cs_dump_target_s {
  cs_dump_identity_t id; /* fixed when it was looked at: the one signalled, or none */
  int pidfd;             /* once signalled (-1: not, or no pidfd_open and not root) */
  char pattern[2 * PATH_MAX];
  glob_t before;
  char *file; /* the new file, once it appeared (malloc'ed) */
  bool over;  /* a file appeared, or the process ended */
} cs_dump_target_t;

/* "" when pid sees the file system from our root, else "/proc/PID/root", where its paths are
 * from here (a container's). Returns 0 or an errno value. */
static int cs_dump_root(pid_t pid, char *buf, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/root", (long)pid);
  struct stat theirs, ours;
  if (stat(path, &theirs) != 0) return errno;
  if (stat("/", &ours) != 0) return errno;
  bool same = theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
  snprintf(buf, len, "%s", same ? "" : path);
  return 0;
}

/* Learn how pid writes snapshots, check it may be signalled, and list the files before: all of it
 * before the signal, since the process's owner chooses the pattern, and a glob over a tree of
 * theirs takes as long as they like. record: its live record (dump --all), whose signal must be
 * the process's own, or NULL (dump PID). Returns 0, or an exit status after one line on stderr. */
static int cs_dump_prepare(pid_t pid, const cs_live_header_t *record, cs_dump_target_t *t) {
  memset(t, 0, sizeof *t);
  t->pidfd = -1;
  t->id.pid = pid;
  if (record) {
    t->id.start_ticks = record->start_ticks;
    t->id.uid = record->uid;
  } else {
    int err = cs_dump_identity_read(pid, &t->id);
    if (err != 0) return cs_dump_proc_error(pid, "status", err);
  }
  cs_options_t opts;
  int rc = cs_dump_options(pid, &opts);
  if (rc == 0) rc = cs_dump_precheck(pid, &opts);
  if (rc != 0) return rc;
  if (record && record->signal != opts.signal) {
    /* the record is its owner's to write: a signal it names alone is never sent */
    char named[16], listens[16];
    cs_dump_signal_name(record->signal, named, sizeof named);
    cs_dump_signal_name(opts.signal, listens, sizeof listens);
    cs_cli_error(cs_dump_name,
                 "process %ld: its live record names signal %s, but it listens on %s (its CUDASNAP_SIGNAL); "
                 "nothing sent",
                 (long)pid, named, listens);
    return CS_CLI_FAIL;
  }
  t->id.sig = opts.signal;
  char root[64], cwd[PATH_MAX];
  int err = cs_dump_root(pid, root, sizeof root);
  if (err == 0) err = cs_proc_cwd(pid, cwd, sizeof cwd);
  if (err != 0) return cs_dump_proc_error(pid, "cwd", err);
  /* the library names its file with its own pid: the one in its PID namespace */
  cs_live_status_t st;
  long own_pid = cs_live_status_read((long)pid, &st) == 0 && st.ns_pid > 0 ? st.ns_pid : (long)pid;
  size_t used = (size_t)snprintf(t->pattern, sizeof t->pattern, "%s", root);
  if (cs_dump_glob_pattern(opts.output, own_pid, cwd, t->pattern + used, sizeof t->pattern - used) != 0) {
    cs_cli_error(cs_dump_name, "the output pattern of process %ld is too long", (long)pid);
    return CS_CLI_FAIL;
  }
  cs_dump_glob(t->pattern, &t->before);
  return 0;
}

static void cs_dump_target_free(cs_dump_target_t *t) {
  globfree(&t->before);
  free(t->file);
  if (t->pidfd >= 0) close(t->pidfd);
}

/* Was path already taken as another target's file? Processes that share a directory and a
 * pattern without %p see each other's files. */
static bool cs_dump_claimed(const cs_dump_target_t *t, size_t n, const char *path) {
  for (size_t i = 0; i < n; i++)
    if (t[i].file != NULL && strcmp(t[i].file, path) == 0) return true;
  return false;
}

/* A file matching now that matched neither before nor for another target, or NULL. */
static const char *cs_dump_new_file(const cs_dump_target_t *all, size_t n, const cs_dump_target_t *t,
                                    const glob_t *now) {
  for (size_t i = 0; i < now->gl_pathc; i++) {
    const char *path = now->gl_pathv[i];
    if (t->before.gl_pathc > 0 &&
        bsearch(&now->gl_pathv[i], t->before.gl_pathv, t->before.gl_pathc, sizeof(char *), cs_dump_strcmp) != NULL)
      continue;
    if (!cs_dump_claimed(all, n, path)) return path;
  }
  return NULL;
}

/* "wrote PATH" on stdout. The target's owner chose the path (its CUDASNAP_OUTPUT, its directory),
 * and root may be the one reading: shown safe for a terminal (common/cs_text.h). */
static void cs_dump_wrote(const char *path) {
  size_t len = strlen(path);
  char *safe = malloc(3 * len + 1);
  if (safe) cs_text_safe(safe, 3 * len + 1, path, len);
  printf("wrote %s\n", safe ? safe : "a file (out of host memory to show its name)");
  fflush(stdout);
  free(safe);
}

static double cs_dump_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Signal every target (all first, so that the snapshots of a job are taken at about the same
 * moment), each through its pidfd once checked again (cli/dump_signal.h), then wait for each
 * one's new file: a `wrote PATH` line on stdout as each appears, one line on stderr for each that
 * ends first or runs out of time. Returns how many wrote one. */
static size_t cs_dump_signal_and_wait(cs_dump_target_t *t, size_t n, uint64_t timeout) {
  for (size_t i = 0; i < n; i++) {
    char why[256];
    if (cs_dump_signal(&t[i].id, &t[i].pidfd, why, sizeof why) != 0) {
      cs_cli_error(cs_dump_name, "%s", why);
      t[i].over = true;
    }
  }
  size_t wrote = 0, left = 0;
  for (size_t i = 0; i < n; i++) left += !t[i].over;
  double deadline = cs_dump_now() + (double)timeout;
  while (left > 0) {
    for (size_t i = 0; i < n; i++) {
      if (t[i].over) continue;
      /* The library writes under a temporary name and renames: a file that matches is complete. */
      glob_t now;
      cs_dump_glob(t[i].pattern, &now);
      const char *file = cs_dump_new_file(t, n, &t[i], &now);
      if (file != NULL && (t[i].file = strdup(file)) != NULL) {
        cs_dump_wrote(file);
        wrote++;
        t[i].over = true;
      } else if (!cs_dump_alive(t[i].pidfd, t[i].id.pid)) {
        cs_cli_error(cs_dump_name, "process %ld ended before a snapshot appeared (looked for %s)", (long)t[i].id.pid,
                     t[i].pattern);
        t[i].over = true;
      } else if (cs_dump_now() >= deadline) {
        cs_cli_error(cs_dump_name,
                     "no snapshot from process %ld within %llu s (looked for %s); it may have no CUDA "
                     "allocations yet, or cannot write there",
                     (long)t[i].id.pid, (unsigned long long)timeout, t[i].pattern);
        t[i].over = true;
      }
      left -= t[i].over;
      globfree(&now);
    }
    if (left > 0) nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000}, NULL);
  }
  return wrote;
}

/* --all: every process that registered itself as profiled (its live record: live/live_read.h),
 * of this user (or every user), of one job if asked. One that cannot be asked (its signal trigger
 * off, it ended) is passed over with its line on stderr; the status is 0 when at least one
 * snapshot was written and every process signalled wrote one. */
typedef struct cs_dump_all_opts_s {
  const char *job;
  bool all_users;
} cs_dump_all_opts_t;

static int cs_dump_all(uint64_t timeout, const cs_dump_all_opts_t *o) {
  cs_live_filter_t f = {.all_users = o->all_users, .uid = cs_live_invoking_uid(), .pid = 0, .job_id = o->job};
  cs_live_list_t list;
  int err = cs_live_list(cs_live_dir(), &f, &list);
  if (err != 0) {
    cs_cli_error(cs_dump_name, "cannot read the live records in %s: %s", cs_live_dir(), strerror(err));
    return CS_CLI_FAIL;
  }
  char note[512];
  cs_live_passed_over(&list, note, sizeof note);
  if (note[0]) cs_cli_error(cs_dump_name, "%s", note);
  if (list.count == 0) {
    if (o->job)
      cs_cli_error(cs_dump_name, "no profiled process of job %s on this machine", o->job);
    else
      cs_cli_error(cs_dump_name, "no profiled process of %s on this machine", o->all_users ? "any user" : "this user");
    cs_live_list_free(&list);
    return CS_CLI_FAIL;
  }
  cs_dump_target_t *t = calloc(list.count, sizeof *t);
  if (t == NULL) {
    cs_live_list_free(&list);
    cs_cli_error(cs_dump_name, "out of host memory");
    return CS_CLI_FAIL;
  }
  size_t n = 0;
  for (size_t i = 0; i < list.count; i++) {
    const cs_live_header_t *h = &list.items[i].header;
    if (h->signal == 0) {
      cs_cli_error(cs_dump_name, "process %lld has snapshots on signal turned off; passed over", (long long)h->pid);
      continue;
    }
    if (cs_dump_prepare((pid_t)h->pid, h, &t[n]) != 0) {
      cs_dump_target_free(&t[n]);
      continue;
    }
    n++;
  }
  size_t wrote = cs_dump_signal_and_wait(t, n, timeout);
  for (size_t i = 0; i < n; i++) cs_dump_target_free(&t[i]);
  free(t);
  if (n == 0) cs_cli_error(cs_dump_name, "none of the %zu profiled processes could be asked", list.count);
  cs_live_list_free(&list);
  return n > 0 && wrote == n ? CS_CLI_OK : CS_CLI_FAIL;
}

/* Returns -1 to go on, else the exit status (--help, a bad option). */
static int cs_dump_parse(int argc, char **argv, uint64_t *timeout, bool *all, cs_dump_all_opts_t *o) {
  static const struct option options[] = {{"timeout", required_argument, NULL, 't'},
                                          {"all", no_argument, NULL, 'a'},
                                          {"job", required_argument, NULL, 'j'},
                                          {"all-users", no_argument, NULL, 'u'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_dump_help, stdout); return CS_CLI_OK;
    case 'a': *all = true; break;
    case 'j': o->job = optarg; break;
    case 'u': o->all_users = true; break;
    case 't':
      if (!cs_cli_parse_count(cs_dump_name, "--timeout", optarg, 1, CS_DUMP_TIMEOUT_MAX, timeout))
        return CS_CLI_USAGE;
      break;
    default: return cs_cli_bad_option(cs_dump_name, c, argv);
    }
  }
  return -1;
}

int cs_cli_dump(int argc, char **argv) {
  uint64_t timeout = CS_DUMP_TIMEOUT_DEFAULT;
  bool all = false;
  cs_dump_all_opts_t o = {.job = NULL, .all_users = false};
  int status = cs_dump_parse(argc, argv, &timeout, &all, &o);
  if (status >= 0) return status;
  if (all) {
    if (!cs_cli_operands(cs_dump_name, argc, argv, 0, "--all")) return CS_CLI_USAGE;
    return cs_dump_all(timeout, &o);
  }
  if (o.job || o.all_users) {
    cs_cli_error(cs_dump_name, "%s goes with --all", o.job ? "--job" : "--all-users");
    return CS_CLI_USAGE;
  }
  if (!cs_cli_operands(cs_dump_name, argc, argv, 1, "PID")) return CS_CLI_USAGE;
  uint64_t pid;
  if (!cs_cli_parse_count(cs_dump_name, "PID", argv[optind], 1, INT_MAX, &pid)) return CS_CLI_USAGE;
  cs_dump_target_t t;
  int rc = cs_dump_prepare((pid_t)pid, NULL, &t);
  if (rc == 0) rc = cs_dump_signal_and_wait(&t, 1, timeout) == 1 ? CS_CLI_OK : CS_CLI_FAIL;
  cs_dump_target_free(&t);
  return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap top`: the profiled processes of this machine as they run, from their live records
 * (live/live_format.h): a table redrawn every interval, or printed once (--once), or as JSON. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/live_dir.h"
#include "cli/live_rows.h"
#include "cli/term.h"
#include "common/cs_text.h"

static const char cs_top_help[] =
    "usage: cudasnap top [--once] [--json] [--interval SECONDS] [--pid PID]\n"
    "\n"
    "The GPU memory of every profiled process on this machine (of this user; of every user when\n"
    "run as root) while it runs, read from the live record each process publishes in\n"
    "CUDASNAP_LIVE_DIR (default /dev/shm; CUDASNAP_LIVE_INTERVAL, default every second;\n"
    "docs/live.md). One row per process and device:\n"
    "  PID RANK DEV ALLOCATED RESERVED PEAK \"DRIVER USED\" PHASE OOMS \"TOP SITE\"\n"
    "sorted by ALLOCATED, the largest first. DRIVER USED is the driver's last answer and its age\n"
    "(\"10.1G 12s\"): it is asked where the cache grows. Keys: q quits; up and down select a row;\n"
    "Enter shows the selected process's sites (Enter or Esc goes back); s changes the sort column;\n"
    "d asks the selected process for a snapshot, as `cudasnap dump PID` does, and shows the file\n"
    "written.\n"
    "Without colours when NO_COLOR is set or TERM is dumb; fits 80 columns. A site too long for\n"
    "TOP SITE keeps its function and file:line, the file by its base name; under 93 columns each\n"
    "row's site is on a line of its own under the row.\n"
    "\n"
    "--once prints the table once and exits; with --json, as one JSON object:\n"
    "  {\"processes\": [{\"pid\", \"rank\", \"local_rank\", \"host\", \"labels\", \"device\",\n"
    "   \"allocated_bytes\", \"reserved_bytes\", \"peak_allocated_bytes\", \"driver_used_bytes\",\n"
    "   \"driver_used_timestamp_seconds\", \"phase\", \"ooms\",\n"
    "   \"top_sites\": [{\"site\", \"bytes\", \"blocks\"}]}]}\n"
    "one entry per process and device (rank, local_rank, driver_used_bytes and its timestamp,\n"
    "phase: null when not known; labels: the process's pod, namespace and CUDASNAP_LABELS).\n"
    "--json without --once prints that object every interval, one line each (JSON Lines),\n"
    "flushed, until SIGINT, SIGTERM or SIGHUP, or until the reader goes\n"
    "away (`top --json | head -3`): exit status 0 in each case. No terminal needed.\n"
    "\n"
    "exit status: 0; 1 when the live records cannot be read; 2 for a bad option.\n"
    "\n"
    "options:\n"
    "  --once              print once and exit (no terminal needed)\n"
    "  --json              JSON instead of the table: once with --once, else a line per interval\n"
    "  --interval SECONDS  between refreshes (default 1; 0.1 to 3600)\n"
    "  --pid PID           only this process\n"
    "  -h, --help          this text\n";

static const char cs_top_name[] = "top";

typedef struct cs_top_opts_s {
  bool once, json;
  unsigned interval_ms;
  long pid;
} cs_top_opts_t;

static int cs_top_parse(int argc, char **argv, cs_top_opts_t *o) {
  static const struct option options[] = {{"once", no_argument, NULL, 'o'},
                                          {"json", no_argument, NULL, 'j'},
                                          {"interval", required_argument, NULL, 'i'},
                                          {"pid", required_argument, NULL, 'p'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_top_help, stdout); return CS_CLI_OK;
    case 'o': o->once = true; break;
    case 'j': o->json = true; break;
    case 'i': {
      char *end;
      errno = 0;
      double s = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(s >= 0.1 && s <= 3600)) {
        cs_cli_error(cs_top_name, "--interval takes seconds from 0.1 to 3600, not '%s'", optarg);
        return CS_CLI_USAGE;
      }
      o->interval_ms = (unsigned)(s * 1000.0 + 0.5);
      break;
    }
    case 'p': {
      uint64_t pid;
      if (!cs_cli_parse_count(cs_top_name, "--pid", optarg, 1, INT_MAX, &pid)) return CS_CLI_USAGE;
      o->pid = (long)pid;
      break;
    }
    default: return cs_cli_bad_option(cs_top_name, c, argv);
    }
  }
  if (!cs_cli_operands(cs_top_name, argc, argv, 0, "")) return CS_CLI_USAGE;
  return -1;
}

static int cs_top_list(const cs_top_opts_t *o, cs_live_list_t *list) {
  int err = cs_live_rows_list(o->pid, list);
  if (err) cs_cli_error(cs_top_name, "cannot read the live records in %s: %s", cs_live_dir(), strerror(err));
  return err;
}

static int cs_top_once(const cs_top_opts_t *o) {
  cs_live_list_t list;
  if (cs_top_list(o, &list) != 0) return CS_CLI_FAIL;
  char note[512];
  cs_live_passed_over(&list, note, sizeof note);
  if (note[0]) cs_cli_error(cs_top_name, "%s", note);
  cs_live_row_t *rows;
  size_t n;
  int rc = CS_CLI_OK;
  if (cs_live_rows(&list, CS_LIVE_SORT_ALLOCATED, &rows, &n) != 0) {
    cs_cli_error(cs_top_name, "out of host memory");
    rc = CS_CLI_FAIL;
  } else {
    int cols, lines;
    cs_term_size(&cols, &lines);
    if (!isatty(STDOUT_FILENO)) cols = 1023; /* a pipe gets whole lines */
    if (o->json) {
      if (cs_live_print_json(stdout, rows, n) != 0) rc = CS_CLI_FAIL;
    } else {
      cs_live_print_table(stdout, rows, n, cols, SIZE_MAX);
    }
    free(rows);
  }
  cs_live_list_free(&list);
  return rc;
}

/* ---- interactive ---- */

static volatile sig_atomic_t cs_top_stop;
static void cs_top_on_signal(int sig) {
  (void)sig;
  cs_top_stop = 1;
}
static void cs_top_on_winch(int sig) { (void)sig; }

/* SIGINT, SIGTERM and SIGHUP end the refreshes: the one being written is finished first
 * (SA_RESTART: a write they interrupt goes on), the wait is cut short (nanosleep and poll are
 * never restarted). */
static void cs_top_catch_stop(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = cs_top_on_signal;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

/* Sleep ms milliseconds, or less when a stop signal comes. */
static void cs_top_wait(unsigned ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (!cs_top_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- --json without --once: JSON Lines ---- */

/* One object a line, every interval, each written whole and flushed, so that a reader (jq, a
 * script, `head`) takes line after line. A reader that goes away (EPIPE: SIGPIPE is ignored here
 * so that the write says so) ends it as a stop signal does: exit 0, nothing on stderr. */
static int cs_top_stream(const cs_top_opts_t *o) {
  cs_top_catch_stop();
  signal(SIGPIPE, SIG_IGN);
  int rc = CS_CLI_OK;
  while (!cs_top_stop) {
    cs_live_list_t list;
    if (cs_top_list(o, &list) != 0) return CS_CLI_FAIL;
    cs_live_row_t *rows;
    size_t n;
    bool ok = cs_live_rows(&list, CS_LIVE_SORT_ALLOCATED, &rows, &n) == 0;
    if (ok) {
      ok = cs_live_print_json(stdout, rows, n) == 0;
      free(rows);
    }
    cs_live_list_free(&list);
    if (!ok) {
      cs_cli_error(cs_top_name, "out of host memory");
      return CS_CLI_FAIL;
    }
    if (fflush(stdout) != 0) {
      if (errno != EPIPE) {
        cs_cli_error(cs_top_name, "cannot write: %s", strerror(errno));
        rc = CS_CLI_FAIL;
      }
      break;
    }
    cs_top_wait(o->interval_ms);
  }
  return rc;
}

/* A `cudasnap dump PID` running for the d key: its output comes back through a pipe. */
typedef struct cs_top_dump_s {
  pid_t child;
  int fd;
  long target;
  char out[1024];
  size_t len;
} cs_top_dump_t;

static void cs_top_dump_start(cs_top_dump_t *d, long pid, char *message, size_t len) {
  if (d->child > 0) {
    snprintf(message, len, "a snapshot of %ld is being written", d->target);
    return;
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    snprintf(message, len, "cannot ask for a snapshot: %s", strerror(errno));
    return;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  pid_t child = n > 0 ? fork() : -1;
  if (child == 0) {
    self[n] = '\0';
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%ld", pid);
    dup2(p[1], STDOUT_FILENO);
    dup2(p[1], STDERR_FILENO);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    execl(self, "cudasnap", "dump", pidtext, (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  if (child < 0) {
    close(p[0]);
    snprintf(message, len, "cannot ask for a snapshot: %s", strerror(errno));
    return;
  }
  *d = (cs_top_dump_t){.child = child, .fd = p[0], .target = pid, .len = 0};
  (void)fcntl(p[0], F_SETFL, O_NONBLOCK);
  snprintf(message, len, "asking %ld for a snapshot...", pid);
}

/* What the dump printed so far, up to the buffer's size (the pipe does not block). */
static void cs_top_dump_read(cs_top_dump_t *d) {
  ssize_t n;
  while (d->len < sizeof d->out - 1 && (n = read(d->fd, d->out + d->len, sizeof d->out - 1 - d->len)) > 0)
    d->len += (size_t)n;
}

/* Collect what the dump printed; once it ended, its last line becomes the message. */
static void cs_top_dump_poll(cs_top_dump_t *d, char *message, size_t len) {
  if (d->child <= 0) return;
  cs_top_dump_read(d);
  int status;
  if (waitpid(d->child, &status, WNOHANG) != d->child) return;
  cs_top_dump_read(d); /* what it wrote between the read and its end */
  d->out[d->len] = '\0';
  while (d->len > 0 && d->out[d->len - 1] == '\n') d->out[--d->len] = '\0';
  const char *last = strrchr(d->out, '\n');
  last = last ? last + 1 : d->out;
  /* a path the target's owner chose, an error quoting it: nothing in it may act on the terminal */
  if (*last) cs_text_safe(message, len, last, strlen(last));
  else snprintf(message, len, "the dump said nothing");
  close(d->fd);
  d->child = 0;
}

static void cs_top_draw(const cs_live_row_t *rows, size_t n, size_t selected, bool sites, cs_live_sort_t sort,
                        const char *message, bool colours) {
  int cols, lines;
  cs_term_size(&cols, &lines);
  fputs("\x1b[H\x1b[2J", stdout);
  char title[256];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  snprintf(title, sizeof title, "cudasnap top - %02d:%02d:%02d - %zu row%s, sorted by %s", tm.tm_hour, tm.tm_min,
           tm.tm_sec, n, n == 1 ? "" : "s", cs_live_sort_name(sort));
  printf("%.*s\n", cols, title);
  if (sites && selected < n) {
    cs_live_print_sites(stdout, &rows[selected], cols);
  } else {
    /* the table, the selected row in reverse video where colours are on */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (mem) {
      cs_live_print_table(mem, rows, n, cols, selected);
      fclose(mem);
      int line = 0;
      int room = lines - 4;
      const int per_row = cs_live_table_row_lines(cols);
      for (char *p = text, *nl; p && *p && line <= room; p = nl ? nl + 1 : NULL, line++) {
        nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        bool mark = colours && line > 0 && (size_t)((line - 1) / per_row) == selected;
        printf("%s%s%s\n", mark ? "\x1b[7m" : "", p, mark ? "\x1b[0m" : "");
      }
      free(text);
    }
    if (n == 0) printf("%.*s\n", cols, "no profiled process (start one with cudasnap run)");
  }
  printf("\n%.*s\n", cols, message && *message ? message : "q quit  up/down select  Enter sites  s sort  d snapshot");
  fflush(stdout);
}

static int cs_top_loop(const cs_top_opts_t *o) {
  if (!isatty(STDOUT_FILENO) || !cs_term_raw()) {
    cs_cli_error(cs_top_name, "needs a terminal; --once prints the table once");
    return CS_CLI_USAGE;
  }
  cs_top_catch_stop();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = cs_top_on_winch;
  sigaction(SIGWINCH, &sa, NULL); /* interrupts the wait: redrawn at the new size */
  bool colours = cs_term_colours();
  cs_live_sort_t sort = CS_LIVE_SORT_ALLOCATED;
  size_t selected = 0;
  long selected_pid = 0;
  int selected_dev = -1;
  bool sites = false;
  char message[1100] = "";
  cs_top_dump_t dump = {.child = 0};
  int rc = CS_CLI_OK;
  fputs("\x1b[?25l", stdout); /* no cursor */
  while (!cs_top_stop) {
    cs_live_list_t list;
    if (cs_top_list(o, &list) != 0) {
      rc = CS_CLI_FAIL;
      break;
    }
    cs_live_row_t *rows = NULL;
    size_t n = 0;
    if (cs_live_rows(&list, sort, &rows, &n) != 0) {
      cs_live_list_free(&list);
      rc = CS_CLI_FAIL;
      break;
    }
    /* the selection follows its process and device across refreshes */
    for (size_t i = 0; i < n; i++)
      if (rows[i].process->pid == selected_pid && rows[i].device->device == selected_dev) selected = i;
    if (selected >= n) selected = n ? n - 1 : 0;
    if (n == 0) sites = false;
    cs_top_dump_poll(&dump, message, sizeof message);
    cs_top_draw(rows, n, selected, sites, sort, message, colours);
    /* keys until the next refresh */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    bool redraw = false;
    while (!cs_top_stop && !redraw) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      long spent = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
      if (spent >= (long)o->interval_ms) break;
      int wait = (int)((long)o->interval_ms - spent);
      if (dump.child > 0 && wait > 100) wait = 100; /* show the dump's answer soon */
      int key = cs_term_key(wait);
      if (dump.child > 0) {
        char before[sizeof message];
        memcpy(before, message, sizeof before);
        cs_top_dump_poll(&dump, message, sizeof message);
        if (strcmp(before, message) != 0) redraw = true;
      }
      switch (key) {
      case CS_KEY_NONE: break;
      case 'q': case 'Q': cs_top_stop = 1; break;
      case CS_KEY_UP:
        if (selected > 0) selected--;
        redraw = true;
        break;
      case CS_KEY_DOWN:
        if (selected + 1 < n) selected++;
        redraw = true;
        break;
      case CS_KEY_ENTER: sites = !sites && n > 0; redraw = true; break;
      case CS_KEY_ESCAPE: sites = false; redraw = true; break;
      case 's': case 'S': sort = (sort + 1) % CS_LIVE_SORTS; redraw = true; break;
      case 'd': case 'D':
        if (n > 0) cs_top_dump_start(&dump, (long)rows[selected].process->pid, message, sizeof message);
        redraw = true;
        break;
      default: break;
      }
    }
    /* the selection to follow: a key that moved it also ended the wait, so it is final here */
    if (n > 0 && selected < n) {
      selected_pid = (long)rows[selected].process->pid;
      selected_dev = rows[selected].device->device;
    }
    free(rows);
    cs_live_list_free(&list);
  }
  fputs("\x1b[?25h\n", stdout);
  fflush(stdout);
  cs_term_restore();
  if (dump.child > 0) close(dump.fd);
  return rc;
}

int cs_cli_top(int argc, char **argv) {
  cs_top_opts_t o = {.interval_ms = 1000};
  int status = cs_top_parse(argc, argv, &o);
  if (status >= 0) return status;
  if (o.once) return cs_top_once(&o);
  return o.json ? cs_top_stream(&o) : cs_top_loop(&o);
}

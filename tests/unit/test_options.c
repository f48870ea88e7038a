/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for common/cs_options.c: good and bad values for every CUDASNAP_* variable, the
 * warnings they produce (captured through a pipe), and the debug print. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_log.h"
#include "tests/unit/log_capture.h"
#include "common/cs_options.h"

/* ------------------------------------------------------------------------------------------------
 * Capturing the log
 * ---------------------------------------------------------------------------------------------- */


static bool ends_with(const char *text, const char *end) {
  size_t len = strlen(text), end_len = strlen(end);
  return len >= end_len && strcmp(text + len - end_len, end) == 0;
}

/* ------------------------------------------------------------------------------------------------
 * Parsing helpers
 * ---------------------------------------------------------------------------------------------- */

static int parse_env(const char *const *envp, cs_options_t *opts) {
  cs_options_init(opts);
  return cs_options_parse(envp, opts);
}

static int parse_entry(const char *entry, cs_options_t *opts) {
  const char *envp[] = {entry, NULL};
  return parse_env(envp, opts);
}

/* A good value: no problem and no output. The caller checks the field. */
static void assert_accepted(const char *entry, cs_options_t *opts) {
  assert_int_equal(parse_entry(entry, opts), 0);
  assert_string_equal(captured(), "");
}

/* A bad value: one problem, one warning line that quotes NAME=value, and nothing changed. */
static void assert_rejected(const char *entry) {
  cs_options_t defaults, opts;
  cs_options_init(&defaults);
  assert_int_equal(parse_entry(entry, &opts), 1);
  const char *log = captured();
  assert_int_equal(count_lines(log), 1);
  assert_contains(log, "cudasnap: warning: ");
  assert_contains(log, entry);
  assert_contains(log, " is not accepted (");
  assert_memory_equal(&opts, &defaults, sizeof opts);
}

/* ------------------------------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------------------------------- */

static void test_defaults(void **state) {
  (void)state;
  cs_options_t opts;
  cs_options_init(&opts);
  assert_string_equal(opts.output, "cudasnap-%e-%p-%n-%t.json");
  assert_int_equal(opts.format, CS_FORMAT_AUTO);
  assert_int_equal(opts.stacks, CS_STACKS_ALL);
  assert_int_equal(opts.stack_depth, 32);
  assert_int_equal(opts.max_entries, 100000);
  assert_int_equal(opts.dump_on,
                   CS_DUMP_ON_EXIT | CS_DUMP_ON_SIGNAL | CS_DUMP_ON_OOM | CS_DUMP_ON_CRASH | CS_DUMP_ON_TERM);
  assert_int_equal(opts.signal, SIGUSR1);
  assert_int_equal(opts.meminfo, CS_MEMINFO_ADJUSTED);
  assert_true(opts.children);
  assert_int_equal(opts.log, CS_LOG_INFO);
  /* CUDASNAP_FREE and CUDASNAP_CACHE default to what cs_alloc_conf_init chooses. */
  cs_alloc_conf_t alloc;
  cs_alloc_conf_init(&alloc);
  assert_memory_equal(&opts.alloc, &alloc, sizeof alloc);
  assert_string_equal(captured(), "");
}

static void test_warning_text(void **state) {
  (void)state;
  cs_options_t opts;
  assert_int_equal(parse_entry("CUDASNAP_STACK_DEPTH=0", &opts), 1);
  assert_string_equal(captured(), "cudasnap: warning: CUDASNAP_STACK_DEPTH=0 is not accepted (an "
                                  "integer from 1 to 256); using 32\n");
}

static void test_output(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_OUTPUT=/tmp/snap-%e-%p-%h-%r-%n-%t-100%%.pickle", &opts);
  assert_string_equal(opts.output, "/tmp/snap-%e-%p-%h-%r-%n-%t-100%%.pickle");
  assert_rejected("CUDASNAP_OUTPUT=snap-%x.json");
  assert_rejected("CUDASNAP_OUTPUT=snap-%P.json");
  assert_rejected("CUDASNAP_OUTPUT=snap-%");
  assert_rejected("CUDASNAP_OUTPUT=snap-%%%");
  /* the recording file is made once, at start: no dump number or trigger to expand */
  assert_accepted("CUDASNAP_RECORD=/tmp/rec-%e-%p-%h-%r-100%%.csrec", &opts);
  assert_string_equal(opts.record, "/tmp/rec-%e-%p-%h-%r-100%%.csrec");
  assert_rejected("CUDASNAP_RECORD=rec-%n.csrec");
  assert_rejected("CUDASNAP_RECORD=rec-%t.csrec");
  assert_rejected("CUDASNAP_RECORD=rec-%");
}

static void test_output_length(void **state) {
  (void)state;
  static char entry[32 + CS_OPTION_PATH_MAX];
  cs_options_t opts;
  int prefix = snprintf(entry, sizeof entry, "CUDASNAP_OUTPUT=");
  memset(entry + prefix, 'a', CS_OPTION_PATH_MAX - 1);
  entry[prefix + CS_OPTION_PATH_MAX - 1] = '\0';
  assert_accepted(entry, &opts);
  assert_int_equal(strlen(opts.output), CS_OPTION_PATH_MAX - 1);

  /* One byte more no longer fits; the warning quotes the value cut and still ends with the
   * pattern in use. */
  strcat(entry, "a");
  assert_int_equal(parse_entry(entry, &opts), 1);
  assert_string_equal(opts.output, "cudasnap-%e-%p-%n-%t.json");
  const char *log = captured();
  assert_int_equal(count_lines(log), 1);
  assert_contains(log, "CUDASNAP_OUTPUT=aaaa");
  assert_contains(log, "a... is not accepted (");
  assert_true(ends_with(log, "; using cudasnap-%e-%p-%n-%t.json\n"));
}

static void test_format(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_FORMAT=pickle", &opts);
  assert_int_equal(opts.format, CS_FORMAT_PICKLE);
  assert_accepted("CUDASNAP_FORMAT=json", &opts);
  assert_int_equal(opts.format, CS_FORMAT_JSON);
  assert_accepted("CUDASNAP_FORMAT=JSON", &opts);
  assert_int_equal(opts.format, CS_FORMAT_JSON);
  assert_accepted("CUDASNAP_FORMAT=auto", &opts);
  assert_int_equal(opts.format, CS_FORMAT_AUTO);
  assert_rejected("CUDASNAP_FORMAT=xml");
  assert_rejected("CUDASNAP_FORMAT=json ");
  assert_rejected("CUDASNAP_FORMAT=jso");
}

static void test_stacks(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_STACKS=none", &opts);
  assert_int_equal(opts.stacks, CS_STACKS_NONE);
  assert_accepted("CUDASNAP_STACKS=native", &opts);
  assert_int_equal(opts.stacks, CS_STACKS_NATIVE);
  assert_accepted("CUDASNAP_STACKS=python", &opts);
  assert_int_equal(opts.stacks, CS_STACKS_PYTHON);
  assert_accepted("CUDASNAP_STACKS=all", &opts);
  assert_int_equal(opts.stacks, CS_STACKS_ALL);
  assert_rejected("CUDASNAP_STACKS=pyth");
  assert_rejected("CUDASNAP_STACKS=both");
}

static void test_stack_depth(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_STACK_DEPTH=1", &opts);
  assert_int_equal(opts.stack_depth, 1);
  assert_accepted("CUDASNAP_STACK_DEPTH=256", &opts);
  assert_int_equal(opts.stack_depth, 256);
  assert_accepted("CUDASNAP_STACK_DEPTH=064", &opts);
  assert_int_equal(opts.stack_depth, 64);
  assert_rejected("CUDASNAP_STACK_DEPTH=0");
  assert_rejected("CUDASNAP_STACK_DEPTH=257");
  assert_rejected("CUDASNAP_STACK_DEPTH=-1");
  assert_rejected("CUDASNAP_STACK_DEPTH=+5");
  assert_rejected("CUDASNAP_STACK_DEPTH= 12");
  assert_rejected("CUDASNAP_STACK_DEPTH=12x");
  assert_rejected("CUDASNAP_STACK_DEPTH=0x10");
  assert_rejected("CUDASNAP_STACK_DEPTH=4294967328"); /* 2^32 + 32: no wrap to 32 */
  assert_rejected("CUDASNAP_STACK_DEPTH=99999999999999999999999");
}

static void test_max_entries(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_MAX_ENTRIES=0", &opts);
  assert_int_equal(opts.max_entries, 0);
  assert_accepted("CUDASNAP_MAX_ENTRIES=18446744073709551615", &opts);
  assert_true(opts.max_entries == UINT64_MAX);
  assert_rejected("CUDASNAP_MAX_ENTRIES=18446744073709551616");
  assert_rejected("CUDASNAP_MAX_ENTRIES=-1");
  assert_rejected("CUDASNAP_MAX_ENTRIES=1e5");
  assert_rejected("CUDASNAP_MAX_ENTRIES=100k");
}

static void test_dump_on(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_DUMP_ON=exit", &opts);
  assert_int_equal(opts.dump_on, CS_DUMP_ON_EXIT);
  assert_accepted("CUDASNAP_DUMP_ON=oom,exit,oom", &opts);
  assert_int_equal(opts.dump_on, CS_DUMP_ON_EXIT | CS_DUMP_ON_OOM);
  assert_accepted("CUDASNAP_DUMP_ON=Signal", &opts);
  assert_int_equal(opts.dump_on, CS_DUMP_ON_SIGNAL);
  assert_accepted("CUDASNAP_DUMP_ON=crash,term", &opts);
  assert_int_equal(opts.dump_on, CS_DUMP_ON_CRASH | CS_DUMP_ON_TERM);
  assert_accepted("CUDASNAP_DUMP_ON=none", &opts);
  assert_int_equal(opts.dump_on, 0);
  assert_rejected("CUDASNAP_DUMP_ON=exit,,oom");
  assert_rejected("CUDASNAP_DUMP_ON=exit,");
  assert_rejected("CUDASNAP_DUMP_ON=,exit");
  assert_rejected("CUDASNAP_DUMP_ON=none,exit");
  assert_rejected("CUDASNAP_DUMP_ON=exit, oom");
  assert_rejected("CUDASNAP_DUMP_ON=crash,kill"); /* SIGKILL cannot be caught: CUDASNAP_RECORD is for it */
}

static void test_signal(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_SIGNAL=USR2", &opts);
  assert_int_equal(opts.signal, SIGUSR2);
  assert_accepted("CUDASNAP_SIGNAL=SIGUSR2", &opts);
  assert_int_equal(opts.signal, SIGUSR2);
  assert_accepted("CUDASNAP_SIGNAL=usr2", &opts);
  assert_int_equal(opts.signal, SIGUSR2);
  assert_accepted("CUDASNAP_SIGNAL=SIGUSR1", &opts);
  assert_int_equal(opts.signal, SIGUSR1);
  assert_accepted("CUDASNAP_SIGNAL=none", &opts);
  assert_int_equal(opts.signal, 0);
  assert_accepted("CUDASNAP_SIGNAL=1", &opts);
  assert_int_equal(opts.signal, 1);

  char entry[64];
  snprintf(entry, sizeof entry, "CUDASNAP_SIGNAL=%d", SIGRTMAX);
  assert_accepted(entry, &opts);
  assert_int_equal(opts.signal, SIGRTMAX);
  snprintf(entry, sizeof entry, "CUDASNAP_SIGNAL=%d", SIGRTMAX + 1);
  assert_rejected(entry);
  snprintf(entry, sizeof entry, "CUDASNAP_SIGNAL=%d", SIGKILL);
  assert_rejected(entry);
  snprintf(entry, sizeof entry, "CUDASNAP_SIGNAL=%d", SIGSTOP);
  assert_rejected(entry);
  assert_rejected("CUDASNAP_SIGNAL=0");
  assert_rejected("CUDASNAP_SIGNAL=-10");
  assert_rejected("CUDASNAP_SIGNAL=HUP");
  assert_rejected("CUDASNAP_SIGNAL=USR3");
}

static void test_free_mode(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_FREE=fence", &opts);
  assert_int_equal(opts.alloc.free_mode, CS_FREE_FENCE);
  assert_accepted("CUDASNAP_FREE=sync", &opts);
  assert_int_equal(opts.alloc.free_mode, CS_FREE_SYNC);
  assert_rejected("CUDASNAP_FREE=async");
}

/* CUDASNAP_CACHE and CUDASNAP_CHILDREN take the same boolean words. */
static void test_cache(void **state) {
  (void)state;
  static const char *const false_entries[] = {"CUDASNAP_CACHE=0", "CUDASNAP_CACHE=false",
                                              "CUDASNAP_CACHE=No", "CUDASNAP_CACHE=OFF"};
  static const char *const true_entries[] = {"CUDASNAP_CACHE=1", "CUDASNAP_CACHE=TRUE",
                                             "CUDASNAP_CACHE=yes", "CUDASNAP_CACHE=on"};
  cs_options_t opts;
  for (size_t i = 0; i < 4; i++) {
    assert_accepted(false_entries[i], &opts);
    assert_false(opts.alloc.cache);
    assert_accepted(true_entries[i], &opts);
    assert_true(opts.alloc.cache);
  }
  assert_rejected("CUDASNAP_CACHE=2");
  assert_rejected("CUDASNAP_CACHE=enabled");
}

static void test_children(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_CHILDREN=0", &opts);
  assert_false(opts.children);
  assert_accepted("CUDASNAP_CHILDREN=no", &opts);
  assert_false(opts.children);
  assert_accepted("CUDASNAP_CHILDREN=1", &opts);
  assert_true(opts.children);
  assert_rejected("CUDASNAP_CHILDREN=maybe");
}

/* CUDASNAP_NVTX takes the boolean words too; it is on by default. */
static void test_nvtx(void **state) {
  (void)state;
  cs_options_t opts;
  cs_options_init(&opts);
  assert_true(opts.nvtx);
  assert_accepted("CUDASNAP_NVTX=0", &opts);
  assert_false(opts.nvtx);
  assert_accepted("CUDASNAP_NVTX=on", &opts);
  assert_true(opts.nvtx);
  assert_rejected("CUDASNAP_NVTX=sometimes");
}

/* CUDASNAP_ARGV: the command line goes into snapshots and recordings unless it is 0. */
/* CUDASNAP_ALLOCATOR_FRAMES: checked whole here (memviz compiles it); a bad glob names itself and
 * why in the one warning, and no glob of the list is used. */
static void test_allocator_frames(void **state) {
  (void)state;
  cs_options_t opts;
  cs_options_init(&opts);
  assert_string_equal(opts.allocator_frames, "");
  assert_accepted("CUDASNAP_ALLOCATOR_FRAMES=cuda_alloc, MyPool::*,Trainer.alloc", &opts);
  assert_string_equal(opts.allocator_frames, "cuda_alloc, MyPool::*,Trainer.alloc");
  static const char *const bad[] = {
      "CUDASNAP_ALLOCATOR_FRAMES=cuda_alloc,[ab",   "CUDASNAP_ALLOCATOR_FRAMES=a,,b",
      "CUDASNAP_ALLOCATOR_FRAMES=,",                "CUDASNAP_ALLOCATOR_FRAMES=x\\",
      "CUDASNAP_ALLOCATOR_FRAMES=[[:alpha:]]*",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_rejected(bad[i]);
  cs_options_init(&opts);
  assert_int_equal(parse_entry("CUDASNAP_ALLOCATOR_FRAMES=cuda_alloc,[ab", &opts), 1);
  const char *log = captured();
  assert_contains(log, "(`[ab` has a [ that is not closed; it takes a comma-separated list");
  assert_contains(log, "); using none\n");
  /* a control character is quoted as '?', never written to the terminal */
  assert_int_equal(parse_entry("CUDASNAP_ALLOCATOR_FRAMES=a\033[2Jb", &opts), 1);
  log = captured();
  assert_contains(log, "`a?[2Jb` holds a control character");
  assert_null(strchr(log, '\033'));
  /* 64 globs, and no more */
  char list[400] = "CUDASNAP_ALLOCATOR_FRAMES=";
  for (int i = 0; i < 64; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%sf%d", i ? "," : "", i);
  assert_accepted(list, &opts);
  strcat(list, ",g");
  assert_int_equal(parse_entry(list, &opts), 1);
  log = captured();
  assert_int_equal(count_lines(log), 1);
  assert_contains(log, "(`g` is one glob more than the 64 taken;");
  assert_string_equal(opts.allocator_frames, ""); /* the default */
  char longest[1100] = "CUDASNAP_ALLOCATOR_FRAMES=";
  memset(longest + strlen(longest), 'a', 1024);
  cs_options_init(&opts);
  assert_int_equal(parse_entry(longest, &opts), 1);
  log = captured();
  assert_int_equal(count_lines(log), 1);
  assert_contains(log, "is not accepted (a comma-separated list of at most 1023 bytes");
  assert_string_equal(opts.allocator_frames, "");
}

static void test_argv(void **state) {
  (void)state;
  cs_options_t opts;
  cs_options_init(&opts);
  assert_true(opts.argv);
  assert_accepted("CUDASNAP_ARGV=0", &opts);
  assert_false(opts.argv);
  assert_accepted("CUDASNAP_ARGV=yes", &opts);
  assert_true(opts.argv);
  assert_rejected("CUDASNAP_ARGV=secret");
}

/* CUDASNAP_LIVE: a boolean, on by default; CUDASNAP_LIVE_INTERVAL: seconds with at most three
 * decimals, 1 to 3600 (at most once a second), 1 by default. */
static void test_live(void **state) {
  (void)state;
  cs_options_t opts;
  cs_options_init(&opts);
  assert_true(opts.live);
  assert_int_equal(opts.live_interval_ms, 1000);
  assert_accepted("CUDASNAP_LIVE=0", &opts);
  assert_false(opts.live);
  assert_accepted("CUDASNAP_LIVE=yes", &opts);
  assert_true(opts.live);
  assert_rejected("CUDASNAP_LIVE=sometimes");
  assert_accepted("CUDASNAP_LIVE_INTERVAL=2.5", &opts);
  assert_int_equal(opts.live_interval_ms, 2500);
  assert_accepted("CUDASNAP_LIVE_INTERVAL=3600", &opts);
  assert_int_equal(opts.live_interval_ms, 3600000);
  assert_accepted("CUDASNAP_LIVE_INTERVAL=1.125", &opts);
  assert_int_equal(opts.live_interval_ms, 1125);
  static const char *const bad[] = {"CUDASNAP_LIVE_INTERVAL=0.5", "CUDASNAP_LIVE_INTERVAL=0",
                                    "CUDASNAP_LIVE_INTERVAL=3601", "CUDASNAP_LIVE_INTERVAL=1.0001",
                                    "CUDASNAP_LIVE_INTERVAL=1.", "CUDASNAP_LIVE_INTERVAL=.5",
                                    "CUDASNAP_LIVE_INTERVAL=-1", "CUDASNAP_LIVE_INTERVAL=1s",
                                    "CUDASNAP_LIVE_INTERVAL=1.x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_rejected(bad[i]);
}

/* CUDASNAP_LIVE_DIR: an absolute path below 256 bytes, /dev/shm by default (a relative one would
 * mean one place to the program and another to the tool). */
static void test_live_dir(void **state) {
  (void)state;
  cs_options_t opts;
  cs_options_init(&opts);
  assert_string_equal(opts.live_dir, "/dev/shm");
  assert_accepted("CUDASNAP_LIVE_DIR=/run/cudasnap", &opts);
  assert_string_equal(opts.live_dir, "/run/cudasnap");
  assert_rejected("CUDASNAP_LIVE_DIR=run/cudasnap");
  assert_rejected("CUDASNAP_LIVE_DIR=./live");
  char entry[300];
  snprintf(entry, sizeof entry, "CUDASNAP_LIVE_DIR=/%0254d", 0); /* 255 bytes */
  assert_accepted(entry, &opts);
  assert_int_equal(strlen(opts.live_dir), 255);
  snprintf(entry, sizeof entry, "CUDASNAP_LIVE_DIR=/%0255d", 0); /* 256 bytes: the default kept */
  assert_int_equal(parse_entry(entry, &opts), 1);
  assert_string_equal(opts.live_dir, "/dev/shm");
  assert_int_equal(count_lines(captured()), 1);
}

/* CUDASNAP_LABELS: key=value,... judged whole: keys Prometheus takes and not the exporter's own,
 * values of UTF-8 without commas or control characters, at most 8, keys different. */
static void test_labels(void **state) {
  (void)state;
  cs_options_t opts;
  cs_options_init(&opts);
  assert_string_equal(opts.labels, "");
  assert_accepted("CUDASNAP_LABELS=team=vision,queue=gpu-long", &opts);
  assert_string_equal(opts.labels, "team=vision,queue=gpu-long");
  assert_accepted("CUDASNAP_LABELS=pod=trainer-0,namespace=ml,_x=caf\xc3\xa9", &opts);
  static const char *const bad[] = {
      "CUDASNAP_LABELS=team",                 /* no value */
      "CUDASNAP_LABELS=team=",                /* an empty one */
      "CUDASNAP_LABELS==vision",              /* no key */
      "CUDASNAP_LABELS=team=a,,b=c",          /* an empty item */
      "CUDASNAP_LABELS=team=a,",              /* a trailing comma */
      "CUDASNAP_LABELS=1team=a",              /* a key starting with a digit */
      "CUDASNAP_LABELS=te-am=a",              /* a character Prometheus refuses */
      "CUDASNAP_LABELS=__name__=a",           /* Prometheus' own */
      "CUDASNAP_LABELS=pid=1",                /* the exporter's own */
      "CUDASNAP_LABELS=device=1",
      "CUDASNAP_LABELS=team=a,team=b",        /* twice */
      "CUDASNAP_LABELS=a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9", /* 9 */
      "CUDASNAP_LABELS=abcdefghijabcdefghijabcdefghijab=1",  /* a 32-byte key */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_rejected(bad[i]);
  /* the warning shows these bytes its own way (no control reaches the terminal): one line, nothing kept */
  static const char *const unprintable[] = {
      "CUDASNAP_LABELS=team=a\tb",         /* a control character */
      "CUDASNAP_LABELS=team=a\x1b[2Jb",    /* an escape sequence */
      "CUDASNAP_LABELS=team=a\xc2\x9b" "b", /* C1 */
      "CUDASNAP_LABELS=team=a\xff" "b",     /* not UTF-8 */
  };
  for (size_t i = 0; i < sizeof unprintable / sizeof unprintable[0]; i++) {
    assert_int_equal(parse_entry(unprintable[i], &opts), 1);
    assert_string_equal(opts.labels, "");
    const char *log = captured();
    assert_int_equal(count_lines(log), 1);
    assert_contains(log, "CUDASNAP_LABELS=team=a");
    assert_contains(log, " is not accepted (");
  }
  assert_accepted("CUDASNAP_LABELS=a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8", &opts);
  assert_accepted("CUDASNAP_LABELS=abcdefghijabcdefghijabcdefghija=1", &opts); /* 31 bytes */
  char entry[400];
  snprintf(entry, sizeof entry, "CUDASNAP_LABELS=k=%0255d", 0); /* a 255-byte value */
  assert_accepted(entry, &opts);
  snprintf(entry, sizeof entry, "CUDASNAP_LABELS=k=%0256d", 0); /* 256 bytes: none kept */
  assert_int_equal(parse_entry(entry, &opts), 1);
  assert_string_equal(opts.labels, "");
  assert_int_equal(count_lines(captured()), 1);
}

static void test_meminfo(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_MEMINFO=raw", &opts);
  assert_int_equal(opts.meminfo, CS_MEMINFO_RAW);
  assert_accepted("CUDASNAP_MEMINFO=adjusted", &opts);
  assert_int_equal(opts.meminfo, CS_MEMINFO_ADJUSTED);
  assert_rejected("CUDASNAP_MEMINFO=cooked");
}

static void test_alloc_conf(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_ALLOC_CONF=ipc_small:True", &opts);
  assert_true(opts.alloc.ipc_small);
  assert_accepted("CUDASNAP_ALLOC_CONF=max_split_size_mb:100,split_large:True", &opts);
  assert_int_equal(opts.alloc.max_split_size, 100u << 20);
  assert_true(opts.alloc.split_large);

  /* Its keys are judged one by one: a warning each, named after the variable. */
  cs_options_t defaults;
  cs_options_init(&defaults);
  assert_int_equal(parse_entry("CUDASNAP_ALLOC_CONF=foo:1,max_split_size_mb:19", &opts), 2);
  const char *log = captured();
  assert_int_equal(count_lines(log), 2);
  assert_contains(log, "cudasnap: warning: CUDASNAP_ALLOC_CONF: foo:1 is not accepted (");
  assert_contains(log, "cudasnap: warning: CUDASNAP_ALLOC_CONF: max_split_size_mb:19 is not");
  assert_memory_equal(&opts.alloc, &defaults.alloc, sizeof opts.alloc);
  /* the text is kept as given, for the snapshot's allocator_settings */
  assert_string_equal(opts.alloc_conf_text, "foo:1,max_split_size_mb:19");
}

/* CUDASNAP_FREE and CUDASNAP_CACHE share opts->alloc with CUDASNAP_ALLOC_CONF; neither resets
 * the other, whatever the order. */
static void test_alloc_conf_with_free_and_cache(void **state) {
  (void)state;
  static const char *const envp[] = {"CUDASNAP_FREE=fence", "CUDASNAP_ALLOC_CONF=split_large:1",
                                     "CUDASNAP_CACHE=0", NULL};
  cs_options_t opts;
  assert_int_equal(parse_env(envp, &opts), 0);
  assert_int_equal(opts.alloc.free_mode, CS_FREE_FENCE);
  assert_true(opts.alloc.split_large);
  assert_false(opts.alloc.cache);
}

static void test_log(void **state) {
  (void)state;
  cs_options_t opts;
  assert_accepted("CUDASNAP_LOG=debug", &opts);
  assert_int_equal(opts.log, CS_LOG_DEBUG);
  assert_int_equal(cs_log_get_level(), CS_LOG_DEBUG);
  assert_accepted("CUDASNAP_LOG=info", &opts);
  assert_int_equal(cs_log_get_level(), CS_LOG_INFO);
  assert_rejected("CUDASNAP_LOG=verbose");
  assert_int_equal(cs_log_get_level(), CS_LOG_INFO);
}

/* CUDASNAP_LOG=quiet silences the warnings about the other variables, wherever it stands. */
static void test_log_quiet_silences_others(void **state) {
  (void)state;
  static const char *const envp[] = {"CUDASNAP_STACK_DEPTH=0", "CUDASNAP_FOO=1",
                                     "CUDASNAP_ALLOC_CONF=foo:1", "CUDASNAP_LOG=quiet", NULL};
  cs_options_t opts;
  assert_int_equal(parse_env(envp, &opts), 3);
  assert_string_equal(captured(), "");
  assert_int_equal(opts.log, CS_LOG_QUIET);
  assert_int_equal(opts.stack_depth, 32);
}

static void test_unknown_variable(void **state) {
  (void)state;
  cs_options_t defaults, opts;
  cs_options_init(&defaults);
  assert_int_equal(parse_entry("CUDASNAP_FOO=1", &opts), 1);
  const char *log = captured();
  assert_int_equal(count_lines(log), 1);
  assert_contains(log, "cudasnap: warning: unknown variable CUDASNAP_FOO ignored; known: ");
  assert_contains(log, " CUDASNAP_OUTPUT ");
  assert_true(ends_with(log, " CUDASNAP_LOG\n"));
  assert_memory_equal(&opts, &defaults, sizeof opts);

  /* A misspelt name is the typical case. */
  assert_int_equal(parse_entry("CUDASNAP_STACKDEPTH=8", &opts), 1);
  assert_contains(captured(), "unknown variable CUDASNAP_STACKDEPTH ignored");
}

static void test_empty_values_are_unset(void **state) {
  (void)state;
  static const char *const envp[] = {"CUDASNAP_STACK_DEPTH=", "CUDASNAP_OUTPUT=",
                                     "CUDASNAP_FOO=", "CUDASNAP_LOG=", NULL};
  cs_options_t defaults, opts;
  cs_options_init(&defaults);
  assert_int_equal(parse_env(envp, &opts), 0);
  assert_string_equal(captured(), "");
  assert_memory_equal(&opts, &defaults, sizeof opts);
}

static void test_other_variables_ignored(void **state) {
  (void)state;
  static const char *const envp[] = {"PATH=/usr/bin", "CUDA_VISIBLE_DEVICES=0",
                                     "CUDASNAPSHOT=1", "cudasnap_stack_depth=0",
                                     "CUDASNAP_STACK_DEPTH", "=CUDASNAP_LOG=debug", NULL};
  cs_options_t defaults, opts;
  cs_options_init(&defaults);
  assert_int_equal(parse_env(envp, &opts), 0);
  assert_string_equal(captured(), "");
  assert_memory_equal(&opts, &defaults, sizeof opts);
}

static void test_empty_environment(void **state) {
  (void)state;
  static const char *const envp[] = {NULL};
  cs_options_t defaults, opts;
  cs_options_init(&defaults);
  assert_int_equal(parse_env(envp, &opts), 0);
  assert_memory_equal(&opts, &defaults, sizeof opts);
}

/* A bad value keeps the earlier one, and the warning says which. */
static void test_earlier_value_kept(void **state) {
  (void)state;
  static const char *const envp[] = {"CUDASNAP_STACK_DEPTH=64", "CUDASNAP_STACK_DEPTH=0", NULL};
  cs_options_t opts;
  assert_int_equal(parse_env(envp, &opts), 1);
  assert_int_equal(opts.stack_depth, 64);
  assert_true(ends_with(captured(), "CUDASNAP_STACK_DEPTH=0 is not accepted (an integer from 1 to "
                                    "256); using 64\n"));
}

/* Each bad value counts once and gets its line; the good ones around them still apply. */
static void test_problems_counted(void **state) {
  (void)state;
  static const char *const envp[] = {"CUDASNAP_FORMAT=xml",    "CUDASNAP_STACK_DEPTH=16",
                                     "CUDASNAP_SIGNAL=KILL",   "CUDASNAP_TYPO=1",
                                     "CUDASNAP_DUMP_ON=never", "CUDASNAP_MEMINFO=raw",
                                     NULL};
  cs_options_t opts;
  assert_int_equal(parse_env(envp, &opts), 4);
  assert_int_equal(count_lines(captured()), 4);
  assert_int_equal(opts.stack_depth, 16);
  assert_int_equal(opts.meminfo, CS_MEMINFO_RAW);
  assert_int_equal(opts.format, CS_FORMAT_AUTO);
  assert_int_equal(opts.signal, SIGUSR1);
}

/* stream frees need their precondition confirmed: without CUDASNAP_FREE_STREAM_ACK=1, one line
 * saying what the mode requires, and sync frees (issue 39, item 4) */
static void test_free_stream_needs_ack(void **state) {
  (void)state;
  static const char *const bare[] = {"CUDASNAP_FREE=stream", NULL};
  static const char *const acked[] = {"CUDASNAP_FREE=stream", "CUDASNAP_FREE_STREAM_ACK=1", NULL};
  static const char *const ack_first[] = {"CUDASNAP_FREE_STREAM_ACK=yes", "CUDASNAP_FREE=stream", NULL};
  cs_options_t opts;
  cs_options_init(&opts);
  assert_int_equal(parse_env(bare, &opts), 1);
  assert_int_equal(opts.alloc.free_mode, CS_FREE_SYNC);
  const char *log = captured();
  assert_int_equal(count_lines(log), 1);
  assert_contains(log, "CUDASNAP_FREE=stream reuses a freed block at once");
  assert_contains(log, "CUDASNAP_FREE_STREAM_ACK=1");
  assert_contains(log, "using sync\n");
  cs_options_init(&opts);
  assert_int_equal(parse_env(acked, &opts), 0);
  assert_int_equal(opts.alloc.free_mode, CS_FREE_STREAM);
  cs_options_init(&opts);
  assert_int_equal(parse_env(ack_first, &opts), 0);
  assert_int_equal(opts.alloc.free_mode, CS_FREE_STREAM);
  assert_rejected("CUDASNAP_FREE_STREAM_ACK=maybe");
}

static void test_options_log(void **state) {
  (void)state;
  static const char *const envp[] = {"CUDASNAP_SIGNAL=40", "CUDASNAP_DUMP_ON=oom,exit",
                                     "CUDASNAP_FREE=stream", "CUDASNAP_FREE_STREAM_ACK=1", "CUDASNAP_CACHE=off",
                                     "CUDASNAP_ALLOC_CONF=roundup_power2_divisions:[2:4,>:8]",
                                     NULL};
  cs_options_t opts;
  cs_options_init(&opts);
  cs_options_log(&opts); /* nothing below debug */
  assert_string_equal(captured(), "");

  assert_int_equal(parse_env(envp, &opts), 0);
  cs_log_set_level(CS_LOG_DEBUG);
  cs_options_log(&opts);
  const char *log = captured();
  assert_int_equal(count_lines(log), 22); /* one per row of cs_options.def */
  assert_contains(log, "cudasnap: debug: CUDASNAP_LIVE=1\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_LIVE_INTERVAL=1\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_LIVE_DIR=/dev/shm\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_LABELS=\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_RECORD=\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_OUTPUT=cudasnap-%e-%p-%n-%t.json\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_FORMAT=auto\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_STACK_DEPTH=32\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_MAX_ENTRIES=100000\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_DUMP_ON=exit,oom\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_SIGNAL=40\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_FREE=stream\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_CACHE=0\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_ALLOC_CONF=max_split_size_mb:unlimited,"
                       "max_non_split_rounding_mb:20,garbage_collection_threshold:0,"
                       "roundup_power2_divisions:[1:4,2:4,4:8,8:8,");
  assert_contains(log, ",32768:8],split_large:False,ipc_small:False\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_ARGV=1\n");
  assert_contains(log, "cudasnap: debug: CUDASNAP_LOG=info\n");

  /* A value with several words prints as the first one: USR1, not SIGUSR1. */
  cs_options_init(&opts);
  opts.dump_on = 0;
  cs_options_log(&opts);
  log = captured();
  assert_contains(log, "CUDASNAP_DUMP_ON=none\n");
  assert_contains(log, "CUDASNAP_SIGNAL=USR1\n");
  opts.signal = 0;
  cs_options_log(&opts);
  assert_contains(captured(), "CUDASNAP_SIGNAL=none\n");
}

/* A value holding control characters still gives exactly one warning line. */
static void test_warning_is_one_line(void **state) {
  (void)state;
  const char *env[] = {"CUDASNAP_STACKS=bad\nvalue\r", NULL};
  cs_options_t opts;
  assert_int_equal(parse_env(env, &opts), 1);
  const char *text = captured();
  assert_int_equal(count_lines(text), 1);
  assert_contains(text, "CUDASNAP_STACKS=bad?value?");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_defaults, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_warning_is_one_line, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_warning_text, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_output, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_output_length, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_format, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_stacks, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_stack_depth, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_max_entries, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_dump_on, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_signal, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_free_mode, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_free_stream_needs_ack, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_cache, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_children, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_nvtx, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_live, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_live_dir, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_labels, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_meminfo, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_alloc_conf, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_alloc_conf_with_free_and_cache, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_log, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_log_quiet_silences_others, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_unknown_variable, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_empty_values_are_unset, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_other_variables_ignored, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_empty_environment, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_earlier_value_kept, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_problems_counted, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_options_log, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_argv, log_capture_setup, log_capture_teardown),
      cmocka_unit_test_setup_teardown(test_allocator_frames, log_capture_setup, log_capture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

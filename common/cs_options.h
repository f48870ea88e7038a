/* SPDX-License-Identifier: Apache-2.0 */
/* Process configuration: one field per CUDASNAP_* variable of docs/design.md section 5.
 *
 * common/cs_options.def is the single source of truth for the variables (X-macro): their names,
 * defaults and accepted values drive the defaults, the parser's name lookup, the warnings and the
 * debug print of every effective option. The struct below is written out because three variables
 * (CUDASNAP_ALLOC_CONF, CUDASNAP_FREE, CUDASNAP_CACHE) fill the one `alloc` field. Parsing takes an
 * envp array instead of calling getenv, so tests can hand it synthetic environments. */
#ifndef CS_OPTIONS_H
#define CS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cs_alloc_conf.h"
#include "common/cs_log.h"

typedef enum cs_format_e {
  CS_FORMAT_AUTO = 0, /* from the output's extension: .pickle/.pkl -> pickle, else json */
  CS_FORMAT_JSON = 1,
  CS_FORMAT_PICKLE = 2,
} cs_format_t;

typedef enum cs_stacks_e {
  CS_STACKS_NATIVE = 0, /* native frames only */
  CS_STACKS_NONE = 1,
  CS_STACKS_ALL = 2,    /* native, with Python frames where the thread runs Python */
  CS_STACKS_PYTHON = 3, /* Python frames only */
} cs_stacks_t;

typedef enum cs_meminfo_e {
  CS_MEMINFO_ADJUSTED = 0, /* cuMemGetInfo counts cached-but-free bytes as free */
  CS_MEMINFO_RAW = 1,
} cs_meminfo_t;

/* CUDASNAP_DUMP_ON: a subset of these bits; 0 = none. */
enum {
  CS_DUMP_ON_EXIT = 1u << 0,
  CS_DUMP_ON_SIGNAL = 1u << 1,
  CS_DUMP_ON_OOM = 1u << 2,
  CS_DUMP_ON_CRASH = 1u << 3, /* SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL with their default action */
  CS_DUMP_ON_TERM = 1u << 4,  /* SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU with their default action */
};

#define CS_OPTION_PATH_MAX 1024
#define CS_OPTION_LIVE_DIR_MAX 256

typedef struct cs_options_s {
  char output[CS_OPTION_PATH_MAX]; /* CUDASNAP_OUTPUT pattern */
  cs_format_t format;              /* CUDASNAP_FORMAT */
  cs_stacks_t stacks;              /* CUDASNAP_STACKS */
  uint32_t stack_depth;            /* CUDASNAP_STACK_DEPTH, 1..256 */
  uint64_t max_entries;            /* CUDASNAP_MAX_ENTRIES, 0 = state only */
  char record[CS_OPTION_PATH_MAX]; /* CUDASNAP_RECORD pattern, "" = no recording file */
  uint32_t dump_on;                /* CUDASNAP_DUMP_ON, CS_DUMP_ON_* bits */
  int signal;                      /* CUDASNAP_SIGNAL, 0 = none */
  cs_alloc_conf_t alloc;           /* CUDASNAP_ALLOC_CONF, CUDASNAP_FREE, CUDASNAP_CACHE */
  bool free_stream_ack;            /* CUDASNAP_FREE_STREAM_ACK: stream free mode's precondition confirmed */
  char alloc_conf_text[CS_OPTION_PATH_MAX]; /* CUDASNAP_ALLOC_CONF as given, "" if unset */
  cs_meminfo_t meminfo;            /* CUDASNAP_MEMINFO */
  bool children;                   /* CUDASNAP_CHILDREN */
  bool nvtx;                       /* CUDASNAP_NVTX (read again before main: interpose/nvtx.c) */
  bool argv;                       /* CUDASNAP_ARGV: the command line goes into files */
  bool live;                       /* CUDASNAP_LIVE: publish the live record (the registration stays) */
  uint32_t live_interval_ms;       /* CUDASNAP_LIVE_INTERVAL, 1000..3600000 */
  char live_dir[CS_OPTION_LIVE_DIR_MAX]; /* CUDASNAP_LIVE_DIR: where the live record goes */
  char labels[CS_OPTION_PATH_MAX]; /* CUDASNAP_LABELS as given (valid: common/cs_labels.h), "" = none */
  char allocator_frames[CS_OPTION_PATH_MAX]; /* CUDASNAP_ALLOCATOR_FRAMES as given (checked), "" = none */
  cs_log_level_t log;              /* CUDASNAP_LOG */
} cs_options_t;

/* Fill opts with the defaults. */
void cs_options_init(cs_options_t *opts);

/* Parse every CUDASNAP_* entry of envp (a NULL-terminated "NAME=value" array, like environ) into
 * opts, which must hold defaults. A bad value: one warning line naming the variable, the value and
 * what is accepted; the default is kept. An unknown CUDASNAP_* name: one warning line (typos).
 * CUDASNAP_FREE=stream without CUDASNAP_FREE_STREAM_ACK=1: one warning line saying what the mode
 * requires, and sync frees.
 * Returns the number of problems reported. Never allocates, never aborts. */
int cs_options_parse(const char *const *envp, cs_options_t *opts);

/* Print every effective option, one cs_log_debug line each ("CUDASNAP_X=value"). */
void cs_options_log(const cs_options_t *opts);

#endif

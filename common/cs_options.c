/* SPDX-License-Identifier: Apache-2.0 */
/* CUDASNAP_* variables -> cs_options_t, driven by the table in common/cs_options.def.
 *
 * Runs inside the profiled process, possibly from its first CUDA call: no malloc, no stdio
 * streams, no getenv, and nothing a bad value does goes beyond one warning line. */
#include "common/cs_options.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/cs_assert.h"
#include "common/cs_compiler.h"
#include "common/cs_error.h"
#include "common/cs_labels.h"
#include "common/cs_glob.h"
#include "common/cs_parse.h"

/* ------------------------------------------------------------------------------------------------
 * Value helpers
 * ---------------------------------------------------------------------------------------------- */


/* The words a variable takes, matched without regard to case. Where several words mean the same
 * value, the first one is the name printed for it. */
typedef struct cs_option_word_s {
  const char *word;
  int value;
} cs_option_word_t;

#define CS_WORDS(table) (table), CS_ARRAY_SIZE(table)

/* text need not be NUL-terminated: CUDASNAP_DUMP_ON passes one item of its list. */
static bool cs_option_word_value(const cs_option_word_t *words, size_t count, const char *text,
                                 size_t len, int *out) {
  for (size_t i = 0; i < count; i++) {
    if (strlen(words[i].word) == len && strncasecmp(words[i].word, text, len) == 0) {
      *out = words[i].value;
      return true;
    }
  }
  return false;
}

/* A value no word stands for (a signal given by number) is printed as a number. */
static void cs_option_show_word(const cs_option_word_t *words, size_t count, int value, char *buf,
                                size_t size) {
  for (size_t i = 0; i < count; i++) {
    if (words[i].value == value) {
      snprintf(buf, size, "%s", words[i].word);
      return;
    }
  }
  snprintf(buf, size, "%d", value);
}

/* snprintf at buf + *used; *used stays below size, so a truncated print cannot run past buf. */
CS_PRINTF(4, 5) static void cs_option_append(char *buf, size_t size, size_t *used,
                                             const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n < size - *used ? (size_t)n : size - *used - 1;
}

static const cs_option_word_t cs_bool_words[] = {
    {"1", 1}, {"0", 0}, {"true", 1}, {"false", 0}, {"yes", 1}, {"no", 0}, {"on", 1}, {"off", 0},
};

/* ------------------------------------------------------------------------------------------------
 * One parse and one show function per row of cs_options.def.
 *
 * parse returns 0 when it stored the value, -CS_EINVAL when it rejects it (the caller warns and
 * the field keeps its value), or, for CUDASNAP_ALLOC_CONF, whose keys are judged one by one, the
 * number of problems it has already reported itself.
 * ---------------------------------------------------------------------------------------------- */

typedef int cs_option_parse_fn(const char *value, cs_options_t *opts);
typedef void cs_option_show_fn(const cs_options_t *opts, char *buf, size_t size);

/* An option whose values are exactly the words of one table. */
#define CS_OPTION_WORDS(id, field, type, words)                                                    \
  static int cs_option_parse_##id(const char *value, cs_options_t *opts) {                         \
    int parsed;                                                                                    \
    if (!cs_option_word_value(CS_WORDS(words), value, strlen(value), &parsed)) return -CS_EINVAL;  \
    opts->field = (type)parsed;                                                                    \
    return 0;                                                                                      \
  }                                                                                                \
  static void cs_option_show_##id(const cs_options_t *opts, char *buf, size_t size) {              \
    cs_option_show_word(CS_WORDS(words), (int)opts->field, buf, size);                             \
  }

static const cs_option_word_t cs_format_words[] = {
    {"auto", CS_FORMAT_AUTO}, {"json", CS_FORMAT_JSON}, {"pickle", CS_FORMAT_PICKLE}};
static const cs_option_word_t cs_stacks_words[] = {
    {"all", CS_STACKS_ALL}, {"native", CS_STACKS_NATIVE}, {"python", CS_STACKS_PYTHON}, {"none", CS_STACKS_NONE}};
static const cs_option_word_t cs_free_words[] = {
    {"sync", CS_FREE_SYNC}, {"fence", CS_FREE_FENCE}, {"stream", CS_FREE_STREAM}};
static const cs_option_word_t cs_meminfo_words[] = {
    {"adjusted", CS_MEMINFO_ADJUSTED}, {"raw", CS_MEMINFO_RAW}};
static const cs_option_word_t cs_log_words[] = {
    {"info", CS_LOG_INFO}, {"quiet", CS_LOG_QUIET}, {"debug", CS_LOG_DEBUG}};

CS_OPTION_WORDS(format, format, cs_format_t, cs_format_words)
CS_OPTION_WORDS(stacks, stacks, cs_stacks_t, cs_stacks_words)
CS_OPTION_WORDS(free, alloc.free_mode, cs_free_mode_t, cs_free_words)
CS_OPTION_WORDS(free_stream_ack, free_stream_ack, bool, cs_bool_words)
CS_OPTION_WORDS(cache, alloc.cache, bool, cs_bool_words)
CS_OPTION_WORDS(meminfo, meminfo, cs_meminfo_t, cs_meminfo_words)
CS_OPTION_WORDS(children, children, bool, cs_bool_words)
CS_OPTION_WORDS(nvtx, nvtx, bool, cs_bool_words)
CS_OPTION_WORDS(argv, argv, bool, cs_bool_words)
CS_OPTION_WORDS(log, log, cs_log_level_t, cs_log_words)
CS_OPTION_WORDS(live, live, bool, cs_bool_words)

/* -- CUDASNAP_LIVE_INTERVAL: seconds, at most three decimals; at most once a second -- */

enum { CS_LIVE_INTERVAL_MIN_MS = 1000, CS_LIVE_INTERVAL_MAX_MS = 3600 * 1000 };

static int cs_option_parse_live_interval(const char *value, cs_options_t *opts) {
  const char *dot = strchr(value, '.');
  size_t whole_len = dot ? (size_t)(dot - value) : strlen(value);
  char whole[16];
  if (whole_len == 0 || whole_len >= sizeof whole) return -CS_EINVAL;
  memcpy(whole, value, whole_len);
  whole[whole_len] = '\0';
  uint64_t seconds, ms = 0;
  if (!cs_parse_u64(whole, &seconds) || seconds > CS_LIVE_INTERVAL_MAX_MS / 1000) return -CS_EINVAL;
  if (dot) {
    const char *frac = dot + 1;
    size_t n = strlen(frac);
    if (n == 0 || n > 3) return -CS_EINVAL;
    for (size_t i = 0; i < 3; i++) {
      if (i < n && (frac[i] < '0' || frac[i] > '9')) return -CS_EINVAL;
      ms = ms * 10 + (i < n ? (uint64_t)(frac[i] - '0') : 0);
    }
  }
  uint64_t total = seconds * 1000 + ms;
  if (total < CS_LIVE_INTERVAL_MIN_MS || total > CS_LIVE_INTERVAL_MAX_MS) return -CS_EINVAL;
  opts->live_interval_ms = (uint32_t)total;
  return 0;
}

static void cs_option_show_live_interval(const cs_options_t *opts, char *buf, size_t size) {
  unsigned ms = opts->live_interval_ms;
  if (ms % 1000 == 0) snprintf(buf, size, "%u", ms / 1000);
  else snprintf(buf, size, "%u.%03u", ms / 1000, ms % 1000);
}

/* -- CUDASNAP_LIVE_DIR: absolute, so that the library (in the program's current directory) and the
 * tool (in its own) mean one place -- */

static int cs_option_parse_live_dir(const char *value, cs_options_t *opts) {
  size_t len = strlen(value);
  if (value[0] != '/' || len >= sizeof opts->live_dir) return -CS_EINVAL;
  memcpy(opts->live_dir, value, len + 1);
  return 0;
}

static void cs_option_show_live_dir(const cs_options_t *opts, char *buf, size_t size) {
  snprintf(buf, size, "%s", opts->live_dir);
}

/* -- CUDASNAP_LABELS: judged whole here, so that a bad one warns once, at start -- */

static int cs_option_parse_labels(const char *value, cs_options_t *opts) {
  cs_label_t labels[CS_LABELS_MAX];
  size_t len = strlen(value);
  if (len >= sizeof opts->labels || cs_labels_parse(value, labels) < 0) return -CS_EINVAL;
  memcpy(opts->labels, value, len + 1);
  return 0;
}

static void cs_option_show_labels(const cs_options_t *opts, char *buf, size_t size) {
  snprintf(buf, size, "%s", opts->labels);
}

/* -- CUDASNAP_OUTPUT -- */

_Static_assert(CS_OPTION_PATH_MAX == 1024, "update the CUDASNAP_OUTPUT row of cs_options.def");

/* Only the specifiers the snapshot writer expands (docs/design.md section 5), so that a typo such
 * as %P is caught now instead of ending up in a file name at the first dump. */
static bool cs_output_pattern_is_valid(const char *pattern) {
  for (const char *p = strchr(pattern, '%'); p != NULL; p = strchr(p + 2, '%')) {
    if (p[1] == '\0' || strchr("ephrnt%", p[1]) == NULL) return false;
  }
  return true;
}

static int cs_option_parse_output(const char *value, cs_options_t *opts) {
  size_t len = strlen(value);
  if (len >= sizeof opts->output || !cs_output_pattern_is_valid(value)) return -CS_EINVAL;
  memcpy(opts->output, value, len + 1);
  return 0;
}

static void cs_option_show_output(const cs_options_t *opts, char *buf, size_t size) {
  snprintf(buf, size, "%s", opts->output);
}

/* -- CUDASNAP_RECORD -- */

/* The recording file is made once, at start: %n and %t (a dump's number and trigger) mean
 * nothing for it, so only the specifiers that name the process are taken. */
static int cs_option_parse_record(const char *value, cs_options_t *opts) {
  size_t len = strlen(value);
  if (len >= sizeof opts->record) return -CS_EINVAL;
  for (const char *p = strchr(value, '%'); p != NULL; p = strchr(p + 2, '%')) {
    if (p[1] == '\0' || strchr("ephr%", p[1]) == NULL) return -CS_EINVAL;
  }
  memcpy(opts->record, value, len + 1);
  return 0;
}

static void cs_option_show_record(const cs_options_t *opts, char *buf, size_t size) {
  snprintf(buf, size, "%s", opts->record);
}

/* -- CUDASNAP_STACK_DEPTH, CUDASNAP_MAX_ENTRIES -- */

enum { CS_STACK_DEPTH_MAX = 256 };

static int cs_option_parse_stack_depth(const char *value, cs_options_t *opts) {
  uint64_t depth;
  if (!cs_parse_u64(value, &depth) || depth < 1 || depth > CS_STACK_DEPTH_MAX) {
    return -CS_EINVAL;
  }
  opts->stack_depth = (uint32_t)depth;
  return 0;
}

static void cs_option_show_stack_depth(const cs_options_t *opts, char *buf, size_t size) {
  snprintf(buf, size, "%u", (unsigned)opts->stack_depth);
}

static int cs_option_parse_max_entries(const char *value, cs_options_t *opts) {
  return cs_parse_u64(value, &opts->max_entries) ? 0 : -CS_EINVAL;
}

static void cs_option_show_max_entries(const cs_options_t *opts, char *buf, size_t size) {
  snprintf(buf, size, "%llu", (unsigned long long)opts->max_entries);
}

/* -- CUDASNAP_DUMP_ON -- */

static const cs_option_word_t cs_dump_on_words[] = {
    {"exit", CS_DUMP_ON_EXIT},   {"signal", CS_DUMP_ON_SIGNAL}, {"oom", CS_DUMP_ON_OOM},
    {"crash", CS_DUMP_ON_CRASH}, {"term", CS_DUMP_ON_TERM}};

/* Every item of the list must be a trigger: "exit,,oom" and "exit," are rejected rather than read
 * as "exit,oom", because an empty item is more likely a mistake than a style. */
static int cs_option_parse_dump_on(const char *value, cs_options_t *opts) {
  if (strcasecmp(value, "none") == 0) {
    opts->dump_on = 0;
    return 0;
  }
  uint32_t triggers = 0;
  const char *item = value;
  for (;;) {
    size_t len = strcspn(item, ",");
    int trigger;
    if (!cs_option_word_value(CS_WORDS(cs_dump_on_words), item, len, &trigger)) return -CS_EINVAL;
    triggers |= (uint32_t)trigger;
    if (item[len] == '\0') break;
    item += len + 1;
  }
  opts->dump_on = triggers;
  return 0;
}

static void cs_option_show_dump_on(const cs_options_t *opts, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < CS_ARRAY_SIZE(cs_dump_on_words); i++) {
    if (opts->dump_on & (uint32_t)cs_dump_on_words[i].value) {
      cs_option_append(buf, size, &used, "%s%s", used > 0 ? "," : "", cs_dump_on_words[i].word);
    }
  }
  if (used == 0) snprintf(buf, size, "none");
}

/* -- CUDASNAP_SIGNAL -- */

static const cs_option_word_t cs_signal_words[] = {
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"none", 0}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}};

/* KILL and STOP cannot be caught, so a dump could never be asked for with them. */
static bool cs_signal_is_catchable(uint64_t number) {
  return number >= 1 && number <= (uint64_t)SIGRTMAX && number != SIGKILL && number != SIGSTOP;
}

static int cs_option_parse_signal(const char *value, cs_options_t *opts) {
  int named;
  if (cs_option_word_value(CS_WORDS(cs_signal_words), value, strlen(value), &named)) {
    opts->signal = named;
    return 0;
  }
  uint64_t number;
  if (!cs_parse_u64(value, &number) || !cs_signal_is_catchable(number)) return -CS_EINVAL;
  opts->signal = (int)number;
  return 0;
}

static void cs_option_show_signal(const cs_options_t *opts, char *buf, size_t size) {
  cs_option_show_word(CS_WORDS(cs_signal_words), opts->signal, buf, size);
}

/* -- CUDASNAP_ALLOC_CONF -- */

static int cs_option_parse_alloc_conf(const char *value, cs_options_t *opts) {
  /* kept as given for the snapshot's allocator_settings.PYTORCH_CUDA_ALLOC_CONF */
  snprintf(opts->alloc_conf_text, sizeof opts->alloc_conf_text, "%s", value);
  return cs_alloc_conf_parse(value, "CUDASNAP_ALLOC_CONF", &opts->alloc);
}

/* The effective values, in the variable's own syntax where it has one (free_mode and cache have
 * rows of their own). */
static void cs_option_show_alloc_conf(const cs_options_t *opts, char *buf, size_t size) {
  const cs_alloc_conf_t *conf = &opts->alloc;
  size_t used = 0;
  buf[0] = '\0';
  if (conf->max_split_size == SIZE_MAX) {
    cs_option_append(buf, size, &used, "max_split_size_mb:unlimited");
  } else {
    cs_option_append(buf, size, &used, "max_split_size_mb:%zu", conf->max_split_size >> 20);
  }
  cs_option_append(buf, size, &used, ",max_non_split_rounding_mb:%zu",
                   conf->max_non_split_rounding >> 20);
  cs_option_append(buf, size, &used, ",garbage_collection_threshold:%g",
                   conf->garbage_collection_threshold);
  /* Interval i starts at 2^i MiB, the key PyTorch's list syntax uses for it. */
  cs_option_append(buf, size, &used, ",roundup_power2_divisions:[");
  for (unsigned i = 0; i < CS_ROUNDUP_INTERVALS; i++) {
    cs_option_append(buf, size, &used, "%s%lu:%u", i > 0 ? "," : "", 1ul << i,
                     (unsigned)conf->roundup_power2_divisions[i]);
  }
  cs_option_append(buf, size, &used, "],split_large:%s", conf->split_large ? "True" : "False");
  cs_option_append(buf, size, &used, ",ipc_small:%s", conf->ipc_small ? "True" : "False");
}

/* -- CUDASNAP_ALLOCATOR_FRAMES: checked here (the globs are compiled where the site rule lives,
 *    memviz/allocator_frames.c), with the item that is wrong and why in the one warning -- */

enum { CS_ALLOCATOR_FRAMES_MAX_GLOBS = 64 }; /* memviz/allocator_frames.h's CS_ALLOCATOR_FRAMES_MAX */

typedef struct cs_option_globs_s {
  size_t count;
  const char *why; /* the first problem, NULL for none */
  const char *item;
  size_t len;
} cs_option_globs_t;

static bool cs_option_glob_item(void *ctx, const char *item, size_t len) {
  cs_option_globs_t *g = ctx;
  g->why = cs_glob_check(item, len);
  if (g->why == NULL && ++g->count > CS_ALLOCATOR_FRAMES_MAX_GLOBS) g->why = "is one glob more than the 64 taken";
  g->item = item;
  g->len = len;
  return g->why == NULL;
}

/* text[0..len) into buf, its control characters as '?', cut to fit */
static void cs_option_printable(const char *text, size_t len, char *buf, size_t size) {
  size_t n = 0;
  for (; n < len && n + 1 < size; n++) buf[n] = (unsigned char)text[n] < 0x20 || text[n] == 0x7f ? '?' : text[n];
  buf[n] = '\0';
}

static const char cs_option_allocator_frames_accepted[] =
    "a comma-separated list of at most 64 shell globs over function names, each of at most 255 bytes";

static int cs_option_parse_allocator_frames(const char *value, cs_options_t *opts) {
  const size_t len = strlen(value);
  if (len >= sizeof opts->allocator_frames) return -CS_EINVAL; /* the table's warning says what is taken */
  cs_option_globs_t g = {.count = 0, .why = NULL, .item = value, .len = 0};
  if (len > 0) (void)cs_glob_list_each(value, cs_option_glob_item, &g);
  if (g.why == NULL) {
    memcpy(opts->allocator_frames, value, len + 1);
    return 0;
  }
  /* which glob and why, in the one warning; a glob may hold any byte: what the warning quotes
   * has its control characters as '?' */
  char shown[129], item[80]; /* as much as the other warnings quote of a value */
  cs_option_printable(value, len, shown, sizeof shown);
  cs_option_printable(g.item, g.len, item, sizeof item);
  cs_log_warn("CUDASNAP_ALLOCATOR_FRAMES=%s%s is not accepted (`%s%s` %s; it takes %s); using none", shown,
              len >= sizeof shown ? "..." : "", item, g.len >= sizeof item ? "..." : "", g.why,
              cs_option_allocator_frames_accepted);
  return 1;
}

static void cs_option_show_allocator_frames(const cs_options_t *opts, char *buf, size_t size) {
  snprintf(buf, size, "%s", opts->allocator_frames);
}

/* ------------------------------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------------------------------- */

typedef struct cs_option_s {
  const char *name;
  const char *default_value;
  const char *accepted;
  cs_option_parse_fn *parse;
  cs_option_show_fn *show;
} cs_option_t;

/* Row indices, so that code can name a row (CUDASNAP_LOG is parsed before the others). */
enum {
#define CS_OPT(id, name, default_value, accepted) CS_OPTION_##id,
#include "common/cs_options.def"
#undef CS_OPT
  CS_OPTION_COUNT
};

static const cs_option_t cs_options_table[CS_OPTION_COUNT] = {
#define CS_OPT(id, name, default_value, accepted) \
  {name, default_value, accepted, cs_option_parse_##id, cs_option_show_##id},
#include "common/cs_options.def"
#undef CS_OPT
};

/* " CUDASNAP_OUTPUT CUDASNAP_FORMAT ...", for the unknown-variable warning. */
static const char cs_option_names[] =
#define CS_OPT(id, name, default_value, accepted) " " name
#include "common/cs_options.def"
#undef CS_OPT
    ;

static const char cs_option_prefix[] = "CUDASNAP_";

/* Longest part of a value that a warning quotes: a long CUDASNAP_OUTPUT, the typical over-long
 * value, would otherwise push what is accepted off the end of the line. */
enum { CS_OPTION_QUOTE_MAX = 128 };

static int cs_option_quote_len(const char *value) {
  return (int)strnlen(value, CS_OPTION_QUOTE_MAX);
}

static const cs_option_t *cs_option_find(const char *name, size_t len) {
  for (size_t i = 0; i < CS_OPTION_COUNT; i++) {
    const char *known = cs_options_table[i].name;
    if (strlen(known) == len && memcmp(known, name, len) == 0) return &cs_options_table[i];
  }
  return NULL;
}

/* Returns the number of problems reported. */
static int cs_option_apply(const cs_option_t *option, const char *value, cs_options_t *opts) {
  int rc = option->parse(value, opts);
  if (rc >= 0) return rc;
  char kept[CS_OPTION_PATH_MAX];
  option->show(opts, kept, sizeof kept);
  int quoted = cs_option_quote_len(value);
  cs_log_warn("%s=%.*s%s is not accepted (%s); using %s", option->name, quoted, value,
              value[quoted] != '\0' ? "..." : "", option->accepted, kept);
  return 1;
}

static int cs_option_warn_unknown(const char *name, size_t len) {
  int quoted = len < CS_OPTION_QUOTE_MAX ? (int)len : CS_OPTION_QUOTE_MAX;
  cs_log_warn("unknown variable %.*s%s ignored; known:%s", quoted, name,
              (size_t)quoted < len ? "..." : "", cs_option_names);
  return 1;
}

/* One pass over envp: the CUDASNAP_LOG entries when log_pass is set, every other CUDASNAP_*
 * entry otherwise. Returns the number of problems reported. */
static int cs_options_parse_pass(const char *const *envp, cs_options_t *opts, bool log_pass) {
  const cs_option_t *log_option = &cs_options_table[CS_OPTION_log];
  int problems = 0;
  for (; *envp != NULL; envp++) {
    const char *entry = *envp;
    if (strncmp(entry, cs_option_prefix, sizeof cs_option_prefix - 1) != 0) continue;
    const char *equals = strchr(entry, '=');
    if (equals == NULL || equals[1] == '\0') continue; /* CUDASNAP_X= means unset */
    size_t name_len = (size_t)(equals - entry);
    const cs_option_t *option = cs_option_find(entry, name_len);
    if ((option == log_option) != log_pass) continue;
    if (option == NULL) {
      problems += cs_option_warn_unknown(entry, name_len);
    } else {
      problems += cs_option_apply(option, equals + 1, opts);
    }
  }
  return problems;
}

/* ------------------------------------------------------------------------------------------------
 * API
 * ---------------------------------------------------------------------------------------------- */

void cs_options_init(cs_options_t *opts) {
  memset(opts, 0, sizeof *opts);
  /* The CUDASNAP_ALLOC_CONF keys have no rows of their own; their defaults are the allocator's. */
  cs_alloc_conf_init(&opts->alloc);
  for (size_t i = 0; i < CS_OPTION_COUNT; i++) {
    int rc = cs_options_table[i].parse(cs_options_table[i].default_value, opts);
    cs_assert(rc == 0); /* every default in cs_options.def is an accepted value */
    (void)rc;
  }
}

int cs_options_parse(const char *const *envp, cs_options_t *opts) {
  /* CUDASNAP_LOG first, so that CUDASNAP_LOG=quiet also silences the warnings about the others. */
  int problems = cs_options_parse_pass(envp, opts, true);
  cs_log_set_level(opts->log);
  problems += cs_options_parse_pass(envp, opts, false);
  /* stream frees reuse a block at once: right only for programs that order every use of a block
   * before its free on the legacy default stream, which nothing here can check (docs/allocator.md) */
  if (opts->alloc.free_mode == CS_FREE_STREAM && !opts->free_stream_ack) {
    cs_log_warn("CUDASNAP_FREE=stream reuses a freed block at once, which is safe only if every use of "
                "it before cudaFree ran on the legacy default stream or was synchronized; set "
                "CUDASNAP_FREE_STREAM_ACK=1 to confirm that, or use fence; using sync");
    opts->alloc.free_mode = CS_FREE_SYNC;
    problems++;
  }
  return problems;
}

void cs_options_log(const cs_options_t *opts) {
  char value[CS_OPTION_PATH_MAX];
  for (size_t i = 0; i < CS_OPTION_COUNT; i++) {
    cs_options_table[i].show(opts, value, sizeof value);
    cs_log_debug("%s=%s", cs_options_table[i].name, value);
  }
}

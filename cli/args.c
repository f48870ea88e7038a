/* SPDX-License-Identifier: Apache-2.0 */
/* Option and operand checks shared by the subcommands (contract in cli/cli.h). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cs_parse.h"
#include "common/cs_text.h"
#include "memviz/allocator_frames.h"

/* One line on stderr, safe for a terminal (common/cs_text.h): messages quote file names, a
 * program's name, the output pattern in another user's environment. */
static void cs_cli_vline(const char *prefix, const char *fmt, va_list ap) {
  char small[1024], safe_small[3 * sizeof small];
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  char *text = small, *safe = safe_small, *big = NULL, *big_safe = NULL;
  size_t len = n > 0 ? (size_t)n : 0;
  if (len >= sizeof small && (big = malloc(len + 1)) != NULL && (big_safe = malloc(3 * len + 1)) != NULL) {
    vsnprintf(big, len + 1, fmt, again);
    text = big;
    safe = big_safe;
  } else if (len >= sizeof small) {
    len = sizeof small - 1; /* without host memory: the message cut */
  }
  va_end(again);
  cs_text_safe(safe, 3 * len + 1, text, len);
  fprintf(stderr, "%s%s\n", prefix, safe);
  free(big);
  free(big_safe);
}

void cs_cli_error(const char *subcommand, const char *fmt, ...) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "cudasnap %s: ", subcommand);
  va_list ap;
  va_start(ap, fmt);
  cs_cli_vline(prefix, fmt, ap);
  va_end(ap);
}

void cs_cli_message(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cs_cli_vline("", fmt, ap);
  va_end(ap);
}

/* getopt_long has already stepped past the rejected option, so argv[optind - 1] is the word that
 * held it: that names a long option as the user spelled it. A short one may sit inside a group
 * ("-xq"), so it is named by optopt. */
int cs_cli_bad_option(const char *subcommand, int rc, char **argv) {
  const char *word = optind > 0 ? argv[optind - 1] : "";
  char name[64];
  if (strncmp(word, "--", 2) == 0) {
    snprintf(name, sizeof name, "%.*s", (int)strcspn(word, "="), word);
  } else {
    snprintf(name, sizeof name, "-%c", optopt > 0x20 && optopt < 0x7f ? optopt : '?');
  }
  if (rc == ':') {
    cs_cli_error(subcommand, "option %s needs a value (cudasnap %s --help)", name, subcommand);
  } else {
    cs_cli_error(subcommand, "unknown option %s (cudasnap %s --help)", name, subcommand);
  }
  return CS_CLI_USAGE;
}

bool cs_cli_operands(const char *subcommand, int argc, char **argv, int want, const char *names) {
  int have = argc - optind;
  if (have == want) return true;
  if (have < want) {
    cs_cli_error(subcommand, "expected %s (cudasnap %s --help)", names, subcommand);
  } else {
    cs_cli_error(subcommand, "unexpected argument '%s' after %s", argv[optind + want], names);
  }
  return false;
}

bool cs_cli_parse_count(const char *subcommand, const char *option, const char *text, uint64_t min,
                        uint64_t max, uint64_t *out) {
  uint64_t value;
  if (!cs_parse_u64(text, &value) || value < min || value > max) {
    cs_cli_error(subcommand, "%s %s is not accepted: an integer from %llu to %llu", option, text,
                 (unsigned long long)min, (unsigned long long)max);
    return false;
  }
  *out = value;
  return true;
}

bool cs_cli_allocator_frames(const char *subcommand, const char *text) {
  char why[160];
  if (cs_allocator_frames_add_list(text, why, sizeof why) == 0) return true;
  cs_cli_error(subcommand, "--allocator-frames is not accepted: %s (it takes a comma-separated list of at most 64 "
               "shell globs over function names, each of at most 255 bytes)", why);
  return false;
}

int cs_cli_count_options(const char *subcommand, const char *help, int argc, char **argv,
                         const char *name, uint64_t max, uint64_t *count) {
  const struct option options[] = {
      {name, required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  char option[64];
  snprintf(option, sizeof option, "--%s", name);
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(help, stdout); return CS_CLI_OK;
    case 'c':
      if (!cs_cli_parse_count(subcommand, option, optarg, 1, max, count)) return CS_CLI_USAGE;
      break;
    default: return cs_cli_bad_option(subcommand, c, argv);
    }
  }
  return -1;
}

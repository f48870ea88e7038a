/* SPDX-License-Identifier: Apache-2.0 */
/* CUDASNAP_* values through the library's parser (contract in cli/env_options.h). */
#include "cli/env_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_log.h"

/* What each variable takes, from the same table the parser's warnings quote. */
static const struct {
  const char *name;
  const char *accepted;
} cs_env_accepted[] = {
#define CS_OPT(id, name, default_value, accepted) {name, accepted},
#include "common/cs_options.def"
#undef CS_OPT
};

/* The parser warns through cs_log; the tool reports in its own words, so the parse runs with
 * CUDASNAP_LOG=quiet first in its environment (the parser reads that entry before the others)
 * and the level is put back afterwards. Returns the number of values it rejected. */
static int cs_env_parse_quietly(const char **envp, cs_options_t *opts) {
  cs_log_level_t level = cs_log_get_level();
  cs_options_init(opts);
  int problems = cs_options_parse(envp, opts);
  cs_log_set_level(level);
  return problems;
}

bool cs_env_option_accepted(const char *name, const char *value, const char **accepted) {
  *accepted = "";
  for (size_t i = 0; i < sizeof cs_env_accepted / sizeof cs_env_accepted[0]; i++) {
    if (strcmp(cs_env_accepted[i].name, name) == 0) *accepted = cs_env_accepted[i].accepted;
  }
  if (value[0] == '\0') return false;
  size_t len = strlen(name) + 1 + strlen(value) + 1;
  char *entry = malloc(len);
  if (entry == NULL) return false;
  snprintf(entry, len, "%s=%s", name, value);
  const char *envp[] = {"CUDASNAP_LOG=quiet", entry, NULL};
  cs_options_t opts;
  int problems = cs_env_parse_quietly(envp, &opts);
  free(entry);
  return problems == 0;
}

int cs_env_options_read(const char *const *entries, size_t count, cs_options_t *opts) {
  const char **envp = malloc((count + 2) * sizeof *envp);
  if (envp == NULL) return -1;
  size_t n = 0;
  envp[n++] = "CUDASNAP_LOG=quiet";
  for (size_t i = 0; i < count; i++) {
    /* The process's own CUDASNAP_LOG would undo the quiet entry; it changes nothing here. */
    bool ours = strncmp(entries[i], "CUDASNAP_", 9) == 0 && strncmp(entries[i], "CUDASNAP_LOG=", 13) != 0;
    if (ours) envp[n++] = entries[i];
  }
  envp[n] = NULL;
  cs_env_parse_quietly(envp, opts);
  free(envp);
  return 0;
}

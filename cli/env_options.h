/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDASNAP_* values the tool passes to a program (run) or reads back from one (dump), judged
 * by libcudasnap.so's own parser (common/cs_options.h), so the tool accepts exactly what the
 * library accepts and reads a process's settings as the library inside it did. */
#ifndef CS_CLI_ENV_OPTIONS_H
#define CS_CLI_ENV_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/cs_options.h"

/* Would the library accept `value` for the variable `name` ("CUDASNAP_STACK_DEPTH")? An empty
 * value is refused (the library reads it as unset). *accepted is set to what the variable takes,
 * as cs_options.def words it, or "" for a name it does not know. */
bool cs_env_option_accepted(const char *name, const char *value, const char **accepted);

/* The options of a process whose environment holds `entries` ("NAME=value" strings, `count` of
 * them; other variables are ignored): the defaults, overridden by each valid CUDASNAP_* value,
 * silently (the library has already warned in the process itself). Returns 0, or -1 without host
 * memory. */
int cs_env_options_read(const char *const *entries, size_t count, cs_options_t *opts);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Editing LD_PRELOAD values (CUDASNAP_CHILDREN=0). Pure string work. */
#ifndef CS_PRELOAD_ENV_H
#define CS_PRELOAD_ENV_H

#include <stdbool.h>

/* Remove every libcudasnap entry from a colon- or space-separated LD_PRELOAD value, in place; the
 * entries left are joined with ':'. Returns true when something was removed. */
bool cs_preload_env_strip(char *value);

#endif

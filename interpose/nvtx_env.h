/* SPDX-License-Identifier: Apache-2.0 */
/* Whether, and how, cudasnap makes itself the process's NVTX injection (decided once, in the
 * library's constructor, before the program's first NVTX call reads NVTX_INJECTION64_PATH).
 * Pure string work, so that it is unit-tested. */
#ifndef CS_NVTX_ENV_H
#define CS_NVTX_ENV_H

#include <stdbool.h>

typedef enum cs_nvtx_env_action_e {
  CS_NVTX_ENV_SET,         /* set NVTX_INJECTION64_PATH to cudasnap and accept NVTX's call */
  CS_NVTX_ENV_OURS,        /* it names cudasnap already (a parent set it): set it to this copy */
  CS_NVTX_ENV_OTHER_TOOL,  /* it names another tool (Nsight Systems...): leave it, say so */
  CS_NVTX_ENV_OFF,         /* CUDASNAP_NVTX=0: leave everything as it is */
  CS_NVTX_ENV_STRAY,       /* cudasnap was loaded by NVTX, not preloaded (a child of a
                              CUDASNAP_CHILDREN=0 process): refuse, and remove the variable */
  CS_NVTX_ENV_NOTHING,     /* not preloaded, variable not ours: nothing to do */
} cs_nvtx_env_action_t;

/* Is CUDASNAP_NVTX's value "off" (0, false, no, off)? Unset or anything else: on; a bad value
 * is reported when the options are parsed. */
bool cs_nvtx_env_off(const char *value);

/* Does an NVTX_INJECTION64_PATH value name a libcudasnap library? */
bool cs_nvtx_env_names_cudasnap(const char *path);

/* option: CUDASNAP_NVTX; current: NVTX_INJECTION64_PATH (NULL or "" when unset); preloaded:
 * cudasnap is in the process's global scope (LD_PRELOAD), rather than opened by NVTX. */
cs_nvtx_env_action_t cs_nvtx_env_decide(const char *option, const char *current, bool preloaded);

#endif

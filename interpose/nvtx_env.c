/* SPDX-License-Identifier: Apache-2.0 */
#include "interpose/nvtx_env.h"

#include <string.h>
#include <strings.h>

bool cs_nvtx_env_off(const char *value) {
  static const char *const off[] = {"0", "false", "no", "off"};
  for (size_t i = 0; value && i < sizeof off / sizeof off[0]; i++)
    if (strcasecmp(value, off[i]) == 0) return true;
  return false;
}

bool cs_nvtx_env_names_cudasnap(const char *path) {
  if (!path || !*path) return false;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  return strncmp(base, "libcudasnap", 11) == 0;
}

cs_nvtx_env_action_t cs_nvtx_env_decide(const char *option, const char *current, bool preloaded) {
  bool ours = cs_nvtx_env_names_cudasnap(current);
  if (!preloaded) return ours ? CS_NVTX_ENV_STRAY : CS_NVTX_ENV_NOTHING;
  if (cs_nvtx_env_off(option)) return CS_NVTX_ENV_OFF;
  if (ours) return CS_NVTX_ENV_OURS;
  if (current && *current) return CS_NVTX_ENV_OTHER_TOOL;
  return CS_NVTX_ENV_SET;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator frames part of the opt-in API of include/cudasnap.h: a program names its own
 * allocation helpers (the Python package's `cudasnap.allocator_frame`), as
 * CUDASNAP_ALLOCATOR_FRAMES names them from outside. */
#define CUDASNAP_BUILDING_LIBRARY 1
#include "include/cudasnap.h"

#include <stdio.h>
#include <string.h>

#include "common/cs_log.h"
#include "memviz/allocator_frames.h"

int cudasnap_allocator_frame(const char *glob, char *why, size_t len) {
  const char *problem = "is no string (NULL)";
  if (glob != NULL && cs_allocator_frames_add(glob, strlen(glob), &problem) == 0) {
    cs_log_debug("allocator frames: %s", glob);
    return 0;
  }
  if (why != NULL && len > 0) snprintf(why, len, "%s", problem);
  return -1;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The phases part of the opt-in API of include/cudasnap.h: ranges a program marks itself (the
 * Python package's `cudasnap.phase`), recorded as the NVTX injection records nvtxRangeStartA /
 * nvtxRangeEnd (phases/ranges.h), so every reader of phases shows them alike. */
#define CUDASNAP_BUILDING_LIBRARY 1
#include "include/cudasnap.h"

#include "phases/phases.h"
#include "phases/ranges.h"
#include "process/lifecycle.h"

uint64_t cudasnap_phase_start(const char *name) {
  if (!cs_phases_init()) return 0;
  cs_ranges_install_fork_handler(); /* a fork child forgets its parent's phases */
  uint32_t id = cs_phases_name(name ? name : "", SIZE_MAX);
  return id ? cs_ranges_start(id, cs_lifecycle_thread_device) : 0;
}

void cudasnap_phase_end(uint64_t id) { cs_ranges_end(id, cs_lifecycle_thread_device); }

/* The phases part of the opt-in API of include/cudasnap.h: ranges a program marks itself (the
 * Python package's `cudasnap.phase`), recorded as the NVTX injection records nvtxRangeStartA /
 * nvtxRangeEnd (interpose/nvtx.c), so every reader of phases shows them alike. */
#define CUDASNAP_BUILDING_LIBRARY 1
#include "include/cudasnap.h"

#include <stdatomic.h>

#include "interpose/contexts.h"
#include "interpose/lifecycle.h"
#include "interpose/nvtx.h"
#include "record/phases.h"

/* The id carries the name (bit 32 set: 0 stays "not recorded"), so no table of open ranges is
 * needed and an end on any thread names its range. */
enum { CS_API_PHASE_TAG_SHIFT = 32 };

/* The phase's device, as NVTX's ranges take it: the thread's current one once CUDA is in use. */
static int cs_api_phase_device(void) {
  return atomic_load_explicit(&cs_lifecycle_active, memory_order_acquire) ? cs_contexts_thread_device() : 0;
}

uint64_t cudasnap_phase_start(const char *name) {
  if (!cs_phases_init()) return 0;
  cs_nvtx_install_fork_handler(); /* a fork child forgets its parent's phases */
  uint32_t id = cs_phases_name(name ? name : "", SIZE_MAX);
  if (!id) return 0;
  cs_phases_record(id, CS_PHASE_START, cs_api_phase_device());
  return (UINT64_C(1) << CS_API_PHASE_TAG_SHIFT) | id;
}

void cudasnap_phase_end(uint64_t id) {
  uint32_t name = (uint32_t)id;
  if (id >> CS_API_PHASE_TAG_SHIFT != 1 || !name) return;
  cs_phases_record(name, CS_PHASE_END, cs_api_phase_device());
}

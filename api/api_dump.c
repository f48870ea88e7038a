/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot part of the opt-in API of include/cudasnap.h: torch.cuda.memory's
 * _record_memory_history and _dump_snapshot. */
#define CUDASNAP_BUILDING_LIBRARY 1
#include "include/cudasnap.h"

#include "device/contexts.h"
#include "process/dump.h"
#include "process/lifecycle.h"

void cudasnap_record_history(int enabled) {
  cs_lifecycle_activate();
  cs_contexts_set_history(enabled != 0);
}

int cudasnap_dump(const char *path) {
  cs_lifecycle_activate();
  return cs_dump_write(CS_TRIGGER_API, path);
}

int cudasnap_dump_snapshot(const char *path, char *written, size_t len) {
  cs_lifecycle_activate();
  return cs_dump_write_named(CS_TRIGGER_API, path, written, len);
}

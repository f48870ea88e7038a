/* SPDX-License-Identifier: Apache-2.0 */
/* Live figures that are lower bounds (contract in analysis/lower_bound.h). */
#include "analysis/lower_bound.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/snapview.h"

bool cs_lower_bound(const cs_doc_t *doc, uint64_t *dropped, uint64_t *kept) {
  cs_val_t root = cs_doc_root(doc);
  cs_val_t cudasnap = cs_doc_get_key(doc, root, CS_KEY_CUDASNAP);
  const char *trigger = cs_view_str_key(doc, cudasnap, CS_KEY_TRIGGER);
  int64_t n = 0, k = 0;
  if (trigger == NULL || strcmp(trigger, "recover") != 0 || !cs_view_int(doc, cudasnap, "dropped_events", &n) || n <= 0)
    return false;
  if (!cs_view_int(doc, cs_doc_get_key(doc, root, CS_KEY_ALLOCATOR_SETTINGS), "trace_alloc_max_entries", &k) || k < 0)
    k = 0;
  *dropped = (uint64_t)n;
  *kept = (uint64_t)k;
  return true;
}

void cs_lower_bound_text(uint64_t dropped, uint64_t kept, char *buf, size_t len) {
  char size[64] = "";
  if (kept > 0) snprintf(size, sizeof size, " (it was %" PRIu64 ")", kept);
  snprintf(buf, len,
           "the live figures are lower bounds: this snapshot was recovered from a recording whose history had "
           "dropped its oldest %" PRIu64 " event%s, so blocks allocated before them and untouched since are "
           "missing; a larger CUDASNAP_MAX_ENTRIES%s keeps more",
           dropped, dropped == 1 ? "" : "s", size);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "snapshot/annotations.h"

void cs_snap_write_annotations(cs_emitter_t *e, const cs_phase_list_t *phases) {
  cs_emit_list_begin(e);
  for (size_t i = 0; phases && i < phases->count; i++) {
    const cs_phase_t *p = &phases->items[i];
    cs_emit_dict_begin(e);
    cs_emit_key(e, "stage");
    cs_emit_str(e, p->stage == CS_PHASE_START ? "START" : "END");
    cs_emit_key(e, "name");
    cs_emit_str(e, p->name);
    cs_emit_key(e, "device");
    cs_emit_int(e, p->device);
    cs_emit_key(e, "time_us");
    cs_emit_int(e, (int64_t)p->time_us);
    if (p->thread) {
      cs_emit_key(e, "thread");
      cs_emit_int(e, p->thread);
    }
    if (p->thread_name) {
      cs_emit_key(e, "thread_name");
      cs_emit_str(e, p->thread_name);
    }
    cs_emit_dict_end(e);
  }
  cs_emit_list_end(e);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot's `external_annotations`: the program's phases (phases/phases.h), one dict per
 * START or END, with PyTorch's keys in its order (`stage`, `name`, `device`, `time_us`), then
 * cudasnap's: `thread` (the kernel's id of the thread whose range it is) and `thread_name` (the
 * name the program gave that thread, when it gave one). PyTorch's viewer ignores the list. */
#ifndef CS_SNAPSHOT_ANNOTATIONS_H
#define CS_SNAPSHOT_ANNOTATIONS_H

#include "memviz/emit.h"
#include "phases/phases.h"

/* Write the list (NULL: an empty list). */
void cs_snap_write_annotations(cs_emitter_t *e, const cs_phase_list_t *phases);

#endif

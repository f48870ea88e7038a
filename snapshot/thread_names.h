/* SPDX-License-Identifier: Apache-2.0 */
/* The names the program gave its threads with pthread_setname_np (or prctl), for the phases of a
 * snapshot: read at snapshot time from /proc/self/task/TID/comm, never on the hot path; a thread
 * that has ended has the name it had then (phases/phases.h keeps it). */
#ifndef CS_SNAPSHOT_THREAD_NAMES_H
#define CS_SNAPSHOT_THREAD_NAMES_H

#include "phases/phases.h"

/* Give each phase of the list whose thread has no name yet (none from nvtxNameOsThread) the
 * thread's name, where it was given one: the kernel's name for it now (or when it ended), if other
 * than the main thread's, which threads inherit when nobody names them. At most CS_PHASES_MAX_THREADS distinct
 * threads are looked up. The names live in list->owned. Nothing changes without memory. */
void cs_snap_thread_names(cs_phase_list_t *list);

#endif

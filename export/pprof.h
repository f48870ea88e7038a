/* SPDX-License-Identifier: Apache-2.0 */
/* A snapshot as a pprof profile (profile.proto, https://github.com/google/pprof, proto/profile.proto):
 * what `go tool pprof`, speedscope, Perfetto and Pyroscope read, and how JAX writes GPU memory.
 *
 * Sample types, in this order: inuse_objects/count, inuse_space/bytes (the blocks live at the
 * snapshot, or at the trace's peak), alloc_objects/count, alloc_space/bytes (every `alloc` of the
 * recorded traces); the default is inuse_space. Bytes are requested bytes, as the viewer's
 * timeline shows them. One sample per distinct (stack, device, stream, kind, phase): its locations
 * are the frames of the stack, leaf first, from the frame the site rule names (memviz/site_rule.h,
 * the site `summary`, `report` and `ranks` show) to the outermost: the frames above it (the
 * allocator, the unwinder, CUDA's libraries, a framework's internals) are left out unless
 * all_frames; a block with no stack gets one location, "(no stack)". A Python frame's function
 * has no system_name, so that pprof does not simplify "<module>" away as a C++ template. Labels: device and stream (numeric, with units "index" and "id", since pprof drops
 * a numeric label of value 0 that has no unit), kind (analysis/kinds.h) and phase (the innermost
 * NVTX / record_function phase open at the allocation on the thread that made it, analysis/phase_lanes.h,
 * when the snapshot has phases and its trace times). time_nanos is the snapshot's time
 * (cudasnap.time_us, else its trace's last time). */
#ifndef CS_EXPORT_PPROF_H
#define CS_EXPORT_PPROF_H

#include <stdbool.h>

#include "memviz/sink.h"
#include "model/doc.h"

/* Write doc's profile, not compressed, to sink. at_peak: the in-use samples are the blocks live at
 * each device's peak (analysis/peak.h) instead of at the snapshot. all_frames: every frame of each
 * stack, the allocator's included. Returns 0, ENOMEM, or the sink's errno. */
int cs_pprof_write(const cs_doc_t *doc, bool at_peak, bool all_frames, cs_sink_t sink);

#endif

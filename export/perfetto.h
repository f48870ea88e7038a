/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots as a Chrome Trace Event Format file (the JSON object form, {"traceEvents": [...]}),
 * the format ui.perfetto.dev and chrome://tracing open, and torch.profiler and nsys export: a
 * snapshot's memory laid beside a program's kernels, several ranks on one timeline.
 *
 * Each input file is one process (pid: its place on the command line, from 1; named with an M
 * process_name event: host and pid of the profiled program, and the file), on wall-clock
 * microseconds (the trace's time_us; a trace without times is placed at its event index). Per
 * device with a trace:
 *   - counter tracks (C), with the words of docs/tool.md ("Reserved, allocated, passed through,
 *     live"): "device D allocated" (the forward replay's live requested bytes of the cache's
 *     blocks, analysis/peak.h: with the kind tracks, the replay's live bytes, whose highest point
 *     is `cudasnap summary`'s peak), "device D reserved" (the cache's segments: the final state's bytes, taken back
 *     through the trace's segment events; never memory passed through), and "device D KIND" for
 *     each kind of memory passed through (analysis/kinds.h);
 *   - torch.profiler's memory events: `[memory]` instant events with "Total Allocated",
 *     "Total Reserved", "Bytes" (the change), "Device Id", "Device Type" (1, CUDA), one per point
 *     of the allocated track, for HTA's memory timeline and TensorBoard's memory view;
 *   - instant events: "OOM" per out-of-memory entry (at most CS_PERFETTO_MAX_OOMS) and one
 *     "snapshot" at the snapshot's time.
 * The phases (external_annotations) are complete slices (X), a track per thread whose phases they
 * are (analysis/phase_lanes.h's lanes: the k-th thread with phases on thread k, named "phases: thread T
 * (NAME)"; annotations without a thread, as PyTorch's and older files have, on thread 1,
 * "phases"), each thread's nested: a phase that ends after the phase around it is cut at that
 * phase's end.
 *
 * Size: a counter track has at most CS_PERFETTO_MAX_POINTS points whatever the trace's length.
 * The trace's time span is cut into CS_PERFETTO_BUCKETS buckets; each bucket keeps its minimum
 * and its maximum value (in time order; one point when they are equal), and the track ends with
 * its final value. Maxima survive (the peak is exact), as do minima; what falls between them
 * within one bucket is left out. Output is written through the memviz JSON emitter as it is
 * made; nothing beyond one device's bucket state is held. */
#ifndef CS_EXPORT_PERFETTO_H
#define CS_EXPORT_PERFETTO_H

#include "memviz/sink.h"
#include "model/doc.h"

enum {
  CS_PERFETTO_BUCKETS = 2047,
  CS_PERFETTO_MAX_POINTS = 2 * CS_PERFETTO_BUCKETS + 2, /* 4096 */
  CS_PERFETTO_MAX_OOMS = 1000,
  CS_PERFETTO_MAX_PHASES = 1 << 16,
};

typedef struct cs_perfetto_s cs_perfetto_t;

/* Start the file on sink. NULL without host memory. */
cs_perfetto_t *cs_perfetto_begin(cs_sink_t sink);
/* Add one snapshot as process index + 1, named after path. Returns 0 or ENOMEM (the sink's errors
 * come at the end). */
int cs_perfetto_add(cs_perfetto_t *pf, const cs_doc_t *doc, const char *path, int index);
/* End the file and free pf. Returns 0, or ENOMEM or the sink's errno. */
int cs_perfetto_finish(cs_perfetto_t *pf);

#endif

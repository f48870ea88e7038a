/* SPDX-License-Identifier: Apache-2.0 */
/* The program's phases in a snapshot (`external_annotations`: NVTX ranges written by cudasnap, or
 * PyTorch's record_function annotations), against a device's memory over time: which phases were
 * open at the peak, and the most bytes live inside each top-level phase.
 *
 * Phases are per thread (issue 44): cudasnap writes each annotation's `thread` (and `thread_name`
 * where the program named it), and each trace entry's `thread`. The annotations of one thread are
 * a lane, nested on their own, never inside another thread's; annotations without a thread (PyTorch's
 * files, and cudasnap's written before threads were) are one lane of thread 0, nested as they
 * always were. An
 * entry's phase is the innermost one open in its own lane (cs_phase_lanes_own). */
#ifndef CS_ANALYSIS_PHASE_LANES_H
#define CS_ANALYSIS_PHASE_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/peak.h"
#include "model/doc.h"

/* The lanes of a snapshot's annotations, in the order their first annotations come. */
typedef struct cs_phase_lane_s {
  int64_t thread;   /* 0: annotations without a thread */
  const char *name; /* the thread's name (the last given; into the doc), NULL: none */
} cs_phase_lane_t;

typedef struct cs_phase_lanes_s {
  cs_phase_lane_t *items;
  size_t count;
  size_t *by_thread; /* lane indexes by thread, for cs_phase_lanes_own's binary search */
} cs_phase_lanes_t;

void cs_phase_lanes_free(cs_phase_lanes_t *lanes);

/* The lane whose phases are an entry's, by the entry's thread (0: not known): the lane of that
 * thread; for an unknown thread, the lane without a thread, or the only lane there is. SIZE_MAX
 * when none is (a thread that opened no phase, an unknown thread among several). O(log lanes). */
size_t cs_phase_lanes_own(const cs_phase_lanes_t *lanes, int64_t thread);

/* Whether phases name their threads: more than one lane, or an entry whose lane is not the only
 * one. With one lane that is the entry's (every file of one thread, and older ones), views keep
 * the wording they had before threads were recorded. */
bool cs_phase_lanes_plain(const cs_phase_lanes_t *lanes, size_t own);

/* "thread 1234 (worker-0)", "thread 1234", or "" for the lane without a thread; control
 * characters of the name read as '?'. */
void cs_phase_lane_label(const cs_phase_lane_t *lane, char *buf, size_t len);

/* A trace entry's thread (0: none written). */
int64_t cs_phases_entry_thread(const cs_doc_t *doc, cs_val_t entry);

/* Print, for `cudasnap summary`:
 *   peak BYTES at event I, during OUTER > ... > INNER      (or: outside any phase)
 *   largest live bytes inside each top-level phase:
 *     NAME: BYTES                                           (at most `top`, most bytes first)
 * When phases name their threads (cs_phase_lanes_plain), the first line names the thread that
 * made the peak's entry and its own phases, and the phases open on each other thread follow:
 *   peak BYTES at event I, on thread T (NAME), during OUTER > INNER   (or: outside any phase;
 *                                                                       or: on a thread not recorded)
 *     open on thread T2 (NAME2): OUTER > INNER
 * Nothing when the snapshot has no annotations, or its trace no times. Annotations of every
 * device count. An event at the time a phase starts or ends counts as inside it. Returns 0, or -1
 * without host memory. */
int cs_phases_summary(const cs_doc_t *doc, int device, const cs_peak_t *peak, uint64_t top);

/* The phase of the device's peak as `ranks` and the snapshot's head say it: "OUTER > INNER" of the
 * peak entry's own lane, followed by " on thread T (NAME)" when phases name their threads; *out is
 * NULL when that lane has none open (or the peak is the trace's start). Returns 0, or -1 without
 * host memory. */
int cs_phases_at_peak(const cs_doc_t *doc, int device, const cs_peak_t *peak, char **out);

/* The moment of a device's trace when the most bytes were live while a phase called `name` was
 * open (any instance, on any thread, at any depth; the first such moment): *out gets those bytes
 * and the number of trace entries applied then. *found is false when the phase is never open
 * during the trace (or the trace has no times). Returns 0, or -1 without host memory. */
int cs_phases_peak_of(const cs_doc_t *doc, int device, const char *name, cs_peak_t *out, bool *found);

/* One phase instance placed on a device's trace: it began after start_state entries and ended
 * after end_state (the trace's length when still open at the end); depth 0 is top-level in its
 * lane. Times in us (end_us -1 when still open). The name points into the doc. */
typedef struct cs_phase_span_s {
  const char *name;
  size_t lane;  /* index into the lanes */
  size_t depth;
  size_t start_state, end_state;
  int64_t start_us, end_us;
} cs_phase_span_t;

/* The phases of the snapshot placed on the device's trace, in start order, at most max_spans
 * (*left_out counts the rest), and, unless lanes is NULL, their lanes (freed with
 * cs_phase_lanes_free; empty on failure). None when the trace has no times. Returns 0, or -1
 * without host memory. */
int cs_phases_spans(const cs_doc_t *doc, int device, cs_phase_span_t *spans, size_t max_spans, size_t *count,
                    size_t *left_out, cs_phase_lanes_t *lanes);

#endif

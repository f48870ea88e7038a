/* The program's phases in a snapshot (`external_annotations`: NVTX ranges written by cudasnap, or
 * PyTorch's record_function annotations), against a device's memory over time: which phases were
 * open at the peak, and the most bytes live inside each top-level phase. */
#ifndef CS_ANALYSIS_PHASES_H
#define CS_ANALYSIS_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/peak.h"
#include "model/doc.h"

/* Print, for `cudasnap summary`:
 *   peak BYTES at event I, during OUTER > ... > INNER      (or: outside any phase)
 *   largest live bytes inside each top-level phase:
 *     NAME: BYTES                                           (at most `top`, most bytes first)
 * Nothing when the snapshot has no annotations, or its trace no times. Phases are the process's:
 * annotations of every device count. An event at the time a phase starts or ends counts as
 * inside it. Returns 0, or -1 without host memory. */
int cs_phases_summary(const cs_doc_t *doc, int device, const cs_peak_t *peak, uint64_t top);

/* The moment of a device's trace when the most bytes were live while a phase called `name` was
 * open (any instance, at any depth; the first such moment): *out gets those bytes and the number
 * of trace entries applied then. *found is false when the phase is never open during the trace
 * (or the trace has no times). Returns 0, or -1 without host memory. */
int cs_phases_peak_of(const cs_doc_t *doc, int device, const char *name, cs_peak_t *out, bool *found);

/* One phase instance placed on a device's trace: it began after start_state entries and ended
 * after end_state (the trace's length when still open at the end); depth 0 is top-level. Times in
 * us (end_us -1 when still open). The name points into the doc. */
typedef struct cs_phase_span_s {
  const char *name;
  size_t depth;
  size_t start_state, end_state;
  int64_t start_us, end_us;
} cs_phase_span_t;

/* The phases of the snapshot placed on the device's trace, in start order, at most max_spans
 * (*left_out counts the rest). None when the trace has no times. Returns 0, or -1 without host
 * memory. */
int cs_phases_spans(const cs_doc_t *doc, int device, cs_phase_span_t *spans, size_t max_spans, size_t *count,
                    size_t *left_out);

#endif

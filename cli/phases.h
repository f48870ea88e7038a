/* The program's phases in a snapshot (`external_annotations`: NVTX ranges written by cudasnap, or
 * PyTorch's record_function annotations), against a device's memory over time: which phases were
 * open at the peak, and the most bytes live inside each top-level phase. */
#ifndef CS_CLI_PHASES_H
#define CS_CLI_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "cli/peak.h"

/* Print, for `cudasnap summary`:
 *   peak BYTES at event I, during OUTER > ... > INNER      (or: outside any phase)
 *   largest live bytes inside each top-level phase:
 *     NAME: BYTES                                           (at most `top`, most bytes first)
 * Nothing when the snapshot has no annotations, or its trace no times. Phases are the process's:
 * annotations of every device count. An event at the time a phase starts or ends counts as
 * inside it. Returns 0, or -1 without host memory. */
int cs_phases_summary(const cJSON *root, int device, const cs_peak_t *peak, uint64_t top);

/* The moment of a device's trace when the most bytes were live while a phase called `name` was
 * open (any instance, at any depth; the first such moment): *out gets those bytes and the number
 * of trace entries applied then. *found is false when the phase is never open during the trace
 * (or the trace has no times). Returns 0, or -1 without host memory. */
int cs_phases_peak_of(const cJSON *root, int device, const char *name, cs_peak_t *out, bool *found);

#endif

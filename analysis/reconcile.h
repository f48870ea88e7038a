/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap summary`'s reconciliation table: what a device's used memory (the driver's total minus
 * free at the snapshot) is made of, from the snapshot's cudasnap.memory (docs/memory-kinds.md,
 * "Reconciliation"). */
#ifndef CS_ANALYSIS_RECONCILE_H
#define CS_ANALYSIS_RECONCILE_H

#include <stdio.h>

#include "model/doc.h"

/* Writes the table of device to out (summary: stdout; report: the page's text), or nothing when
 * the snapshot has no figures for it (PyTorch's, or cudasnap's from before they existed). */
void cs_reconcile_write(FILE *out, const cs_doc_t *doc, int device);

/* Pinned host memory, one line, when the snapshot reports any. */
void cs_reconcile_print_host(const cs_doc_t *doc);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus text exposition (format 0.0.4) of the live records: one sample per process and
 * device for each gauge, one per site for cudasnap_site_allocated_bytes, labelled pid, rank,
 * local_rank, job, host, the process's own labels (pod, namespace, CUDASNAP_LABELS), device
 * (docs/live.md lists them). At most CS_METRICS_SERIES_PER_PROCESS series per process: every
 * device's gauges first, then the sites while there is room; a comment line says what a cap or
 * the listing left out. */
#ifndef CS_CLI_METRICS_TEXT_H
#define CS_CLI_METRICS_TEXT_H

#include <stdio.h>

#include "live/live_read.h"

enum { CS_METRICS_SERIES_PER_PROCESS = 256 };

/* Writes the exposition of list to out. */
void cs_metrics_write(FILE *out, const cs_live_list_t *list);

#endif

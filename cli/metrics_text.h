/* The Prometheus text exposition (format 0.0.4) of the live records: one sample per process and
 * device for each gauge, one per site for cudasnap_site_allocated_bytes, labelled pid, rank,
 * local_rank, job, host, device (docs/live.md lists them). */
#ifndef CS_CLI_METRICS_TEXT_H
#define CS_CLI_METRICS_TEXT_H

#include <stdio.h>

#include "live/live_read.h"

/* Writes the exposition of list to out. */
void cs_metrics_write(FILE *out, const cs_live_list_t *list);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The process's live record (live/live_format.h): made when cudasnap activates, as the
 * registration `cudasnap dump --all` finds profiled processes by; its figures published by the
 * control thread (process/dump_trigger.c) every CUDASNAP_LIVE_INTERVAL unless CUDASNAP_LIVE=0;
 * removed as the process ends. */
#ifndef CS_LIVE_PUBLISH_H
#define CS_LIVE_PUBLISH_H

#include "common/cs_options.h"
#include "snapshot/job.h"

/* At activation, after the dump signal's handler is in place: the record, with its first figures
 * due at once, as the options and the job say (both live as long as the process). A failure to
 * make it: one warning, and no record. */
void cs_live_publish_start(const cs_options_t *opts, const cs_job_t *job);

/* Milliseconds until the next publication is due (0: now), or -1 when none will be. */
int cs_live_publish_wait_ms(void);

/* Publish now if due. On the control thread only. */
void cs_live_publish_tick(void);

/* The process ends: remove the record (this process's own only). Idempotent. */
void cs_live_publish_end(void);

/* fork: the parent's record is the parent's; the child makes its own when it activates. */
void cs_live_publish_postfork_child(void);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The process's options (CUDASNAP_*) and its place in its job, read once, on first use: the
 * configuration every part of the process's life reads. The layers below take what they need
 * as arguments (contexts and recording at activation, the live record at its start). */
#ifndef CS_RUNTIME_H
#define CS_RUNTIME_H

#include "common/cs_options.h"
#include "snapshot/job.h"

/* The options, parsed from the environment on first use (one warning line per bad value). */
const cs_options_t *cs_runtime_options(void);

/* The process's place in its job (snapshot/job.h), read with the options, once. */
const cs_job_t *cs_runtime_job(void);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap ranks`: the job (cli/ranks_job.h) as a table or as one JSON object, on stdout
 * (docs/ranks.md says what each holds). */
#ifndef CS_CLI_RANKS_PRINT_H
#define CS_CLI_RANKS_PRINT_H

#include <stddef.h>

#include "cli/ranks_job.h"

/* Print the sorted job (rows up to `top`, differing sites up to `sites`); JSON: 0 or an errno. */
void cs_ranks_print_table(const cs_ranks_job_t *job, size_t top, size_t sites);
int cs_ranks_print_json(const cs_ranks_job_t *job, size_t top, size_t sites);

#endif

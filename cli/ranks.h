/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap ranks`: the processes of a job side by side (docs/ranks.md). ranks.c reads the files,
 * one at a time, into the job's rows (ranks_job.h); ranks_print.c writes the table or the JSON
 * object (ranks_print.h). */
#ifndef CS_CLI_RANKS_H
#define CS_CLI_RANKS_H

#include <stdint.h>

/* The rank in a file's name: "rank" followed by digits (memory_snapshot-rank3.pickle, rank_3.json),
 * else digits just before the extension after '_' or '-' (snapshot_3.pickle); -1 when neither. */
int64_t cs_ranks_from_name(const char *path);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot file names (the naming job of the snapshot writer, process/dump_write.c). */
#ifndef CS_DUMP_NAME_H
#define CS_DUMP_NAME_H

#include <stddef.h>

#include "common/cs_options.h"
#include "common/cs_process_info.h"
#include "memviz/emit.h"

/* The format: CUDASNAP_FORMAT, else from the name (.pickle and .pkl: pickle; otherwise JSON). */
cs_emit_format_t cs_dump_name_format(const cs_options_t *opts, const char *path);

/* pattern (CUDASNAP_OUTPUT) expanded for the dump `number` of `trigger`. 0, or -1 when it does not
 * fit in len. */
int cs_dump_name_expand(const char *pattern, const cs_process_info_t *proc, const char *trigger, int number,
                        char *buf, size_t len);

#endif

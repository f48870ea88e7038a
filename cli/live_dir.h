/* SPDX-License-Identifier: Apache-2.0 */
/* What the tool takes from the live records beyond their listing: where they are (CUDASNAP_LIVE_DIR,
 * as the library writes them there), which of a record's labels it shows, and what to say about
 * the records a listing passed over (live/live_read.h's bounds), on top's and dump's stderr and in
 * metrics' exposition comments. */
#ifndef CS_CLI_LIVE_DIR_H
#define CS_CLI_LIVE_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "live/live_read.h"

/* CUDASNAP_LIVE_DIR from the tool's environment, judged by the library's own rules: a bad value
 * gets one warning line (the first call only) and the default, /dev/shm. */
const char *cs_live_dir(void);

/* Is label i of h one to show: key and value by common/cs_labels.h's rules (its owner wrote the
 * record), and its key not one an earlier shown label has? */
bool cs_live_label_shown(const cs_live_header_t *h, uint32_t i);

/* One line (no newline) saying what the listing passed over and why, or "" when nothing. */
void cs_live_passed_over(const cs_live_list_t *list, char *buf, size_t len);

#endif

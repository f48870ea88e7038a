/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap summary`'s "inside pools" table: the pools that declared their regions through NVTX
 * (the snapshot's cudasnap.pools) and what their regions hold. */
#ifndef CS_ANALYSIS_POOLS_SUMMARY_H
#define CS_ANALYSIS_POOLS_SUMMARY_H

#include <stdint.h>

#include "model/doc.h"

/* For the device's pools:
 *   inside pools (NVTX):
 *     pool ADDRESS (BYTES): BYTES registered in N region(s); top region sites:
 *       BYTES in N block(s): SITE                  (at most 3 per pool)
 * Nothing when the device has none. Returns 0, or -1 without host memory. */
int cs_pools_summary(const cs_doc_t *doc, int device);

#endif

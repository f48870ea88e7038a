/* SPDX-License-Identifier: Apache-2.0 */
/* The viewer's size limit for JSON snapshots (contract in memviz/viewer_limit.h). */
#include "memviz/viewer_limit.h"

const char *cs_viewer_json_advice(uint64_t bytes) {
  if (bytes <= CS_VIEWER_JSON_LIMIT) return "open it at https://pytorch.org/memory_viz";
  return "too big for the viewer in a browser (JSON above 256 MiB loads unreliably, above 512 MiB not at "
         "all); CUDASNAP_FORMAT=pickle writes the same snapshot many times smaller, and the viewer opens it";
}

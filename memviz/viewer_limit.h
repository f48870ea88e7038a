/* SPDX-License-Identifier: Apache-2.0 */
/* How big a JSON snapshot the memory_viz viewer can open in a browser, and what to say when one is
 * bigger (the line that reports a written snapshot, process/dump_write.c).
 *
 * The viewer decodes the whole file into one JavaScript string and JSON.parse()s it. Chromium
 * cannot make a string longer than 2^29 - 24 characters: a JSON file above 512 MiB does not load at
 * all. Below that, decoding and parsing take seconds and about 3.2 bytes of JavaScript heap per
 * byte of file (measured: docs/snapshots.md, "Big snapshots"; bench/README.md).
 * CS_VIEWER_JSON_LIMIT is half the hard limit, for the views' own memory and smaller machines. A
 * pickle shares every frame list and is many times smaller, so it is what to write instead. */
#ifndef CS_VIEWER_LIMIT_H
#define CS_VIEWER_LIMIT_H

#include <stdint.h>

#define CS_VIEWER_JSON_LIMIT ((uint64_t)256 << 20)

/* The end of the "wrote FILE (SIZE, N events): ..." line for a JSON file of `bytes`: where to
 * open it, or, above CS_VIEWER_JSON_LIMIT, that a browser will not open it reliably and that
 * CUDASNAP_FORMAT=pickle writes a file the viewer opens. A string constant. */
const char *cs_viewer_json_advice(uint64_t bytes);

#endif

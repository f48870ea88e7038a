/* SPDX-License-Identifier: Apache-2.0 */
/* The report's HTML page: the project's own template, style sheet and script (report/report_assets/,
 * built into the tool by cmake/embed_files.cmake) with the data blob (report/report_data.h) put
 * inside, so the file needs nothing else: no network request, no other file.
 *
 * The data goes in a <script type="application/json"> element. Inside it the HTML parser looks
 * for "</script" and "<!--", so every '<' of the JSON is written as \u003c (it can only occur
 * inside a string, where that escape means the same character). */
#ifndef CS_REPORT_PAGE_H
#define CS_REPORT_PAGE_H

#include <stddef.h>

#include "memviz/sink.h"

/* Write the page titled `title` (plain text) with `data` (JSON, len bytes) to sink. Returns 0 or
 * the sink's errno. */
int cs_report_page(cs_sink_t sink, const char *title, const char *data, size_t len);

#endif

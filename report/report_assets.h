/* SPDX-License-Identifier: Apache-2.0 */
/* The report page's files (report/report_assets/), as bytes in the tool: generated at build time by
 * cmake/embed_files.cmake into report_assets.c in the build tree. */
#ifndef CS_REPORT_ASSETS_H
#define CS_REPORT_ASSETS_H

#include <stddef.h>

extern const unsigned char cs_report_asset_template[]; /* report.html: the page, with {{...}} slots */
extern const size_t cs_report_asset_template_len;
extern const unsigned char cs_report_asset_style[];    /* report.css */
extern const size_t cs_report_asset_style_len;
extern const unsigned char cs_report_asset_script[];   /* report.js */
extern const size_t cs_report_asset_script_len;

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* A site name (`function file:line`, as `cudasnap summary` names it) fitted to a terminal's
 * column: what a narrow `top` keeps is the function and where it is, not the first characters of
 * a long path. */
#ifndef CS_CLI_LIVE_SITE_H
#define CS_CLI_LIVE_SITE_H

#include <stddef.h>

/* site in at most width bytes (a column per byte, as the table counts them), into out (len bytes,
 * NUL-terminated; len > width). In order, the first that fits:
 *   the whole name                        live_hold /srv/build/tests/prog_live.c:88
 *   the file by its base name             live_hold prog_live.c:88
 *   the function cut, marked with '~'     live_h~ prog_live.c:88
 *   the end of file:line, marked          ~og_live.c:88
 * A name that does not end in ":LINE" (no file known) is cut at width. width 0: out is "". */
void cs_live_site_fit(const char *site, size_t width, char *out, size_t len);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The tool's stdout, safe for a terminal whatever it prints: the read-side subcommands print names
 * that came from a program (frames, files, phases, threads, hosts, paths in a snapshot), and root
 * reads them. Every write goes through common/cs_text.h's rule (cs_text_safe_lines): valid UTF-8,
 * each C0 control but the newline, DEL and C1 control replaced by '?', each invalid subpart by
 * U+FFFD. One filter for every line any subcommand prints, so that no printf of a name can miss it. */
#ifndef CS_CLI_SAFE_STDOUT_H
#define CS_CLI_SAFE_STDOUT_H

#include <stdbool.h>

/* Replace stdout by the filtered stream (to file descriptor 1, buffered as stdout was: by lines on
 * a terminal); what was buffered before is flushed first. At exit the stream is flushed and the
 * original stdout restored. false (stdout left as it is) without host memory. */
bool cs_safe_stdout_install(void);

#endif

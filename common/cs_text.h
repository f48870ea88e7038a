/* SPDX-License-Identifier: Apache-2.0 */
/* Text that came from a program or a file (a site or phase name, an executable, a host, a path
 * from a program's CUDASNAP_OUTPUT), made safe wherever it goes: a terminal, a Prometheus label
 * value, a JSON string. Safe means valid UTF-8, each invalid subpart replaced by U+FFFD (the rule
 * of common/cs_utf8.h, as the snapshot writers repair strings), and no control character: each
 * C0 (U+0000..U+001F, newline and tab too), DEL (U+007F) and C1 (U+0080..U+009F: a terminal acts
 * on CSI U+009B as on ESC [) replaced by '?'. */
#ifndef CS_TEXT_H
#define CS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* s[0..n), up to its first NUL, made safe into out (size >= 1 bytes): cut on a character
 * boundary to fit size - 1 bytes, and terminated. Returns the length written. Room for 3n + 1
 * bytes always holds the whole text (an invalid byte becomes the 3 bytes of U+FFFD). */
size_t cs_text_safe(char *out, size_t size, const char *s, size_t n);

/* The same in place, each invalid subpart replaced by '?' rather than U+FFFD so that the text
 * never grows (for callers with a stack buffer only: the library's log lines). s[0..n) need not
 * be terminated; returns the new length (no NUL is written). */
size_t cs_text_safe_in_place(char *s, size_t n);

/* The same for a stream of lines (the tool's stdout, cli/safe_stdout.h): newlines are kept, a NUL
 * is replaced like any other control character, and with `more` an incomplete character at the
 * end of s[0..n) is left for the next call, whose text then starts with it. Writes to out (room
 * for 3n bytes; not terminated) and returns the length written; *used is the number of bytes of s
 * consumed (n, less the incomplete character left). */
size_t cs_text_safe_lines(char *out, const char *s, size_t n, bool more, size_t *used);

/* A whole text made safe (as cs_text_safe, never cut) and written to out: for a name printed
 * inside a line of the tool's own. */
void cs_text_fput(FILE *out, const char *s);

/* A label built in place (a site's "NAME FILE:LINE", a chain of phases) made safe for a line of
 * text: cs_text_safe_in_place up to its NUL, and terminated again. */
void cs_text_label(char *s);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Byte counts, times and plurals for the text people read: the exit leak report and the tool's output. */
#ifndef CS_FORMAT_H
#define CS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "3.0 MiB": readable only; "512 B" below 1 KiB. */
void cs_format_size(uint64_t bytes, char *buf, size_t len);

/* PyTorch's way of writing a size in its out-of-memory message (c10's format_size), to the
 * letter: "48.00 MiB", "1.50 GiB", "1024.00 MiB" for 1 GiB, "1024 bytes" up to 1 KiB, GiB at
 * most ("2048.00 GiB"). */
void cs_format_size_torch(uint64_t bytes, char *buf, size_t len);

/* "12582912 B (12.0 MiB)": exact, then readable; just "512 B" below 1 KiB. */
void cs_format_bytes(uint64_t bytes, char *buf, size_t len);

/* "2026-11-25 05:03:01.123 UTC" for microseconds since the epoch; "<n> us" for a time that is not
 * one (negative, or out of the calendar's range). Returns whether it was a date. */
bool cs_format_utc(int64_t time_us, char *buf, size_t len);

/* "s" unless n is 1, for "1 block" / "2 blocks". */
const char *cs_plural(uint64_t n);

#endif

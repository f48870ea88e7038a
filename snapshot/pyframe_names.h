/* SPDX-License-Identifier: Apache-2.0 */
/* Naming Python frame entries (record/pyframes.h) at snapshot time: function (qualified name),
 * file, and the line computed from the instruction index and the code's location table. Reads
 * only cudasnap's copies of those (made on the hot path once per code object): never Python's
 * memory, never a call into Python, so the dump thread needs no GIL and takes none. */
#ifndef CS_SNAPSHOT_PYFRAME_NAMES_H
#define CS_SNAPSHOT_PYFRAME_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fills name and file (UTF-8, NUL-terminated, cut to fit) and *line (0 when unknown). Returns
 * false for an entry it cannot name (then name is "(python frame)", file "??"). */
bool cs_pyframe_name(uintptr_t entry, char *name, size_t name_len, char *file, size_t file_len, int *line);

/* The line of instruction `instr` (2-byte code units) in a CPython 3.11+ location table
 * (Objects/locations.md) starting at first_line; 0 when the table says none. */
int cs_pyframe_line_311(const unsigned char *table, size_t len, int first_line, uint32_t instr);

/* The same for 3.10's co_linetable and 3.9's co_lnotab. */
int cs_pyframe_line_310(const unsigned char *table, size_t len, int first_line, uint32_t instr);
int cs_pyframe_line_39(const unsigned char *table, size_t len, int first_line, uint32_t instr);

#endif

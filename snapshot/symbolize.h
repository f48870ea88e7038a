/* SPDX-License-Identifier: Apache-2.0 */
/* Dump-time symbolization: a program counter -> function name, file and line.
 *
 * Function names come from the symbol tables (static functions included), file and line from
 * DWARF through elfutils libdw, C++ names are demangled; without debug information the frame is
 * "module+0xoffset" with the module's path as filename and line 0. An address in code the compiler
 * inlined stands for one frame per inlined function, as `eu-addr2line -i` shows them
 * (cs_symbolize_frames). Each distinct PC is looked up once (cached); return addresses are looked
 * up at pc - 1 so a call is attributed to its own line.
 * Never used on the hot path; not thread-safe (one symbolizer per dump). */
#ifndef CS_SYMBOLIZE_H
#define CS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "memviz/frame.h"

typedef struct cs_symbolizer_s cs_symbolizer_t;

/* NULL without host memory. Reads the objects the loader has loaded now, each at its load bias. */
cs_symbolizer_t *cs_symbolizer_create(void);
void cs_symbolizer_destroy(cs_symbolizer_t *s);

/* A module of another process's map, as a recording kept it: the ELF file at path, loaded with
 * this bias (dl_iterate_phdr's dlpi_addr). */
typedef struct cs_sym_map_module_s {
  const char *path;
  uint64_t bias;
  const unsigned char *build_id; /* the GNU build ID it had, or NULL (not known) */
  size_t build_id_len;
} cs_sym_map_module_t;

/* The same over a module map given (for `cudasnap recover`, in the tool's process): the files
 * are read where the paths say. Modules that cannot be read, or whose file no longer has the
 * build ID given (rebuilt since), are left out, with one warning each: their frames are "??"
 * rather than named from another build. */
cs_symbolizer_t *cs_symbolizer_create_for(const cs_sym_map_module_t *modules, size_t count);

/* The frames of a return address (or the exact PC when `exact`, for the innermost frame of a
 * signal context; cudasnap's captured stacks are all return addresses), innermost first, as a
 * snapshot lists them: where the address is in code inlined into its function, first the innermost
 * inlined function at the address's line, then each function it was inlined into at the line of
 * the inlined call, and last the function the code belongs to; else the one frame of that
 * function. *frames gets them; returns their count, >= 1 (frames[0..count-2] were each inlined
 * into the next). The frames and strings live as long as the symbolizer. Never fails: unknown
 * parts are "??" / 0. */
size_t cs_symbolize_frames(cs_symbolizer_t *s, uintptr_t pc, int exact, const cs_frame_t **frames);

/* The innermost of those frames: the function whose line the address is on. */
cs_frame_t cs_symbolize(cs_symbolizer_t *s, uintptr_t pc, int exact);

#endif

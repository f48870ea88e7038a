/* SPDX-License-Identifier: Apache-2.0 */
/* Python frames on the allocation hot path: when the allocating thread holds the GIL of a CPython
 * interpreter in this process, its Python stack, as raw (code object, instruction) pairs merged
 * into the native stack where the interpreter's evaluation frames are.
 *
 * cudasnap never links libpython: cs_py_init finds the interpreter's exported C API with dlsym
 * once. The frames are read from CPython's own structures with a per-version layout (3.9 to
 * 3.13: facts from CPython's headers, each tested on that interpreter), checked at the first allocation from a Python thread (the thread state must hold
 * this thread's id where the layout says; each code object, name, file and table must have its
 * type); any mismatch, an unknown version or a free-threaded build turns Python frames off with
 * one debug line. Nothing here takes or releases the GIL or calls into Python; nothing reads
 * Python state while the interpreter starts or finalizes, or another thread's state.
 *
 * A Python frame entry is one uintptr_t with the top bit set (native return addresses never have
 * it on the 48-bit address spaces this runs on): a record number and the instruction index. The
 * record is cudasnap's copy of what names the code object (qualified name, file, first line,
 * location table), made once per code object the first time one of its frames is seen, so that
 * naming at snapshot time (snapshot/pyframe_names.h) reads only cudasnap's memory. */
#ifndef CS_PYFRAMES_H
#define CS_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/stack_entry.h"

/* Looks the interpreter up (dlsym): call once, early, outside any hook, like cs_stack_init.
 * A process without an interpreter pays this one failed lookup. Idempotent. */
void cs_py_init(void);

/* True once cs_py_init found an interpreter it can read: a process without one tests this one
 * flag per allocation and nothing more. */
bool cs_py_active(void);

#define CS_PY_NO_FRAMES SIZE_MAX

/* Writes into out (room for max entries) the stack to record: the native pcs[0..n) with each
 * frame inside the interpreter's evaluation function replaced by the Python frames it runs
 * (python_only: the Python frames alone); Python frames the native stack did not reach go last.
 * Returns the count, or CS_PY_NO_FRAMES when this thread has no Python frame (out untouched:
 * the native frames stand as they are). */
size_t cs_py_merge(const uintptr_t *pcs, size_t n, uintptr_t *out, size_t max, bool python_only);

/* ---- the entries, for the snapshot side (their tag: record/stack_entry.h) ---- */

/* The record naming the frame's code (0: one cudasnap could not keep: unnamed) and the index of
 * its instruction under way, in 2-byte code units. */
void cs_py_frame_decode(uintptr_t entry, uint32_t *record, uint32_t *instr);

/* What names a code object, copied from it the first time one of its frames was seen. */
typedef struct cs_py_record_s {
  int32_t first_line;   /* co_firstlineno */
  uint32_t version;     /* the interpreter's major << 8 | minor: the location table's format */
  uint32_t name_len, file_len, table_len;
  char data[];          /* co_qualname (UTF-8), co_filename (UTF-8), co_linetable: no NULs */
} cs_py_record_t;

/* The record of a frame entry, or NULL for record 0 or one not made. */
const cs_py_record_t *cs_py_record(uint32_t record);

/* After fork, in the child: the record table's lock, which another thread may have held. */
void cs_py_postfork_child(void);

#endif

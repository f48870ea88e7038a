/* SPDX-License-Identifier: Apache-2.0 */
/* Libraries cudasnap uses that must stay invisible to the program it runs in.
 *
 * libunwind.so.8 exports _Unwind_RaiseException & co. and a weak `backtrace`, and libdw/libelf
 * export elf_* and dwarf_*: linked normally into a preloaded library, they would join the
 * process's global symbol scope and could take over C++ exception handling or another copy of
 * libelf in the host program. Debian ships libunwind.a without -fPIC, so it cannot be linked in
 * privately either. They are therefore opened with dlopen(RTLD_LOCAL) and called through
 * pointers: their symbols never become visible to anyone else.
 *
 * Loading happens once (thread-safe); a missing library leaves the feature off: no stacks, or
 * frames named "??", never a failure of the program. */
#ifndef CS_PRIVATE_LIBS_H
#define CS_PRIVATE_LIBS_H

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>

/* libunwind's unw_backtrace, or NULL. */
typedef int (*cs_unw_backtrace_fn)(void **buffer, int size);
cs_unw_backtrace_fn cs_private_unw_backtrace(void);

/* libunwind's step-by-step walk and its cache flush (the local-only unwinder's names, for
 * <libunwind.h> with UNW_LOCAL_ONLY; contexts and cursors passed as that header's types), or NULL
 * when one is missing. unw_backtrace keeps each thread's frame layouts by return address for
 * good; unw_step's caches are the address space's, which flush_cache empties. */
typedef struct cs_unw_step_api_s {
  int (*getcontext)(void *context);                  /* unw_getcontext */
  int (*init_local)(void *cursor, void *context);    /* unw_init_local */
  int (*step)(void *cursor);                         /* unw_step */
  int (*get_reg)(void *cursor, int reg, unsigned long *value); /* unw_get_reg */
  void (*flush_cache)(void *space, unsigned long lo, unsigned long hi); /* unw_flush_cache */
  void **local_space;                                /* &unw_local_addr_space */
} cs_unw_step_api_t;
const cs_unw_step_api_t *cs_private_unw_step(void);

/* The libdw/libdwfl/libelf functions symbolize.c calls. */
#define CS_DW_FUNCTIONS(X)                                                                         \
  X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_child) X(dwarf_diecu) X(dwarf_dieoffset)          \
  X(dwarf_filesrc)                                                                                 \
  X(dwarf_formstring) X(dwarf_formudata) X(dwarf_getsrcfiles) X(dwarf_haspc) X(dwarf_siblingof)   \
  X(dwarf_tag)                                                                                     \
  X(dwarf_getsrc_die) X(dwarf_lineno) X(dwarf_linesrc) X(dwarf_ranges) X(dwelf_elf_gnu_build_id)  \
  X(dwfl_addrmodule) X(dwfl_begin) X(dwfl_build_id_find_debuginfo) X(dwfl_end) X(dwfl_errmsg)      \
  X(dwfl_lineinfo) X(dwfl_linux_proc_find_elf) X(dwfl_module_addrinfo)                            \
  X(dwfl_module_addrdie) X(dwfl_module_build_id) X(dwfl_module_getdwarf) X(dwfl_module_getelf)    \
  X(dwfl_module_getsrc) X(dwfl_module_getsym_info) X(dwfl_module_getsymtab) X(dwfl_module_info)     \
  X(dwfl_module_nextcu)                                                                            \
  X(dwfl_report_begin) X(dwfl_report_elf) X(dwfl_report_end) X(dwfl_report_module) X(elf_begin)      \
  X(elf_end) X(dwfl_linux_proc_report) X(dwfl_getmodules)                                          \
  X(elf_version)

typedef struct cs_dw_api_s {
#define CS_DW_FIELD(name) __typeof__(&name) name;
  CS_DW_FUNCTIONS(CS_DW_FIELD)
#undef CS_DW_FIELD
} cs_dw_api_t;

/* The table, or NULL when libdw.so.1 (or one of its functions) cannot be had. */
const cs_dw_api_t *cs_private_dw(void);

#endif

/* Inline scopes through libdw (contract in snapshot/inline_calls.h).
 *
 * The scopes around an address are found by walking the unit's DIEs: the subprogram whose ranges
 * hold it, then the lexical blocks and inlined instances inside it that hold it, to the innermost
 * (dwarf_haspc, pruning every subtree that does not). libdw's dwarf_getscopes does much the same,
 * but past the innermost inlined instance it goes on to the scopes of the function's abstract
 * definition, and finds none when that definition is in another unit, as after link-time
 * optimization (GCC's -flto puts every abstract definition in the early-debug units): it then
 * answers 0 scopes, and the inlined frames were lost. The call each instance stands for is on the
 * instance itself (DW_AT_call_file, an index into its unit's file table, and DW_AT_call_line); its
 * name is on its abstract origin, or on the declaration that one specifies (C++ methods), which
 * dwarf_attr_integrate follows, across units too. */
#include "snapshot/inline_calls.h"

#include <dwarf.h>
#include <limits.h>

static const char *cs_inline_name(const cs_dw_api_t *dw, Dwarf_Die *die) {
  static const unsigned attrs[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
  for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
    Dwarf_Attribute a;
    const char *name = dw->dwarf_formstring(dw->dwarf_attr_integrate(die, attrs[i], &a));
    if (name && name[0]) return name;
  }
  return NULL;
}

static void cs_inline_call_site(const cs_dw_api_t *dw, Dwarf_Die *inlined, cs_inline_call_t *call) {
  Dwarf_Attribute a;
  Dwarf_Word line = 0, file = 0;
  if (dw->dwarf_formudata(dw->dwarf_attr(inlined, DW_AT_call_line, &a), &line) == 0 && line <= INT_MAX)
    call->call_line = (int)line;
  Dwarf_Die unit;
  Dwarf_Files *files = NULL;
  size_t nfiles = 0;
  if (dw->dwarf_formudata(dw->dwarf_attr(inlined, DW_AT_call_file, &a), &file) != 0) return;
  if (!dw->dwarf_diecu(inlined, &unit, NULL, NULL) || dw->dwarf_getsrcfiles(&unit, &files, &nfiles) != 0) return;
  if (file < nfiles) call->call_file = dw->dwarf_filesrc(files, file, NULL, NULL);
}

/* DIE levels followed at most: scopes nest a few deep; a subprogram sits in a few namespaces. */
enum { CS_INLINE_MAX_DEPTH = 64 };

/* The scopes holding addr below die into path[depth..], outermost first: the new depth, or -1 when
 * no scope below die holds it. Namespaces and types are searched, not entered into the path: a
 * C++ function defined in a namespace is a child of its DIE. */
static int cs_inline_scopes(const cs_dw_api_t *dw, Dwarf_Die *die, Dwarf_Addr addr, Dwarf_Die *path, int depth) {
  Dwarf_Die child;
  if (depth >= CS_INLINE_MAX_DEPTH || dw->dwarf_child(die, &child) != 0) return -1;
  do {
    switch (dw->dwarf_tag(&child)) {
    case DW_TAG_subprogram:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_lexical_block:
    case DW_TAG_entry_point: {
      if (dw->dwarf_haspc(&child, addr) != 1) break;
      path[depth] = child;
      const int deeper = cs_inline_scopes(dw, &path[depth], addr, path, depth + 1);
      return deeper >= 0 ? deeper : depth + 1;
    }
    case DW_TAG_namespace:
    case DW_TAG_module:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type: {
      const int found = cs_inline_scopes(dw, &child, addr, path, depth);
      if (found >= 0) return found;
      break;
    }
    default:
      break;
    }
  } while (dw->dwarf_siblingof(&child, &child) == 0);
  return -1;
}

size_t cs_inline_calls(const cs_dw_api_t *dw, Dwarf_Die *cu, Dwarf_Addr addr, cs_inline_call_t *out, size_t max) {
  Dwarf_Die path[CS_INLINE_MAX_DEPTH];
  const int depth = cs_inline_scopes(dw, cu, addr, path, 0);
  size_t count = 0;
  for (int i = depth - 1; i >= 0; i--) { /* from the innermost out */
    const int tag = dw->dwarf_tag(&path[i]);
    if (tag == DW_TAG_subprogram) break;
    if (tag != DW_TAG_inlined_subroutine) continue; /* a lexical block */
    if (count == max) return 0; /* deeper than the caller keeps: named as before rather than cut short */
    out[count] = (cs_inline_call_t){.name = cs_inline_name(dw, &path[i]), .call_file = NULL, .call_line = 0};
    cs_inline_call_site(dw, &path[i], &out[count]);
    count++;
  }
  return count;
}

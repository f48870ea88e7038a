/* SPDX-License-Identifier: Apache-2.0 */
/* Inline scopes through libdw (contract in snapshot/inline_calls.h).
 *
 * The scopes around an address are found by walking the unit's DIEs: the subprogram whose ranges
 * hold it (from an index of the unit's functions by address, read once per unit: a dump names
 * many addresses of few units), then the lexical blocks and inlined instances inside it that hold
 * it, to the innermost (dwarf_haspc, pruning every subtree that does not). libdw's
 * dwarf_getscopes does much the same, but past the innermost inlined instance it goes on to the
 * scopes of the function's abstract definition, and finds none when that definition is in
 * another unit, as after link-time optimization (GCC's -flto puts every abstract definition in
 * the early-debug units): it then answers 0 scopes, and the inlined frames were lost.
 *
 * The call each instance stands for is on the instance itself (DW_AT_call_file, an index into its
 * unit's file table, and DW_AT_call_line); its name is on its abstract origin, or on the
 * declaration that one specifies (C++ methods), which dwarf_attr_integrate follows, across units
 * too. */
#include "snapshot/inline_calls.h"

#include <dwarf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

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

/* ---- a unit's functions by address ---- */

typedef struct cs_inline_range_s {
  Dwarf_Addr lo, hi; /* one address range of the function's code */
  Dwarf_Die die;     /* its DW_TAG_subprogram */
} cs_inline_range_t;

struct cs_inline_unit_s {
  cs_inline_range_t *ranges; /* sorted by lo */
  size_t count, cap;
};

static bool cs_inline_unit_add(cs_inline_unit_t *u, Dwarf_Addr lo, Dwarf_Addr hi, const Dwarf_Die *die) {
  if (u->count == u->cap) {
    const size_t cap = u->cap ? u->cap * 2 : 64;
    cs_inline_range_t *grown = realloc(u->ranges, cap * sizeof *grown);
    if (!grown) return false;
    u->ranges = grown;
    u->cap = cap;
  }
  u->ranges[u->count++] = (cs_inline_range_t){.lo = lo, .hi = hi, .die = *die};
  return true;
}

/* The functions with code below die (the unit, or a namespace in it: a C++ function defined in a
 * namespace is a child of its DIE). Types are not searched: a method defined in its class has its
 * code in a DIE of the unit or namespace (DW_AT_specification names the class's declaration), with
 * GCC and clang alike. False without host memory. */
static bool cs_inline_unit_walk(const cs_dw_api_t *dw, cs_inline_unit_t *u, Dwarf_Die *die, int depth) {
  Dwarf_Die child;
  if (depth >= CS_INLINE_MAX_DEPTH || dw->dwarf_child(die, &child) != 0) return true;
  do {
    const int tag = dw->dwarf_tag(&child);
    if (tag == DW_TAG_namespace || tag == DW_TAG_module) {
      if (!cs_inline_unit_walk(dw, u, &child, depth + 1)) return false;
    } else if (tag == DW_TAG_subprogram) {
      Dwarf_Addr base = 0, lo = 0, hi = 0;
      for (ptrdiff_t off = 0; (off = dw->dwarf_ranges(&child, off, &base, &lo, &hi)) > 0;)
        if (lo < hi && !cs_inline_unit_add(u, lo, hi, &child)) return false;
    }
  } while (dw->dwarf_siblingof(&child, &child) == 0);
  return true;
}

static int cs_inline_range_cmp(const void *pa, const void *pb) {
  const cs_inline_range_t *a = pa, *b = pb;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

cs_inline_unit_t *cs_inline_unit_read(const cs_dw_api_t *dw, Dwarf_Die *cu) {
  cs_inline_unit_t *u = calloc(1, sizeof *u);
  if (!u) return NULL;
  if (!cs_inline_unit_walk(dw, u, cu, 0)) {
    cs_inline_unit_free(u);
    return NULL;
  }
  qsort(u->ranges, u->count, sizeof *u->ranges, cs_inline_range_cmp);
  return u;
}

void cs_inline_unit_free(cs_inline_unit_t *u) {
  if (!u) return;
  free(u->ranges);
  free(u);
}

/* Nested functions (GNU C) overlap the one they are in; look this many ranges below the nearest. */
enum { CS_INLINE_BACKTRACK = 8 };

/* The subprogram whose code holds addr, or NULL. */
static const Dwarf_Die *cs_inline_function(const cs_inline_unit_t *u, Dwarf_Addr addr) {
  size_t lo = 0, hi = u->count; /* first range starting above addr */
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (u->ranges[mid].lo <= addr) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i-- > 0 && lo - i <= CS_INLINE_BACKTRACK;)
    if (addr < u->ranges[i].hi) return &u->ranges[i].die;
  return NULL;
}

/* ---- the scopes of an address ---- */

/* The scopes holding addr below die into path[depth..], outermost first: the new depth, or -1 when
 * no scope below die holds it. */
static int cs_inline_scopes(const cs_dw_api_t *dw, Dwarf_Die *die, Dwarf_Addr addr, Dwarf_Die *path, int depth) {
  Dwarf_Die child;
  if (depth >= CS_INLINE_MAX_DEPTH || dw->dwarf_child(die, &child) != 0) return -1;
  do {
    switch (dw->dwarf_tag(&child)) {
    case DW_TAG_inlined_subroutine:
    case DW_TAG_lexical_block: {
      if (dw->dwarf_haspc(&child, addr) != 1) break;
      path[depth] = child;
      const int deeper = cs_inline_scopes(dw, &path[depth], addr, path, depth + 1);
      return deeper >= 0 ? deeper : depth + 1;
    }
    default:
      break;
    }
  } while (dw->dwarf_siblingof(&child, &child) == 0);
  return -1;
}

size_t cs_inline_calls(const cs_dw_api_t *dw, const cs_inline_unit_t *u, Dwarf_Addr addr, cs_inline_call_t *out,
                       size_t max) {
  const Dwarf_Die *function = cs_inline_function(u, addr);
  if (!function) return 0;
  Dwarf_Die path[CS_INLINE_MAX_DEPTH];
  path[0] = *function;
  const int depth = cs_inline_scopes(dw, &path[0], addr, path, 1);
  size_t count = 0;
  for (int i = depth - 1; i > 0; i--) { /* from the innermost out, to the function */
    if (dw->dwarf_tag(&path[i]) != DW_TAG_inlined_subroutine) continue; /* a lexical block */
    if (count == max) return 0; /* deeper than the caller keeps: named as before rather than cut short */
    out[count] = (cs_inline_call_t){.name = cs_inline_name(dw, &path[i]), .call_file = NULL, .call_line = 0};
    cs_inline_call_site(dw, &path[i], &out[count]);
    count++;
  }
  return count;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Dump-time symbolization through elfutils libdwfl. See symbolize.h for the contract.
 *
 * One Dwfl session per symbolizer, reporting the objects the loader has loaded (dl_iterate_phdr)
 * when the symbolizer is created, each at its load bias. Per lookup address: the module (dwfl_addrmodule), the symbol from the
 * module's symbol table, static functions included, and file:line from DWARF
 * (dwfl_module_getsrc, or the unit's own ranges where a module has no .debug_aranges). Results
 * are cached per lookup address, and every string is copied once into an arena owned by the
 * symbolizer (names and file names repeat a lot across frames).
 *
 * Symbols: dwfl_module_addrinfo scans the whole symbol table on every call (elfutils 0.188), about
 * 0.1 ms per lookup in libc; a dump resolves thousands of distinct PCs. So each module's table is
 * read once, on the first lookup in it, into an array sorted by address, and searched by
 * bisection. The choice among symbols follows addrinfo's: the symbol whose [value, value + size)
 * holds the address, else the nearest sizeless one below it; at one address a global name beats
 * a weak one beats a local one. */
#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_compiler.h"
#include "common/cs_log.h"
#include "snapshot/symbolize.h"
#include "snapshot/inline_calls.h"
#include "snapshot/symbol_name.h"
#include "common/cs_private_libs.h"
#include "record/stack_entry.h"
#include "snapshot/pyframe_names.h"

/* Every libdw/libelf call goes through the privately loaded table (private_libs.h). */
static const cs_dw_api_t *cs_dw;
#define CS_DW_CALL(name) (cs_dw->name)
#define dwarf_dieoffset CS_DW_CALL(dwarf_dieoffset)
#define dwarf_getsrc_die CS_DW_CALL(dwarf_getsrc_die)
#define dwarf_lineno CS_DW_CALL(dwarf_lineno)
#define dwarf_linesrc CS_DW_CALL(dwarf_linesrc)
#define dwarf_ranges CS_DW_CALL(dwarf_ranges)
#define dwelf_elf_gnu_build_id CS_DW_CALL(dwelf_elf_gnu_build_id)
#define dwfl_addrmodule CS_DW_CALL(dwfl_addrmodule)
#define dwfl_begin CS_DW_CALL(dwfl_begin)
#define dwfl_build_id_find_debuginfo CS_DW_CALL(dwfl_build_id_find_debuginfo)
#define dwfl_end CS_DW_CALL(dwfl_end)
#define dwfl_errmsg CS_DW_CALL(dwfl_errmsg)
#define dwfl_lineinfo CS_DW_CALL(dwfl_lineinfo)
#define dwfl_module_addrinfo CS_DW_CALL(dwfl_module_addrinfo)
#define dwfl_module_addrdie CS_DW_CALL(dwfl_module_addrdie)
#define dwfl_module_build_id CS_DW_CALL(dwfl_module_build_id)
#define dwfl_module_getdwarf CS_DW_CALL(dwfl_module_getdwarf)
#define dwfl_module_getelf CS_DW_CALL(dwfl_module_getelf)
#define dwfl_module_getsrc CS_DW_CALL(dwfl_module_getsrc)
#define dwfl_module_getsym_info CS_DW_CALL(dwfl_module_getsym_info)
#define dwfl_module_getsymtab CS_DW_CALL(dwfl_module_getsymtab)
#define dwfl_module_info CS_DW_CALL(dwfl_module_info)
#define dwfl_module_nextcu CS_DW_CALL(dwfl_module_nextcu)
#define dwfl_report_begin CS_DW_CALL(dwfl_report_begin)
#define dwfl_report_elf CS_DW_CALL(dwfl_report_elf)
#define dwfl_report_end CS_DW_CALL(dwfl_report_end)
#define dwfl_report_module CS_DW_CALL(dwfl_report_module)
#define dwfl_linux_proc_report CS_DW_CALL(dwfl_linux_proc_report)
#define dwfl_getmodules CS_DW_CALL(dwfl_getmodules)
#define elf_begin CS_DW_CALL(elf_begin)
#define elf_end CS_DW_CALL(elf_end)
#define elf_version CS_DW_CALL(elf_version)

enum {
  CS_SYM_ARENA_BYTES = 64 * 1024, /* string arena chunk; a longer string gets its own chunk */
  CS_SYM_INITIAL_SLOTS = 1024,    /* frame cache and string set start here, doubling at 1/2 */
  CS_SYM_MAX_FRAMES = 32,         /* frames one address stands for at most: inlined functions
                                     nested deeper are named by their function alone */
};

static const char cs_sym_unknown[] = "??";

/* __cxa_demangle's signature (libstdc++, libc++abi); the result is malloc'd. */
typedef char *(*cs_sym_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

typedef struct cs_sym_frame_slot_s {
  uintptr_t addr;           /* lookup address: pc - 1 for return addresses */
  bool used;                /* addr 0 is a valid key, so emptiness is a flag */
  uint32_t count;           /* frames the address stands for, >= 1 */
  const cs_frame_t *frames; /* in the arena, innermost first; strings in the arena or "??" */
} cs_sym_frame_slot_t;

typedef struct cs_sym_str_slot_s {
  uint64_t hash;
  const char *str; /* NULL = empty */
} cs_sym_str_slot_t;

typedef struct cs_sym_symbol_s {
  uintptr_t addr;   /* run-time address */
  uintptr_t size;   /* bytes; 0 = unknown, reaches up to the next symbol */
  const char *name; /* in libdwfl's copy of the string table: valid until dwfl_end */
  int rank;         /* at equal addresses the highest rank wins: global 2, weak 1, local 0 */
  int index;        /* then the first in the table, as dwfl_module_addrinfo picks */
} cs_sym_symbol_t;

typedef struct cs_sym_cu_s {
  Dwarf_Addr lo, hi; /* one address range of the unit, in DWARF (unbiased) addresses */
  Dwarf_Die die;     /* the unit's DIE: a value, valid while the Dwfl lives */
} cs_sym_cu_t;

/* A unit's functions by address (snapshot/inline_calls.h), read at the unit's first address. */
typedef struct cs_sym_unit_slot_s {
  Dwarf_Off offset;        /* the unit DIE's */
  bool used;
  cs_inline_unit_t *unit;  /* NULL: could not be read (no host memory) */
} cs_sym_unit_slot_t;

/* What we read from one module, hung on the module's userdata slot at its first lookup. */
typedef struct cs_sym_module_s {
  struct cs_sym_module_s *next; /* every module read, for destroy */
  cs_sym_symbol_t *syms;        /* sorted by addr, the best one per address */
  size_t nsyms;
  cs_sym_cu_t *cus; /* sorted by lo; read at the first line lookup libdwfl cannot answer */
  size_t ncus;
  bool cus_read;
  cs_sym_unit_slot_t *units; /* open addressing on offset; NULL until the first */
  size_t units_mask, units_used;
} cs_sym_module_t;

typedef struct cs_sym_chunk_s {
  struct cs_sym_chunk_s *next; /* older chunks */
  size_t used, size;           /* bytes of data[] */
  _Alignas(cs_frame_t) char data[]; /* strings, and the frame arrays of the cache */
} cs_sym_chunk_t;

struct cs_symbolizer_s {
  Dwfl *dwfl;                  /* NULL when libdwfl could not read the module map: all "??" */
  cs_sym_demangle_fn demangle; /* NULL without a C++ runtime in the process: names stay mangled */
  void *demangle_lib;          /* our reference on libstdc++, held while `demangle` is used */

  cs_sym_frame_slot_t *frames; /* cache: open addressing on addr */
  size_t frames_mask, frames_used;

  cs_sym_str_slot_t *strs; /* string set: one copy of each distinct string */
  size_t strs_mask, strs_used;
  cs_sym_chunk_t *arena;
  cs_sym_module_t *modules; /* modules looked into so far */
};

/* For a module whose record could not be allocated: no symbols, no units, never written. */
static cs_sym_module_t cs_sym_no_module = {.cus_read = true};

/* ---- hashing ---- */

static inline uint64_t cs_sym_mix64(uint64_t x) { /* murmur3's finalizer */
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  x *= UINT64_C(0xc4ceb9fe1a85ec53);
  x ^= x >> 33;
  return x;
}

static uint64_t cs_sym_hash_str(const char *s, size_t len) { /* FNV-1a, then mixed */
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * UINT64_C(0x100000001b3);
  return cs_sym_mix64(h);
}

/* ---- strings: arena + set ---- */

/* bytes at a multiple of align (a power of two, at most the chunk's own alignment) */
static void *cs_sym_arena_alloc(cs_symbolizer_t *s, size_t bytes, size_t align) {
  cs_sym_chunk_t *c = s->arena;
  size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;
  if (!c || at > c->size || c->size - at < bytes) {
    size_t size = CS_SYM_ARENA_BYTES - sizeof *c;
    if (size < bytes) size = bytes;
    c = malloc(sizeof *c + size);
    if (!c) return NULL;
    c->next = s->arena;
    c->used = 0;
    c->size = size;
    s->arena = c;
    at = 0;
  }
  c->used = at + bytes;
  return c->data + at;
}

static bool cs_sym_strs_grow(cs_symbolizer_t *s) {
  const size_t slots = (s->strs_mask + 1) * 2;
  cs_sym_str_slot_t *n = calloc(slots, sizeof *n);
  if (!n) return false;
  for (size_t i = 0; i <= s->strs_mask; i++) {
    if (!s->strs[i].str) continue;
    size_t j = (size_t)s->strs[i].hash & (slots - 1);
    while (n[j].str) j = (j + 1) & (slots - 1);
    n[j] = s->strs[i];
  }
  free(s->strs);
  s->strs = n;
  s->strs_mask = slots - 1;
  return true;
}

/* The symbolizer's copy of str[0..len); "??" when memory runs out. */
static const char *cs_sym_intern_str(cs_symbolizer_t *s, const char *str, size_t len) {
  const uint64_t h = cs_sym_hash_str(str, len);
  size_t i = (size_t)h & s->strs_mask;
  for (; s->strs[i].str; i = (i + 1) & s->strs_mask) {
    const char *have = s->strs[i].str;
    if (s->strs[i].hash == h && strncmp(have, str, len) == 0 && have[len] == '\0') return have;
  }
  if ((s->strs_used + 1) * 2 > s->strs_mask + 1) {
    if (!cs_sym_strs_grow(s)) return cs_sym_unknown;
    i = (size_t)h & s->strs_mask;
    while (s->strs[i].str) i = (i + 1) & s->strs_mask;
  }
  char *copy = cs_sym_arena_alloc(s, len + 1, 1);
  if (!copy) return cs_sym_unknown;
  memcpy(copy, str, len);
  copy[len] = '\0';
  s->strs[i].hash = h;
  s->strs[i].str = copy;
  s->strs_used++;
  return copy;
}

static const char *cs_sym_intern_cstr(cs_symbolizer_t *s, const char *str) {
  return cs_sym_intern_str(s, str, strlen(str));
}

/* ---- demangling ---- */

/* __cxa_demangle, if the process already has a C++ runtime: cudasnap never links libstdc++
 * (a C program must not gain it), and C++ programs have it loaded anyway. */
static void cs_sym_find_demangler(cs_symbolizer_t *s) {
  void *p = dlsym(RTLD_DEFAULT, "__cxa_demangle");
  if (!p) {
    /* loaded, but not in the global scope (dlopen'd with RTLD_LOCAL, e.g. by Python) */
    s->demangle_lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (s->demangle_lib) p = dlsym(s->demangle_lib, "__cxa_demangle");
  }
  if (p) memcpy(&s->demangle, &p, sizeof s->demangle); /* ISO C: no void * -> function cast */
}

static const char *cs_sym_name(cs_symbolizer_t *s, const char *sym) {
  /* Versioned names ("pthread_sigmask@@GLIBC_2.32") lose the version: a frame names a function.
   * A mangled name never contains '@'. */
  const char *at = strchr(sym + 1, '@');
  const size_t len = at ? (size_t)(at - sym) : strlen(sym);
  /* "_Z" starts every Itanium-ABI mangled name; C names are left alone. */
  if (s->demangle && sym[0] == '_' && sym[1] == 'Z' && !at) {
    int status = -1;
    char *d = s->demangle(sym, NULL, NULL, &status);
    if (d && status == 0) {
      const char *r = cs_sym_intern_str(s, d, cs_symbol_name_length(d, strlen(d)));
      free(d);
      return r;
    }
    free(d);
  }
  return cs_sym_intern_str(s, sym, cs_symbol_name_length(sym, len));
}

/* ---- symbol tables ---- */

static int cs_sym_symbol_cmp(const void *pa, const void *pb) {
  const cs_sym_symbol_t *a = pa, *b = pb;
  if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
  if (a->rank != b->rank) return b->rank - a->rank;                   /* best binding first */
  if ((a->size == 0) != (b->size == 0)) return a->size == 0 ? 1 : -1; /* then sized */
  return a->index - b->index;                                         /* then table order */
}

static void cs_sym_read_symbols(cs_sym_module_t *m, Dwfl_Module *mod) {
  const int count = dwfl_module_getsymtab(mod);
  if (count <= 0) return;
  cs_sym_symbol_t *syms = malloc((size_t)count * sizeof *syms);
  if (!syms) return;
  size_t n = 0;
  for (int i = 1; i < count; i++) { /* entry 0 is the null symbol */
    GElf_Sym sym;
    GElf_Addr addr = 0;
    GElf_Word shndx = 0;
    const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
    if (!name || !name[0] || shndx == SHN_UNDEF) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) continue;
    const int bind = GELF_ST_BIND(sym.st_info);
    syms[n++] = (cs_sym_symbol_t){
        .addr = (uintptr_t)addr,
        .size = (uintptr_t)sym.st_size,
        .name = name,
        .rank = bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0,
        .index = i,
    };
  }
  qsort(syms, n, sizeof syms[0], cs_sym_symbol_cmp);
  size_t kept = 0; /* the best symbol at each address */
  for (size_t i = 0; i < n; i++)
    if (kept == 0 || syms[kept - 1].addr != syms[i].addr) syms[kept++] = syms[i];
  m->syms = syms;
  m->nsyms = kept;
}

static cs_sym_module_t *cs_sym_module(cs_symbolizer_t *s, Dwfl_Module *mod, void **userdata) {
  if (*userdata) return *userdata;
  cs_sym_module_t *m = calloc(1, sizeof *m);
  if (!m) return &cs_sym_no_module;
  cs_sym_read_symbols(m, mod);
  m->next = s->modules;
  s->modules = m;
  *userdata = m;
  return m;
}

/* Nested or overlapping sized symbols are rare; look this many below the nearest one. */
enum { CS_SYM_BACKTRACK = 8 };

static const char *cs_sym_lookup(const cs_sym_module_t *m, uintptr_t addr) {
  const cs_sym_symbol_t *syms = m->syms;
  size_t lo = 0, hi = m->nsyms; /* first symbol above addr */
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (syms[mid].addr <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  const cs_sym_symbol_t *near = &syms[lo - 1];
  if (near->size == 0 || addr - near->addr < near->size) return near->name;
  for (size_t i = lo - 1; i-- > 0 && lo - 1 - i <= CS_SYM_BACKTRACK;)
    if (syms[i].size != 0 && addr - syms[i].addr < syms[i].size) return syms[i].name;
  return NULL; /* in padding between functions, or in a PLT */
}

/* ---- lines without .debug_aranges ----
 *
 * dwfl_module_getsrc finds the unit of an address through .debug_aranges, which clang does not
 * emit by default: libdwfl 0.188 then finds no line for any address of the module. The fallback
 * reads every unit's address ranges once, sorted, and asks the unit found by bisection. */

static int cs_sym_cu_cmp(const void *pa, const void *pb) {
  const cs_sym_cu_t *a = pa, *b = pb;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static void cs_sym_read_cus(cs_sym_module_t *m, Dwfl_Module *mod) {
  m->cus_read = true;
  size_t cap = 0;
  Dwarf_Addr bias = 0;
  for (Dwarf_Die *cu = NULL; (cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL;) {
    Dwarf_Addr base = 0, lo = 0, hi = 0;
    for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0;) {
      if (lo >= hi) continue;
      if (m->ncus == cap) {
        const size_t grown = cap ? cap * 2 : 64;
        cs_sym_cu_t *n = realloc(m->cus, grown * sizeof *n);
        if (!n) goto done;
        m->cus = n;
        cap = grown;
      }
      m->cus[m->ncus++] = (cs_sym_cu_t){.lo = lo, .hi = hi, .die = *cu};
    }
  }
done:
  qsort(m->cus, m->ncus, sizeof m->cus[0], cs_sym_cu_cmp);
}

/* The unit holding addr by its ranges (for modules without .debug_aranges); *bias gets the
 * module's DWARF bias. NULL when no unit holds it, or the module has no DWARF. */
static Dwarf_Die *cs_sym_unit_by_ranges(cs_sym_module_t *m, Dwfl_Module *mod, uintptr_t addr, Dwarf_Addr *bias) {
  if (!dwfl_module_getdwarf(mod, bias)) return NULL; /* no DWARF at all */
  if (!m->cus_read) cs_sym_read_cus(m, mod);
  const Dwarf_Addr a = (Dwarf_Addr)addr - *bias;
  size_t lo = 0, hi = m->ncus; /* first unit range starting above a */
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (m->cus[mid].lo <= a) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0 || a >= m->cus[lo - 1].hi) return NULL;
  return &m->cus[lo - 1].die;
}

static Dwarf_Line *cs_sym_line_by_units(cs_sym_module_t *m, Dwfl_Module *mod, uintptr_t addr) {
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = cs_sym_unit_by_ranges(m, mod, addr, &bias);
  return cu ? dwarf_getsrc_die(cu, (Dwarf_Addr)addr - bias) : NULL;
}

/* ---- inlined functions ----
 *
 * A return address in code the compiler inlined stands for several calls (snapshot/inline_calls.h):
 * the innermost inlined function at the address's own line, then each function it was inlined
 * into at the line of that call, and last the function the code belongs to, at the line of the
 * outermost inlined call, as `eu-addr2line -i` and `perf` show them. Without this, the function
 * the code was inlined into took the inlined function's line and its place as the site. */

static const char *cs_sym_call_file(cs_symbolizer_t *s, const cs_inline_call_t *call) {
  return call->call_file && call->call_file[0] ? cs_sym_intern_cstr(s, call->call_file) : cs_sym_unknown;
}

static bool cs_sym_units_grow(cs_sym_module_t *m) {
  const size_t slots = m->units ? (m->units_mask + 1) * 2 : 64;
  cs_sym_unit_slot_t *n = calloc(slots, sizeof *n);
  if (!n) return false;
  for (size_t i = 0; m->units && i <= m->units_mask; i++) {
    if (!m->units[i].used) continue;
    size_t j = (size_t)cs_sym_mix64(m->units[i].offset) & (slots - 1);
    while (n[j].used) j = (j + 1) & (slots - 1);
    n[j] = m->units[i];
  }
  free(m->units);
  m->units = n;
  m->units_mask = slots - 1;
  return true;
}

/* The functions of the unit cu, read at its first address; NULL when they cannot be had. */
static const cs_inline_unit_t *cs_sym_unit(cs_sym_module_t *m, Dwarf_Die *cu) {
  if (m == &cs_sym_no_module) return NULL; /* never written */
  const Dwarf_Off offset = dwarf_dieoffset(cu);
  if (m->units) {
    for (size_t i = (size_t)cs_sym_mix64(offset) & m->units_mask; m->units[i].used; i = (i + 1) & m->units_mask)
      if (m->units[i].offset == offset) return m->units[i].unit;
  }
  if ((m->units_used + 1) * 2 > (m->units ? m->units_mask + 1 : 0) && !cs_sym_units_grow(m)) return NULL;
  size_t i = (size_t)cs_sym_mix64(offset) & m->units_mask;
  while (m->units[i].used) i = (i + 1) & m->units_mask;
  m->units[i] = (cs_sym_unit_slot_t){.offset = offset, .used = true, .unit = cs_inline_unit_read(cs_dw, cu)};
  m->units_used++;
  return m->units[i].unit;
}

/* out[0] is the address's frame as the symbol table and line table name it; where the address is
 * in inlined code, it becomes the innermost of several. Returns the count, >= 1. */
static size_t cs_sym_inlined(cs_symbolizer_t *s, cs_sym_module_t *m, Dwfl_Module *mod, uintptr_t addr,
                             cs_frame_t *out) {
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = dwfl_module_addrdie(mod, (Dwarf_Addr)addr, &bias);
  if (!cu) cu = cs_sym_unit_by_ranges(m, mod, addr, &bias);
  const cs_inline_unit_t *unit = cu ? cs_sym_unit(m, cu) : NULL;
  if (!unit) return 1;
  cs_inline_call_t calls[CS_SYM_MAX_FRAMES - 1];
  const size_t k = cs_inline_calls(cs_dw, unit, (Dwarf_Addr)addr - bias, calls, CS_SYM_MAX_FRAMES - 1);
  if (k == 0) return 1;
  const cs_frame_t outer = out[0];
  for (size_t i = 0; i < k; i++) {
    out[i].name = calls[i].name ? cs_sym_name(s, calls[i].name) : cs_sym_unknown;
    if (i > 0) {
      out[i].filename = cs_sym_call_file(s, &calls[i - 1]);
      out[i].line = calls[i - 1].call_line;
    }
  }
  out[k] = (cs_frame_t){
      .name = outer.name, .filename = cs_sym_call_file(s, &calls[k - 1]), .line = calls[k - 1].call_line};
  return k + 1;
}

/* ---- one lookup ---- */

/* The frames of addr into out[0..CS_SYM_MAX_FRAMES), innermost first; their count, >= 1. */
static size_t cs_sym_resolve(cs_symbolizer_t *s, uintptr_t addr, cs_frame_t *out) {
  cs_frame_t *f = &out[0];
  *f = (cs_frame_t){.name = cs_sym_unknown, .filename = cs_sym_unknown, .line = 0};
  if (!s->dwfl) return 1;
  Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, (Dwarf_Addr)addr);
  if (!mod) return 1;
  Dwarf_Addr start = 0, end = 0;
  void **userdata = NULL;
  const char *modname = dwfl_module_info(mod, &userdata, &start, &end, NULL, NULL, NULL, NULL);
  /* dwfl_addrmodule (0.188) can answer with the last module for an address past every module */
  if ((Dwarf_Addr)addr < start || (Dwarf_Addr)addr >= end) return 1;
  if (!modname) modname = cs_sym_unknown;

  cs_sym_module_t *m = cs_sym_module(s, mod, userdata);
  const char *symname = cs_sym_lookup(m, addr);
  if (symname) f->name = cs_sym_name(s, symname);

  int lineno = 0;
  const char *src = NULL;
  Dwfl_Line *line = dwfl_module_getsrc(mod, (Dwarf_Addr)addr);
  if (line) {
    src = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
  } else {
    Dwarf_Line *dl = cs_sym_line_by_units(m, mod, addr);
    if (dl) {
      src = dwarf_linesrc(dl, NULL, NULL);
      if (dwarf_lineno(dl, &lineno) != 0) lineno = 0;
    }
  }
  if (src && src[0]) {
    f->filename = cs_sym_intern_cstr(s, src);
    f->line = lineno > 0 ? lineno : 0;
    return cs_sym_inlined(s, m, mod, addr, out); /* lines, so DWARF: inlined functions too */
  }
  if (symname) {
    f->filename = cs_sym_intern_cstr(s, modname);
  } else {
    /* Neither a symbol nor lines: keep what an offline tool needs, the ELF address in the
     * module (what addr2line -e <module> takes), not the run's load address. */
    Dwarf_Addr bias = start;
    if (!dwfl_module_getelf(mod, &bias)) bias = start;
    char buf[4096 + 32];
    int len = snprintf(buf, sizeof buf, "%s+0x%" PRIxPTR, modname, addr - (uintptr_t)bias);
    if (len > 0) f->filename = cs_sym_intern_str(s, buf, strnlen(buf, sizeof buf - 1));
  }
  return 1;
}

/* ---- frame cache ---- */

/* Weak: the Python frames' records live in the profiled process (record/pyframes.c), where
 * snapshot/pyframe_names.c names them. The tool links this symbolizer without them (cudasnap recover
 * names a recording's native frames only), and there the reference is NULL. */
extern __typeof__(cs_pyframe_name) cs_pyframe_name __attribute__((weak));

static cs_frame_t cs_sym_python(cs_symbolizer_t *s, uintptr_t entry) {
  char name[512] = "(Python frame)", file[1024] = "??";
  int line = 0;
  if (cs_pyframe_name) (void)cs_pyframe_name(entry, name, sizeof name, file, sizeof file, &line);
  const char *n = cs_sym_intern_cstr(s, name), *f = cs_sym_intern_cstr(s, file);
  return (cs_frame_t){.name = n ? n : cs_sym_unknown, .filename = f ? f : cs_sym_unknown, .line = line};
}

static bool cs_sym_frames_grow(cs_symbolizer_t *s) {
  const size_t slots = (s->frames_mask + 1) * 2;
  cs_sym_frame_slot_t *n = calloc(slots, sizeof *n);
  if (!n) return false;
  for (size_t i = 0; i <= s->frames_mask; i++) {
    if (!s->frames[i].used) continue;
    size_t j = (size_t)cs_sym_mix64(s->frames[i].addr) & (slots - 1);
    while (n[j].used) j = (j + 1) & (slots - 1);
    n[j] = s->frames[i];
  }
  free(s->frames);
  s->frames = n;
  s->frames_mask = slots - 1;
  return true;
}

static const cs_frame_t cs_sym_unknown_frame = {.name = cs_sym_unknown, .filename = cs_sym_unknown, .line = 0};

size_t cs_symbolize_frames(cs_symbolizer_t *s, uintptr_t pc, int exact, const cs_frame_t **frames) {
  /* A return address points after the call; pc - 1 lies inside the call instruction, so the
   * frame gets the call's line and, for a noreturn call at a function's end, its function. */
  /* A Python frame entry (record/pyframes.h) is no address: named from its code object. */
  const uintptr_t addr = cs_py_is_frame(pc) ? pc : exact ? pc : pc - 1;
  *frames = &cs_sym_unknown_frame;
  if (!s) return 1;

  const uint64_t h = cs_sym_mix64(addr);
  size_t i = (size_t)h & s->frames_mask;
  for (; s->frames[i].used; i = (i + 1) & s->frames_mask) {
    if (s->frames[i].addr != addr) continue;
    *frames = s->frames[i].frames;
    return s->frames[i].count;
  }

  cs_frame_t found[CS_SYM_MAX_FRAMES];
  size_t count = 1;
  if (cs_py_is_frame(pc)) found[0] = cs_sym_python(s, pc);
  else count = cs_sym_resolve(s, addr, found);
  cs_frame_t *kept = cs_sym_arena_alloc(s, count * sizeof *kept, _Alignof(cs_frame_t));
  if (!kept) return 1; /* "??", as without host memory anywhere else */
  memcpy(kept, found, count * sizeof *kept);
  *frames = kept;
  if ((s->frames_used + 1) * 2 > s->frames_mask + 1) {
    if (!cs_sym_frames_grow(s)) return count; /* uncached, still correct */
    i = (size_t)h & s->frames_mask;
    while (s->frames[i].used) i = (i + 1) & s->frames_mask;
  }
  s->frames[i] = (cs_sym_frame_slot_t){.addr = addr, .used = true, .count = (uint32_t)count, .frames = kept};
  s->frames_used++;
  return count;
}

cs_frame_t cs_symbolize(cs_symbolizer_t *s, uintptr_t pc, int exact) {
  const cs_frame_t *frames;
  (void)cs_symbolize_frames(s, pc, exact, &frames);
  return frames[0];
}

/* ---- finding separate debug information, locally ---- */

/* Does the ELF file open at fd carry the module's build ID? */
static bool cs_sym_same_build_id(Dwfl_Module *mod, int fd) {
  const unsigned char *want = NULL;
  GElf_Addr vaddr = 0;
  const int want_len = dwfl_module_build_id(mod, &want, &vaddr);
  if (want_len <= 0) return false;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  if (!elf) return false;
  const void *have = NULL;
  const ssize_t have_len = dwelf_elf_gnu_build_id(elf, &have);
  const bool same = have_len == want_len && memcmp(have, want, (size_t)want_len) == 0;
  elf_end(elf);
  return same;
}

/* dwfl_standard_find_debuginfo, minus its last resort: with DEBUGINFOD_URLS set (the default in
 * some distributions' login shells) it downloads debug files from the network, for minutes,
 * into ~/.cache, inside the profiled program. So: the build-ID tree (/usr/lib/debug/.build-id),
 * then the .gnu_debuglink name beside the file, in .debug/ and under /usr/lib/debug; a
 * debuglink file counts only when its build ID matches (elfutils checks the CRC instead).
 * libdwfl looks in the main file itself before asking. */
static int cs_sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                                 GElf_Addr base, const char *file_name, const char *debuglink,
                                 GElf_Word debuglink_crc, char **debuginfo_file_name) {
  int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink,
                                        debuglink_crc, debuginfo_file_name);
  if (fd >= 0 || !debuglink || !file_name || strchr(debuglink, '/')) return fd;
  const char *slash = strrchr(file_name, '/'); /* /proc/self/maps gives absolute paths */
  if (!slash) return -1;
  const int dir_len = (int)(slash - file_name);
  static const char *const patterns[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
  for (size_t i = 0; i < CS_ARRAY_SIZE(patterns); i++) {
    char path[4096];
    const int len = snprintf(path, sizeof path, patterns[i], dir_len, file_name, debuglink);
    if (len <= 0 || (size_t)len >= sizeof path || strcmp(path, file_name) == 0) continue;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (cs_sym_same_build_id(mod, fd)) {
      *debuginfo_file_name = strdup(path); /* libdwfl frees it; NULL only loses the name */
      return fd;
    }
    close(fd);
  }
  return -1;
}

/* ---- lifecycle ---- */

/* filled once libdw is loaded: find_elf comes from it */
static Dwfl_Callbacks cs_sym_callbacks = {
  .find_debuginfo = cs_sym_find_debuginfo,
  .debuginfo_path = NULL,
};

/* The symbolizer without its module map; NULL without host memory. s->dwfl is NULL when libdw
 * cannot be had (frames are then "??"). */
static cs_symbolizer_t *cs_symbolizer_new(void) {
  cs_symbolizer_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->frames = calloc(CS_SYM_INITIAL_SLOTS, sizeof *s->frames);
  s->strs = calloc(CS_SYM_INITIAL_SLOTS, sizeof *s->strs);
  if (!s->frames || !s->strs) {
    cs_symbolizer_destroy(s);
    return NULL;
  }
  s->frames_mask = CS_SYM_INITIAL_SLOTS - 1;
  s->strs_mask = CS_SYM_INITIAL_SLOTS - 1;
  cs_sym_find_demangler(s);

  cs_dw = cs_private_dw();
  if (!cs_dw) {
    cs_log_warn("cannot load libdw.so.1 (elfutils); frames are not named");
    return s;
  }
  cs_sym_callbacks.find_elf = cs_dw->dwfl_linux_proc_find_elf;
  (void)elf_version(EV_CURRENT); /* libelf's handshake, before our own elf_begin */
  s->dwfl = dwfl_begin(&cs_sym_callbacks);
  if (!s->dwfl) cs_log_warn("cannot start libdwfl for symbols: %s", dwfl_errmsg(-1));
  else dwfl_report_begin(s->dwfl);
  return s;
}

static void cs_symbolizer_no_map(cs_symbolizer_t *s, const char *why) {
  /* degrade: frames come out as "??", the snapshot is still written */
  cs_log_warn("cannot read the module map for symbols: %s", why);
  dwfl_end(s->dwfl);
  s->dwfl = NULL;
}

/* ---- the module map ----
 *
 * libdwfl reads it from /proc/self/maps (dwfl_linux_proc_report: each object's file opened at its
 * first lookup, the vDSO from memory). There a file the program maps again itself (libffi maps
 * its own file for the trampolines of Python's ctypes callbacks) reads as part of the loaded
 * object when the mapping lands next to it with nothing but anonymous memory between: libdwfl then
 * takes the object's start from the stray mapping, and every frame in it comes out shifted and
 * unnamed. So each module is checked against the span of the object the loader loaded from that
 * file (dl_iterate_phdr), and reported again within it where it reaches past. */

/* A loaded object: its file and the addresses its PT_LOAD segments span, pages whole. */
typedef struct cs_sym_span_s {
  char *path;
  Dwarf_Addr lo, hi;
} cs_sym_span_t;

typedef struct cs_sym_spans_s {
  cs_sym_span_t *spans;
  size_t count, slots;
  Dwarf_Addr page;
  char exe[4096];
  bool no_memory;
} cs_sym_spans_t;

static bool cs_sym_spans_add(cs_sym_spans_t *l, const char *path, Dwarf_Addr lo, Dwarf_Addr hi) {
  if (l->count == l->slots) {
    const size_t slots = l->slots ? l->slots * 2 : 64;
    cs_sym_span_t *grown = realloc(l->spans, slots * sizeof *grown);
    if (!grown) return false;
    l->spans = grown;
    l->slots = slots;
  }
  char *copy = strdup(path); /* the loader's string goes with a dlclose on another thread */
  if (!copy) return false;
  l->spans[l->count++] = (cs_sym_span_t){.path = copy, .lo = lo, .hi = hi};
  return true;
}

static void cs_sym_spans_free(cs_sym_spans_t *l) {
  for (size_t i = 0; i < l->count; i++) free(l->spans[i].path);
  free(l->spans);
}

static int cs_sym_note_loaded(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  cs_sym_spans_t *l = data;
  /* the program has no name here; the vDSO and the like have no file */
  const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : l->exe;
  if (path[0] != '/') return 0;
  Dwarf_Addr lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    const Dwarf_Addr start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
    if (start < lo) lo = start;
    if (end > hi) hi = end;
  }
  if (lo >= hi) return 0;
  /* the loader knows an object by the name it was asked for, often a symbolic link
   * (libffi.so.8); /proc/self/maps, and so libdwfl, by the file's own path */
  char *real = realpath(path, NULL);
  const bool added = cs_sym_spans_add(l, real ? real : path, lo & ~(l->page - 1), (hi + l->page - 1) & ~(l->page - 1));
  free(real);
  if (!added) {
    l->no_memory = true;
    return 1;
  }
  return 0;
}

/* The modules as libdwfl has them (name, start, end), with each one's start and end kept within
 * the span of the loaded object of its file; fixed counts the modules moved. */
typedef struct cs_sym_remap_s {
  const cs_sym_spans_t *loaded;
  cs_sym_spans_t modules;
  size_t fixed;
} cs_sym_remap_t;

static int cs_sym_remap_one(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg) {
  (void)userdata;
  cs_sym_remap_t *r = arg;
  Dwarf_Addr end = start;
  (void)dwfl_module_info(mod, NULL, NULL, &end, NULL, NULL, NULL, NULL);
  for (size_t i = 0; name && i < r->loaded->count; i++) {
    const cs_sym_span_t *o = &r->loaded->spans[i];
    if (strcmp(o->path, name) != 0 || end <= o->lo || start >= o->hi) continue;
    if (start < o->lo || end > o->hi) {
      start = start < o->lo ? o->lo : start;
      end = end > o->hi ? o->hi : end;
      r->fixed++;
    }
    break;
  }
  if (!cs_sym_spans_add(&r->modules, name ? name : "", start, end)) {
    r->modules.no_memory = true;
    return DWARF_CB_ABORT;
  }
  return DWARF_CB_OK;
}

static void cs_sym_keep_to_loaded(cs_symbolizer_t *s) {
  cs_sym_spans_t loaded = {.page = (Dwarf_Addr)sysconf(_SC_PAGESIZE)};
  const ssize_t n = readlink("/proc/self/exe", loaded.exe, sizeof loaded.exe - 1);
  loaded.exe[n > 0 ? n : 0] = '\0';
  dl_iterate_phdr(cs_sym_note_loaded, &loaded); /* the loader's lock, briefly */
  cs_sym_remap_t r = {.loaded = &loaded};
  if (!loaded.no_memory) (void)dwfl_getmodules(s->dwfl, cs_sym_remap_one, &r, 0);
  if (r.fixed > 0 && !r.modules.no_memory) {
    /* reported again: a module reported as it was is kept as it is (the vDSO's image with it) */
    dwfl_report_begin(s->dwfl);
    for (size_t i = 0; i < r.modules.count; i++)
      (void)dwfl_report_module(s->dwfl, r.modules.spans[i].path, r.modules.spans[i].lo, r.modules.spans[i].hi);
    if (dwfl_report_end(s->dwfl, NULL, NULL) != 0) cs_symbolizer_no_map(s, dwfl_errmsg(-1));
  }
  cs_sym_spans_free(&r.modules);
  cs_sym_spans_free(&loaded);
}

cs_symbolizer_t *cs_symbolizer_create(void) {
  cs_symbolizer_t *s = cs_symbolizer_new();
  if (!s || !s->dwfl) return s;
  const int rc = dwfl_linux_proc_report(s->dwfl, getpid());
  if (rc != 0 || dwfl_report_end(s->dwfl, NULL, NULL) != 0) {
    cs_symbolizer_no_map(s, rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
    return s;
  }
  cs_sym_keep_to_loaded(s);
  return s;
}

/* Does the ELF file at path carry this GNU build ID? */
static bool cs_sym_file_has_build_id(const char *path, const unsigned char *id, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  const void *have = NULL;
  const ssize_t have_len = elf ? dwelf_elf_gnu_build_id(elf, &have) : -1;
  const bool same = have_len == (ssize_t)len && memcmp(have, id, len) == 0;
  if (elf) elf_end(elf);
  close(fd);
  return same;
}

cs_symbolizer_t *cs_symbolizer_create_for(const cs_sym_map_module_t *modules, size_t count) {
  cs_symbolizer_t *s = cs_symbolizer_new();
  if (!s || !s->dwfl) return s;
  /* later records win where modules overlap (one unloaded, another loaded in its place):
   * libdwfl refuses an overlapping report, so they are reported newest first */
  for (size_t i = count; i-- > 0;) {
    const cs_sym_map_module_t *m = &modules[i];
    if (m->build_id_len > 0 && !cs_sym_file_has_build_id(m->path, m->build_id, m->build_id_len)) {
      cs_log_warn("%s is not the build that ran (its build ID differs, or it is gone): its frames are not named",
                  m->path);
      continue;
    }
    (void)dwfl_report_elf(s->dwfl, m->path, m->path, -1, (GElf_Addr)m->bias, false);
  }
  if (dwfl_report_end(s->dwfl, NULL, NULL) != 0) cs_symbolizer_no_map(s, dwfl_errmsg(-1));
  return s;
}

void cs_symbolizer_destroy(cs_symbolizer_t *s) {
  if (!s) return;
  if (s->dwfl) dwfl_end(s->dwfl);
  if (s->demangle_lib) dlclose(s->demangle_lib);
  for (cs_sym_module_t *m = s->modules, *next; m; m = next) {
    next = m->next;
    free(m->syms);
    free(m->cus);
    for (size_t i = 0; m->units && i <= m->units_mask; i++) cs_inline_unit_free(m->units[i].unit);
    free(m->units);
    free(m);
  }
  for (cs_sym_chunk_t *c = s->arena, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(s->frames);
  free(s->strs);
  free(s);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Compiling one frame's unwind rule from .eh_frame (stack_cfi.h). The format is the DWARF call
 * frame information of the DWARF 4 standard (section 6.4) with the GNU .eh_frame and
 * .eh_frame_hdr encodings of the Linux Standard Base (Core, "Exception Frames"). Only x86-64 with
 * glibc 2.35 or later (_dl_find_object); elsewhere every rule is UNKNOWN and libunwind unwinds. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* _dl_find_object */
#endif
#include "record/stack_cfi.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define CS_CFI_SUPPORTED 1
#include <dlfcn.h>
#else
#define CS_CFI_SUPPORTED 0
#endif

#if CS_CFI_SUPPORTED

/* DWARF register numbers on x86-64 (System V psABI, figure 3.36). */
enum { CS_DW_RBP = 6, CS_DW_RSP = 7, CS_DW_RA = 16 };

/* Pointer encodings (DW_EH_PE_*). */
enum {
  CS_PE_OMIT = 0xff,
  CS_PE_FORMAT = 0x0f,
  CS_PE_ABSPTR = 0x00, CS_PE_ULEB128 = 0x01, CS_PE_UDATA2 = 0x02, CS_PE_UDATA4 = 0x03,
  CS_PE_UDATA8 = 0x04, CS_PE_SLEB128 = 0x09, CS_PE_SDATA2 = 0x0a, CS_PE_SDATA4 = 0x0b,
  CS_PE_SDATA8 = 0x0c,
  CS_PE_APPLICATION = 0x70, CS_PE_PCREL = 0x10, CS_PE_DATAREL = 0x30,
  CS_PE_INDIRECT = 0x80,
};

/* Bounds on the work of one compile: a frame's program is a few dozen bytes in practice. */
enum { CS_CFI_MAX_PROGRAM = 4096, CS_CFI_STATE_STACK = 4, CS_CFI_MAX_AUG = 64 };

typedef struct cs_cfi_reader_s {
  const uint8_t *p;
  const uint8_t *end;
  bool bad;
} cs_cfi_reader_t;

static uint64_t cs_cfi_uleb(cs_cfi_reader_t *r) {
  uint64_t v = 0;
  for (unsigned shift = 0; r->p < r->end; shift += 7) {
    const uint8_t b = *r->p++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  r->bad = true;
  return 0;
}

static int64_t cs_cfi_sleb(cs_cfi_reader_t *r) {
  uint64_t v = 0;
  unsigned shift = 0;
  while (r->p < r->end) {
    const uint8_t b = *r->p++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
      return (int64_t)v;
    }
  }
  r->bad = true;
  return 0;
}

/* Fixed-size little-endian reads through memcpy: the tables are not aligned. */
static uint64_t cs_cfi_fixed(cs_cfi_reader_t *r, size_t n) {
  if ((size_t)(r->end - r->p) < n) {
    r->bad = true;
    return 0;
  }
  uint64_t v = 0;
  memcpy(&v, r->p, n);
  r->p += n;
  return v;
}

/* A pointer of encoding `enc`; `datarel` is the base of DW_EH_PE_datarel (.eh_frame_hdr's start).
 * textrel, funcrel and aligned bases never occur on x86-64 Linux: they fail. */
static uintptr_t cs_cfi_pointer(cs_cfi_reader_t *r, uint8_t enc, uintptr_t datarel) {
  const uintptr_t field = (uintptr_t)r->p;
  uint64_t v;
  switch (enc & CS_PE_FORMAT) {
  case CS_PE_ABSPTR: v = cs_cfi_fixed(r, 8); break;
  case CS_PE_ULEB128: v = cs_cfi_uleb(r); break;
  case CS_PE_UDATA2: v = cs_cfi_fixed(r, 2); break;
  case CS_PE_UDATA4: v = cs_cfi_fixed(r, 4); break;
  case CS_PE_UDATA8: v = cs_cfi_fixed(r, 8); break;
  case CS_PE_SLEB128: v = (uint64_t)cs_cfi_sleb(r); break;
  case CS_PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)cs_cfi_fixed(r, 2); break;
  case CS_PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)cs_cfi_fixed(r, 4); break;
  case CS_PE_SDATA8: v = cs_cfi_fixed(r, 8); break;
  default: r->bad = true; return 0;
  }
  switch (enc & CS_PE_APPLICATION) {
  case 0: break;
  case CS_PE_PCREL: v += field; break;
  case CS_PE_DATAREL: v += datarel; break;
  default: r->bad = true; return 0;
  }
  if (enc & CS_PE_INDIRECT) {
    uintptr_t target;
    memcpy(&target, (const void *)(uintptr_t)v, sizeof target);
    v = target;
  }
  return (uintptr_t)v;
}

/* ---- the state the program builds: only what a rule holds ---- */

enum { CS_REG_SAME = 0, CS_REG_UNDEFINED, CS_REG_OFFSET, CS_REG_OTHER };

typedef struct cs_cfi_reg_s {
  uint8_t how; /* CS_REG_* */
  int64_t offset;
} cs_cfi_reg_t;

typedef struct cs_cfi_row_s {
  uint64_t cfa_reg;
  int64_t cfa_offset;
  bool cfa_other;   /* an expression or a register a rule cannot hold */
  bool other_bad;   /* rsp itself has a rule */
  cs_cfi_reg_t rbp, ra;
} cs_cfi_row_t;

typedef struct cs_cfi_cie_s {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_column;
  uint8_t fde_enc;
  bool signal_frame;
  bool has_z; /* FDEs carry augmentation data */
  const uint8_t *program, *program_end;
} cs_cfi_cie_t;

static cs_cfi_reg_t *cs_cfi_reg(cs_cfi_row_t *row, uint64_t reg, uint64_t ra_column) {
  if (reg == ra_column) return &row->ra;
  if (reg == CS_DW_RBP) return &row->rbp;
  return NULL;
}

static void cs_cfi_set(cs_cfi_row_t *row, uint64_t reg, const cs_cfi_cie_t *cie, uint8_t how,
                       int64_t offset) {
  if (reg == CS_DW_RSP && how != CS_REG_SAME) row->other_bad = true;
  cs_cfi_reg_t *r = cs_cfi_reg(row, reg, cie->ra_column);
  if (r) *r = (cs_cfi_reg_t){.how = how, .offset = offset};
}

/* Runs a CFA program until the row that holds `target` (a code address); `initial` is the row
 * after the CIE's own program (for DW_CFA_restore), NULL while running that. False: the program
 * uses what this interpreter does not know. */
static bool cs_cfi_run(const uint8_t *p, const uint8_t *end, const cs_cfi_cie_t *cie, uintptr_t loc,
                       uintptr_t target, cs_cfi_row_t *row, const cs_cfi_row_t *initial) {
  if (end - p > CS_CFI_MAX_PROGRAM) return false;
  cs_cfi_reader_t r = {.p = p, .end = end, .bad = false};
  cs_cfi_row_t saved[CS_CFI_STATE_STACK];
  unsigned depth = 0;
  while (r.p < r.end && !r.bad) {
    const uint8_t op = *r.p++;
    const uint8_t low = op & 0x3f;
    uint64_t reg;
    switch (op >> 6) {
    case 1: /* DW_CFA_advance_loc */
      loc += low * cie->code_align;
      if (loc > target) return true;
      continue;
    case 2: /* DW_CFA_offset */
      cs_cfi_set(row, low, cie, CS_REG_OFFSET, (int64_t)cs_cfi_uleb(&r) * cie->data_align);
      continue;
    case 3: /* DW_CFA_restore */
      if (!initial) return false;
      if (low == CS_DW_RSP) return false;
      if (cs_cfi_reg(row, low, cie->ra_column))
        *cs_cfi_reg(row, low, cie->ra_column) = *cs_cfi_reg((cs_cfi_row_t *)initial, low, cie->ra_column);
      continue;
    default: break;
    }
    switch (op) {
    case 0x00: break; /* DW_CFA_nop */
    case 0x02: loc += cs_cfi_fixed(&r, 1) * cie->code_align; if (loc > target) return true; break;
    case 0x03: loc += cs_cfi_fixed(&r, 2) * cie->code_align; if (loc > target) return true; break;
    case 0x04: loc += cs_cfi_fixed(&r, 4) * cie->code_align; if (loc > target) return true; break;
    case 0x05: /* DW_CFA_offset_extended */
      reg = cs_cfi_uleb(&r);
      cs_cfi_set(row, reg, cie, CS_REG_OFFSET, (int64_t)cs_cfi_uleb(&r) * cie->data_align);
      break;
    case 0x06: /* DW_CFA_restore_extended */
      reg = cs_cfi_uleb(&r);
      if (!initial || reg == CS_DW_RSP) return false;
      if (cs_cfi_reg(row, reg, cie->ra_column))
        *cs_cfi_reg(row, reg, cie->ra_column) = *cs_cfi_reg((cs_cfi_row_t *)initial, reg, cie->ra_column);
      break;
    case 0x07: cs_cfi_set(row, cs_cfi_uleb(&r), cie, CS_REG_UNDEFINED, 0); break;
    case 0x08: reg = cs_cfi_uleb(&r); if (reg != CS_DW_RSP) cs_cfi_set(row, reg, cie, CS_REG_SAME, 0); break;
    case 0x09: /* DW_CFA_register */
      reg = cs_cfi_uleb(&r);
      (void)cs_cfi_uleb(&r);
      cs_cfi_set(row, reg, cie, CS_REG_OTHER, 0);
      break;
    case 0x0a: /* DW_CFA_remember_state */
      if (depth == CS_CFI_STATE_STACK) return false;
      saved[depth++] = *row;
      break;
    case 0x0b: /* DW_CFA_restore_state */
      if (depth == 0) return false;
      *row = saved[--depth];
      break;
    case 0x0c: /* DW_CFA_def_cfa */
      row->cfa_reg = cs_cfi_uleb(&r);
      row->cfa_offset = (int64_t)cs_cfi_uleb(&r);
      row->cfa_other = false;
      break;
    case 0x0d: row->cfa_reg = cs_cfi_uleb(&r); row->cfa_other = false; break;
    case 0x0e: row->cfa_offset = (int64_t)cs_cfi_uleb(&r); break;
    case 0x0f: { /* DW_CFA_def_cfa_expression */
      const uint64_t len = cs_cfi_uleb(&r);
      if (len > (uint64_t)(r.end - r.p)) return false;
      r.p += len;
      row->cfa_other = true;
      break;
    }
    case 0x10:   /* DW_CFA_expression */
    case 0x16: { /* DW_CFA_val_expression */
      reg = cs_cfi_uleb(&r);
      const uint64_t len = cs_cfi_uleb(&r);
      if (len > (uint64_t)(r.end - r.p)) return false;
      r.p += len;
      cs_cfi_set(row, reg, cie, CS_REG_OTHER, 0);
      if (reg == CS_DW_RSP) row->other_bad = true;
      break;
    }
    case 0x11: /* DW_CFA_offset_extended_sf */
      reg = cs_cfi_uleb(&r);
      cs_cfi_set(row, reg, cie, CS_REG_OFFSET, cs_cfi_sleb(&r) * cie->data_align);
      break;
    case 0x12: /* DW_CFA_def_cfa_sf */
      row->cfa_reg = cs_cfi_uleb(&r);
      row->cfa_offset = cs_cfi_sleb(&r) * cie->data_align;
      row->cfa_other = false;
      break;
    case 0x13: row->cfa_offset = cs_cfi_sleb(&r) * cie->data_align; break;
    case 0x14:   /* DW_CFA_val_offset */
    case 0x15: { /* DW_CFA_val_offset_sf */
      reg = cs_cfi_uleb(&r);
      if (op == 0x14) (void)cs_cfi_uleb(&r);
      else (void)cs_cfi_sleb(&r);
      cs_cfi_set(row, reg, cie, CS_REG_OTHER, 0);
      if (reg == CS_DW_RSP) row->other_bad = true;
      break;
    }
    case 0x2e: (void)cs_cfi_uleb(&r); break; /* DW_CFA_GNU_args_size: no register moves */
    case 0x2f: /* DW_CFA_GNU_negative_offset_extended */
      reg = cs_cfi_uleb(&r);
      cs_cfi_set(row, reg, cie, CS_REG_OFFSET, -(int64_t)cs_cfi_uleb(&r) * cie->data_align);
      break;
    default: return false; /* DW_CFA_set_loc and anything newer */
    }
  }
  return !r.bad;
}

/* Parses the CIE at `at` (its length field). */
static bool cs_cfi_parse_cie(const uint8_t *at, cs_cfi_cie_t *cie) {
  uint32_t len32;
  memcpy(&len32, at, 4);
  if (len32 == 0 || len32 == 0xffffffffu) return false; /* 64-bit DWARF: never in .eh_frame here */
  cs_cfi_reader_t r = {.p = at + 4, .end = at + 4 + len32, .bad = false};
  if (cs_cfi_fixed(&r, 4) != 0) return false; /* a CIE's id is 0 in .eh_frame */
  const uint64_t version = cs_cfi_fixed(&r, 1);
  if (version != 1 && version != 3) return false;
  const char *aug = (const char *)r.p;
  const size_t aug_len = strnlen(aug, CS_CFI_MAX_AUG);
  if (aug_len == CS_CFI_MAX_AUG || aug + aug_len >= (const char *)r.end) return false;
  r.p += aug_len + 1;
  cie->code_align = cs_cfi_uleb(&r);
  cie->data_align = cs_cfi_sleb(&r);
  cie->ra_column = version == 1 ? cs_cfi_fixed(&r, 1) : cs_cfi_uleb(&r);
  cie->fde_enc = CS_PE_ABSPTR;
  cie->signal_frame = false;
  cie->has_z = aug[0] == 'z';
  if (cie->has_z) {
    const uint64_t data_len = cs_cfi_uleb(&r);
    if (data_len > (uint64_t)(r.end - r.p)) return false;
    cs_cfi_reader_t d = {.p = r.p, .end = r.p + data_len, .bad = false};
    for (size_t i = 1; i < aug_len; i++) {
      switch (aug[i]) {
      case 'R': cie->fde_enc = (uint8_t)cs_cfi_fixed(&d, 1); break;
      case 'L': (void)cs_cfi_fixed(&d, 1); break;
      case 'P': {
        const uint8_t enc = (uint8_t)cs_cfi_fixed(&d, 1);
        /* skip the personality pointer without following it (indirect ones point into .got) */
        (void)cs_cfi_pointer(&d, (uint8_t)(enc & ~CS_PE_INDIRECT), 0);
        break;
      }
      case 'S': cie->signal_frame = true; break;
      default: return false; /* unknown augmentations change the FDE's layout */
      }
    }
    if (d.bad) return false;
    r.p += data_len;
  } else if (aug[0] != '\0') {
    return false;
  }
  if (r.bad) return false;
  cie->program = r.p;
  cie->program_end = r.end;
  return true;
}

/* The FDE that covers `pc`, through .eh_frame_hdr's binary search table; NULL if none. */
static const uint8_t *cs_cfi_find_fde(const uint8_t *hdr, uintptr_t pc) {
  if (hdr[0] != 1) return NULL;
  const uint8_t frame_ptr_enc = hdr[1], count_enc = hdr[2], table_enc = hdr[3];
  /* the table's entries must be fixed-size: glibc's and binutils' linkers write datarel sdata4 */
  if (table_enc != (CS_PE_DATAREL | CS_PE_SDATA4) || count_enc == CS_PE_OMIT) return NULL;
  cs_cfi_reader_t r = {.p = hdr + 4, .end = hdr + 64, .bad = false};
  (void)cs_cfi_pointer(&r, frame_ptr_enc, (uintptr_t)hdr);
  const uintptr_t count = cs_cfi_pointer(&r, count_enc, (uintptr_t)hdr);
  if (r.bad || count == 0) return NULL;
  const uint8_t *table = r.p;
  size_t lo = 0, hi = (size_t)count; /* the last entry whose start <= pc is in [lo, hi) */
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    int32_t start;
    memcpy(&start, table + mid * 8, 4);
    if ((uintptr_t)hdr + (uintptr_t)(intptr_t)start <= pc) lo = mid;
    else hi = mid;
  }
  int32_t start, fde;
  memcpy(&start, table + lo * 8, 4);
  memcpy(&fde, table + lo * 8 + 4, 4);
  if ((uintptr_t)hdr + (uintptr_t)(intptr_t)start > pc) return NULL;
  return (const uint8_t *)((uintptr_t)hdr + (uintptr_t)(intptr_t)fde);
}

/* x86-64 Linux's signal return trampoline: mov $15, %rax; syscall. A return address there is a
 * signal frame, whose caller's state is a ucontext, not a rule: libunwind knows it by these
 * bytes. */
static bool cs_cfi_is_sigreturn(uintptr_t ra, uintptr_t map_end) {
  static const uint8_t code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  if (ra >= map_end || map_end - ra < sizeof code) return false;
  return memcmp((const void *)ra, code, sizeof code) == 0;
}

cs_frame_rule_t cs_frame_rule_compile(uintptr_t ra) {
  const cs_frame_rule_t unknown = {.kind = CS_FRAME_RULE_UNKNOWN};
  if (ra == 0) return unknown;
  const uintptr_t pc = ra - 1; /* the call instruction: ra may already be the next function */
  struct dl_find_object obj;
  if (_dl_find_object((void *)pc, &obj) != 0 || !obj.dlfo_eh_frame) return unknown;
  if (cs_cfi_is_sigreturn(ra, (uintptr_t)obj.dlfo_map_end)) return unknown;
  const uint8_t *fde = cs_cfi_find_fde(obj.dlfo_eh_frame, pc);
  if (!fde) return unknown;

  uint32_t len32;
  memcpy(&len32, fde, 4);
  if (len32 == 0 || len32 == 0xffffffffu) return unknown;
  int32_t cie_back;
  memcpy(&cie_back, fde + 4, 4);
  if (cie_back == 0) return unknown; /* a CIE, not an FDE */
  cs_cfi_cie_t cie;
  if (!cs_cfi_parse_cie(fde + 4 - cie_back, &cie) || cie.signal_frame) return unknown;

  cs_cfi_reader_t r = {.p = fde + 8, .end = fde + 4 + len32, .bad = false};
  const uintptr_t begin = cs_cfi_pointer(&r, cie.fde_enc, 0);
  const uintptr_t range = cs_cfi_pointer(&r, cie.fde_enc & CS_PE_FORMAT, 0);
  if (r.bad || pc < begin || pc - begin >= range) return unknown;
  if (cie.has_z) { /* the FDE's augmentation data (an LSDA pointer), its length first */
    const uint64_t data_len = cs_cfi_uleb(&r);
    if (data_len > (uint64_t)(r.end - r.p)) return unknown;
    r.p += data_len;
  }
  if (r.bad) return unknown;

  cs_cfi_row_t row = {.cfa_reg = CS_DW_RSP, .cfa_offset = 0, .cfa_other = true};
  row.rbp.how = CS_REG_SAME;
  row.ra.how = CS_REG_UNDEFINED;
  if (!cs_cfi_run(cie.program, cie.program_end, &cie, begin, UINTPTR_MAX, &row, NULL)) return unknown;
  const cs_cfi_row_t initial = row;
  if (!cs_cfi_run(r.p, r.end, &cie, begin, pc, &row, &initial)) return unknown;

  if (row.ra.how == CS_REG_UNDEFINED) return (cs_frame_rule_t){.kind = CS_FRAME_RULE_LAST};
  if (row.cfa_other || row.other_bad || row.ra.how != CS_REG_OFFSET) return unknown;
  if (row.cfa_reg != CS_DW_RSP && row.cfa_reg != CS_DW_RBP) return unknown;
  if (row.cfa_offset <= 0 || row.cfa_offset > INT32_MAX) return unknown;
  if (row.ra.offset % 8 != 0 || row.ra.offset / 8 < INT8_MIN || row.ra.offset / 8 >= 0) return unknown;
  int8_t rbp_slot = 0;
  if (row.rbp.how == CS_REG_OFFSET) {
    if (row.rbp.offset % 8 != 0 || row.rbp.offset / 8 < INT8_MIN || row.rbp.offset / 8 >= 0)
      return unknown;
    rbp_slot = (int8_t)(row.rbp.offset / 8);
  } else if (row.rbp.how != CS_REG_SAME) {
    return unknown;
  }
  return (cs_frame_rule_t){
      .cfa_offset = (int32_t)row.cfa_offset,
      .kind = CS_FRAME_RULE_STEP,
      .cfa_reg = row.cfa_reg == CS_DW_RBP ? CS_FRAME_RULE_CFA_RBP : CS_FRAME_RULE_CFA_RSP,
      .ra_slot = (int8_t)(row.ra.offset / 8),
      .rbp_slot = rbp_slot,
  };
}

#else /* !CS_CFI_SUPPORTED */

cs_frame_rule_t cs_frame_rule_compile(uintptr_t ra) {
  (void)ra;
  return (cs_frame_rule_t){.kind = CS_FRAME_RULE_UNKNOWN};
}

#endif

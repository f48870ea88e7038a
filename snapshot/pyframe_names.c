/* SPDX-License-Identifier: Apache-2.0 */
/* Naming Python frames (contract in snapshot/pyframe_names.h): from cudasnap's own copy of each code
 * object's name, file and location table (record/pyframes.h). */
#include "snapshot/pyframe_names.h"

#include <stdio.h>
#include <string.h>

#include "record/pyframes.h"

/* Objects/locations.md: varints are 6-bit groups, low first, 0x40 = more follow. */
static uint32_t cs_pyn_varint(const unsigned char *t, size_t len, size_t *i) {
  uint32_t v = 0;
  for (unsigned shift = 0; *i < len && shift < 32; shift += 6) {
    unsigned char b = t[(*i)++];
    v |= (uint32_t)(b & 0x3F) << shift;
    if (!(b & 0x40)) break;
  }
  return v;
}

static int32_t cs_pyn_svarint(const unsigned char *t, size_t len, size_t *i) {
  uint32_t v = cs_pyn_varint(t, len, i);
  return (v & 1) ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

int cs_pyframe_line_311(const unsigned char *table, size_t len, int first_line, uint32_t instr) {
  int line = first_line;
  uint32_t addr = 0;
  for (size_t i = 0; i < len;) {
    unsigned char head = table[i++];
    if (!(head & 0x80)) return 0; /* not at an entry's first byte: a table we misread */
    unsigned code = head >> 3 & 15u;
    uint32_t units = (head & 7u) + 1;
    bool none = false;
    if (code == 15) {
      none = true; /* no location */
    } else if (code == 14) { /* long form: line delta, end line delta, column, end column */
      line += cs_pyn_svarint(table, len, &i);
      for (int skip = 0; skip < 3; skip++) (void)cs_pyn_varint(table, len, &i);
    } else if (code == 13) { /* no column: line delta */
      line += cs_pyn_svarint(table, len, &i);
    } else if (code >= 10) { /* one-line form: line delta code - 10, two column bytes */
      line += (int)code - 10;
      i += 2;
    } else { /* short form: same line, one column byte */
      i += 1;
    }
    if (instr < addr + units) return none ? 0 : line;
    addr += units;
  }
  return 0;
}

/* 3.10's co_linetable (Objects/lnotab_notes.txt): (bytes advanced, line delta) pairs, the line
 * delta a signed byte applied before the range, -128 = the range has no line. */
int cs_pyframe_line_310(const unsigned char *table, size_t len, int first_line, uint32_t instr) {
  uint64_t target = (uint64_t)instr * 2, addr = 0;
  int line = first_line;
  for (size_t i = 0; i + 1 < len; i += 2) {
    int delta = (int)(signed char)table[i + 1];
    bool none = delta == -128;
    if (!none) line += delta;
    uint64_t end = addr + table[i];
    if (target >= addr && target < end) return none ? 0 : line;
    addr = end;
  }
  return 0;
}

/* 3.9's co_lnotab: (bytes advanced, line delta) pairs, the line delta applying from the address
 * reached. */
int cs_pyframe_line_39(const unsigned char *table, size_t len, int first_line, uint32_t instr) {
  uint64_t target = (uint64_t)instr * 2, addr = 0;
  int line = first_line;
  for (size_t i = 0; i + 1 < len; i += 2) {
    addr += table[i];
    if (addr > target) break;
    line += (int)(signed char)table[i + 1];
  }
  return line;
}

bool cs_pyframe_name(uintptr_t entry, char *name, size_t name_len, char *file, size_t file_len, int *line) {
  *line = 0;
  uint32_t record, instr;
  cs_py_frame_decode(entry, &record, &instr);
  const cs_py_record_t *r = cs_py_record(record);
  if (r == NULL || name_len == 0 || file_len == 0) {
    snprintf(name, name_len, "(python frame)");
    snprintf(file, file_len, "??");
    return false;
  }
  snprintf(name, name_len, "%.*s", (int)r->name_len, r->data);
  snprintf(file, file_len, "%.*s", (int)r->file_len, r->data + r->name_len);
  const unsigned char *table = (const unsigned char *)r->data + r->name_len + r->file_len;
  if (r->version >= 0x030b) {
    *line = cs_pyframe_line_311(table, r->table_len, r->first_line, instr);
  } else if (r->version == 0x030a) {
    *line = cs_pyframe_line_310(table, r->table_len, r->first_line, instr);
  } else {
    *line = cs_pyframe_line_39(table, r->table_len, r->first_line, instr);
  }
  return true;
}

/* Naming Python frames (contract in snapshot/pyframes.h): from cudasnap's own copy of each code
 * object's name, file and location table (record/pyframes.h). */
#include "snapshot/pyframes.h"

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
  if (r->version >= 0x030b)
    *line = cs_pyframe_line_311((const unsigned char *)r->data + r->name_len + r->file_len, r->table_len,
                                r->first_line, instr);
  return true;
}

#include "memviz/passthrough.h"

#include <stdio.h>

const char *cs_foreign_kind_name(cs_foreign_kind_t kind) {
  static const char *const names[CS_FOREIGN_KINDS] = {
      [CS_FOREIGN_DEVICE] = "device",          [CS_FOREIGN_PITCH] = "pitch",
      [CS_FOREIGN_MANAGED] = "managed",        [CS_FOREIGN_ASYNC] = "async",
      [CS_FOREIGN_ARRAY] = "array",            [CS_FOREIGN_VMM_MAPPING] = "vmm_mapped",
      [CS_FOREIGN_IPC] = "ipc_imported",       [CS_FOREIGN_GRAPH] = "graph",
      [CS_FOREIGN_VMM_HANDLE] = "vmm_physical",
      [CS_FOREIGN_VMM_RESERVE] = "vmm_reserved", [CS_FOREIGN_HOST] = "host_pinned",
      [CS_FOREIGN_HOST_REGISTERED] = "host_registered",
  };
  return (unsigned)kind < CS_FOREIGN_KINDS ? names[kind] : "unknown";
}

bool cs_foreign_kind_counted(cs_foreign_kind_t kind) {
  switch (kind) {
  case CS_FOREIGN_DEVICE: case CS_FOREIGN_PITCH: case CS_FOREIGN_MANAGED: case CS_FOREIGN_ARRAY:
  case CS_FOREIGN_VMM_HANDLE:
    return true;
  default: /* async and graph: counted through their pools' reserved bytes (pooled) */
    return false;
  }
}

bool cs_foreign_kind_pooled(cs_foreign_kind_t kind) {
  return kind == CS_FOREIGN_ASYNC || kind == CS_FOREIGN_GRAPH;
}

void cs_foreign_stat_key(cs_foreign_kind_t kind, int field, char *buf, size_t len) {
  static const char *const fields[CS_FOREIGN_STAT_FIELDS - 1] = {"current", "peak", "allocated", "freed"};
  if (field == CS_FOREIGN_STAT_FIELDS - 1) {
    snprintf(buf, len, "passthrough_ooms.%s", cs_foreign_kind_name(kind));
    return;
  }
  snprintf(buf, len, "passthrough_bytes.%s.%s", cs_foreign_kind_name(kind),
           fields[field >= 0 && field < CS_FOREIGN_STAT_FIELDS - 1 ? field : 0]);
}

int64_t cs_foreign_stat_field(const cs_foreign_stat_t *s, int field) {
  switch (field) {
  case 0: return s->current;
  case 1: return s->peak;
  case 2: return s->allocated;
  case 3: return s->freed;
  default: return s->ooms;
  }
}

bool cs_foreign_kind_in_row(cs_foreign_kind_t kind, bool host_row) {
  bool host_kind = kind == CS_FOREIGN_HOST || kind == CS_FOREIGN_HOST_REGISTERED;
  return kind != CS_FOREIGN_VMM_RESERVE && host_kind == host_row;
}

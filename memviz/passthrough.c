/* SPDX-License-Identifier: Apache-2.0 */
#include "memviz/passthrough.h"

#include <stdio.h>

const char *cs_passthrough_kind_name(cs_passthrough_kind_t kind) {
  static const char *const names[CS_PASSTHROUGH_KINDS] = {
      [CS_PASSTHROUGH_DEVICE] = "device",          [CS_PASSTHROUGH_PITCH] = "pitch",
      [CS_PASSTHROUGH_MANAGED] = "managed",        [CS_PASSTHROUGH_ASYNC] = "async",
      [CS_PASSTHROUGH_ARRAY] = "array",            [CS_PASSTHROUGH_VMM_MAPPING] = "vmm_mapped",
      [CS_PASSTHROUGH_IPC] = "ipc_imported",       [CS_PASSTHROUGH_GRAPH] = "graph",
      [CS_PASSTHROUGH_VMM_HANDLE] = "vmm_physical",
      [CS_PASSTHROUGH_VMM_RESERVE] = "vmm_reserved", [CS_PASSTHROUGH_HOST] = "host_pinned",
      [CS_PASSTHROUGH_HOST_REGISTERED] = "host_registered",
  };
  return (unsigned)kind < CS_PASSTHROUGH_KINDS ? names[kind] : "unknown";
}

bool cs_passthrough_kind_counted(cs_passthrough_kind_t kind) {
  switch (kind) {
  case CS_PASSTHROUGH_DEVICE: case CS_PASSTHROUGH_PITCH: case CS_PASSTHROUGH_MANAGED: case CS_PASSTHROUGH_ARRAY:
  case CS_PASSTHROUGH_VMM_HANDLE:
    return true;
  default: /* async and graph: counted through their pools' reserved bytes (pooled) */
    return false;
  }
}

bool cs_passthrough_kind_pooled(cs_passthrough_kind_t kind) {
  return kind == CS_PASSTHROUGH_ASYNC || kind == CS_PASSTHROUGH_GRAPH;
}

void cs_passthrough_stat_key(cs_passthrough_kind_t kind, int field, char *buf, size_t len) {
  static const char *const fields[CS_PASSTHROUGH_STAT_FIELDS - 1] = {"current", "peak", "allocated", "freed"};
  if (field == CS_PASSTHROUGH_STAT_FIELDS - 1) {
    snprintf(buf, len, "passthrough_ooms.%s", cs_passthrough_kind_name(kind));
    return;
  }
  snprintf(buf, len, "passthrough_bytes.%s.%s", cs_passthrough_kind_name(kind),
           fields[field >= 0 && field < CS_PASSTHROUGH_STAT_FIELDS - 1 ? field : 0]);
}

int64_t cs_passthrough_stat_field(const cs_passthrough_stat_t *s, int field) {
  switch (field) {
  case 0: return s->current;
  case 1: return s->peak;
  case 2: return s->allocated;
  case 3: return s->freed;
  default: return s->ooms;
  }
}

bool cs_passthrough_kind_in_row(cs_passthrough_kind_t kind, bool host_row) {
  bool host_kind = kind == CS_PASSTHROUGH_HOST || kind == CS_PASSTHROUGH_HOST_REGISTERED;
  return kind != CS_PASSTHROUGH_VMM_RESERVE && host_kind == host_row;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot file names: CUDASNAP_OUTPUT expanded for one dump, and the format a name asks for. */
#include "process/dump_name.h"

#include <string.h>
#include <unistd.h>

#include "memviz/output.h"

cs_emit_format_t cs_dump_name_format(const cs_options_t *opts, const char *path) {
  if (opts->format == CS_FORMAT_JSON) return CS_EMIT_JSON;
  if (opts->format == CS_FORMAT_PICKLE) return CS_EMIT_PICKLE;
  const char *dot = strrchr(path, '.');
  bool pickle = dot && (strcmp(dot, ".pickle") == 0 || strcmp(dot, ".pkl") == 0);
  return pickle ? CS_EMIT_PICKLE : CS_EMIT_JSON;
}

int cs_dump_name_expand(const char *pattern, const cs_process_info_t *proc, const char *trigger, int number,
                        char *buf, size_t len) {
  cs_output_fields_t fields = {.executable = proc->exe, .pid = (long)getpid(), .host = proc->host,
                               .rank = cs_output_rank(), .dump_number = number, .trigger = trigger};
  return cs_output_expand(pattern, &fields, buf, len);
}

#include "memviz/site_rule.h"

#include <string.h>

static bool cs_starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

bool cs_frame_is_cuda(const cs_frame_t *f) {
  const char *file = strrchr(f->filename, '/');
  file = file ? file + 1 : f->filename;
  if (cs_starts_with(file, "libcuda") || cs_starts_with(file, "libcudasnap")) return true;
  const char *n = f->name;
  /* the runtime's entry points and internals, also when linked statically into the program */
  if (cs_starts_with(n, "cuda") || cs_starts_with(n, "__cudart") || cs_starts_with(n, "cudart::"))
    return true;
  return n[0] == 'c' && n[1] == 'u' && n[2] >= 'A' && n[2] <= 'Z'; /* driver API: cuMemAlloc_v2 */
}

#include "cli/reconcile.h"

#include <stdio.h>

#include "cli/snapview.h"
#include "common/cs_format.h"

static const cJSON *cs_reconcile_find(const cJSON *root, int device) {
  const cJSON *cudasnap = cJSON_GetObjectItemCaseSensitive(root, "cudasnap");
  const cJSON *m;
  cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(cudasnap, "memory")) {
    int64_t d = -1;
    if (cs_view_int(m, "device", &d) && d == device) return m;
  }
  return NULL;
}

/* One row: the label padded to a column, then the bytes as "N B (x MiB)". */
static void cs_reconcile_row(FILE *out, const char *label, int64_t bytes, const char *note) {
  char text[64];
  if (bytes < 0) {
    char positive[64];
    cs_format_bytes((uint64_t)-bytes, positive, sizeof positive);
    snprintf(text, sizeof text, "-%s", positive);
  } else {
    cs_format_bytes((uint64_t)bytes, text, sizeof text);
  }
  fprintf(out, "  %-40s %s%s\n", label, text, note ? note : "");
}

static int64_t cs_reconcile_get(const cJSON *obj, const char *key) {
  int64_t v = 0;
  return cs_view_int(obj, key, &v) ? v : 0;
}

/* A pool row: PREFIX_reserved, "; used" PREFIX_used, or that the driver was not asked or did not
 * answer (known_key false). Snapshots older than the key have no row. */
static void cs_reconcile_pool_row(FILE *out, const cJSON *m, const char *label, const char *known_key,
                                  const char *prefix) {
  char key[32];
  const cJSON *known = cJSON_GetObjectItemCaseSensitive(m, known_key);
  if (!cJSON_IsBool(known)) return;
  if (!cJSON_IsTrue(known)) {
    fprintf(out, "  %-40s not known (not asked, or the driver has none)\n", label);
    return;
  }
  char note[128], bytes[64];
  snprintf(key, sizeof key, "%s_used", prefix);
  cs_format_bytes((uint64_t)cs_reconcile_get(m, key), bytes, sizeof bytes);
  snprintf(note, sizeof note, "; used %s", bytes);
  snprintf(key, sizeof key, "%s_reserved", prefix);
  cs_reconcile_row(out, label, cs_reconcile_get(m, key), note);
}

void cs_reconcile_write(FILE *out, const cJSON *root, int device) {
  const cJSON *m = cs_reconcile_find(root, device);
  if (!m) return;
  fprintf(out, "device memory, reconciled with the driver:\n");
  bool known = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "driver_known"));
  if (known) {
    cs_reconcile_row(out, "driver total", cs_reconcile_get(m, "driver_total"), NULL);
    cs_reconcile_row(out, "driver used (total - free)", cs_reconcile_get(m, "driver_used"), NULL);
  } else {
    fprintf(out, "  driver used: not asked (an exit snapshot, or no usable context at the snapshot)\n");
  }
  cs_reconcile_row(out, "cudasnap cache reserved", cs_reconcile_get(m, "cache_reserved"), NULL);
  const cJSON *pass = cJSON_GetObjectItemCaseSensitive(m, "passthrough");
  static const char *const counted[] = {"device", "pitch", "managed", "array", "vmm_physical"};
  for (size_t i = 0; i < sizeof counted / sizeof *counted; i++) {
    char label[64];
    snprintf(label, sizeof label, "passed through: %s", counted[i]);
    cs_reconcile_row(out, label, cs_reconcile_get(pass, counted[i]), NULL);
  }
  cs_reconcile_pool_row(out, m, "stream-ordered pools reserved", "pools_known", "pool");
  cs_reconcile_pool_row(out, m, "graph memory pool reserved", "graph_known", "graph");
  if (known)
    cs_reconcile_row(out, "remainder (context, modules, others)", cs_reconcile_get(m, "remainder"), NULL);
  /* drawn, but not more bytes of this process's: inside the lines above, or another process's */
  cs_reconcile_row(out, "drawn: VMM mappings", cs_reconcile_get(pass, "vmm_mapped"), " (of vmm_physical)");
  cs_reconcile_row(out, "drawn: stream-ordered allocations", cs_reconcile_get(pass, "async"), " (of the pools)");
  cs_reconcile_row(out, "drawn: graph allocations", cs_reconcile_get(pass, "graph"), " (of the graph pool)");
  int64_t ipc = cs_reconcile_get(pass, "ipc_imported");
  if (ipc) cs_reconcile_row(out, "drawn: IPC imports", ipc, " (another process's)");
}

void cs_reconcile_print_host(const cJSON *root) {
  const cJSON *host = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "cudasnap"), "host");
  int64_t pinned = cs_reconcile_get(host, "host_pinned"), registered = cs_reconcile_get(host, "host_registered");
  if (!pinned && !registered) return;
  char a[64], b[64];
  cs_format_bytes((uint64_t)pinned, a, sizeof a);
  cs_format_bytes((uint64_t)registered, b, sizeof b);
  printf("\nhost memory (not device memory): pinned %s, registered %s\n", a, b);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "analysis/reconcile.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/snapview.h"
#include "common/cs_format.h"

/* Whatever container cudasnap.memory is: a dict's members are walked as its items, as they always
 * were. CS_VAL_ABSENT when the device has no figures. */
static cs_val_t cs_reconcile_find(const cs_doc_t *doc, int device) {
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  cs_val_t memory = cs_doc_get(doc, cudasnap, "memory");
  size_t n = cs_doc_len(doc, memory);
  const cs_val_t *items = cs_doc_items(doc, memory);
  for (size_t i = 0; i < n; i++) {
    int64_t d = -1;
    if (cs_view_int_key(doc, items[i], CS_KEY_DEVICE, &d) && d == device) return items[i];
  }
  return CS_VAL_ABSENT;
}

/* One row: the label padded to a column, then the bytes as "N B (x MiB)". */
static void cs_reconcile_row(FILE *out, const char *label, int64_t bytes, const char *note) {
  char text[64];
  if (bytes < 0) {
    char positive[sizeof text - 1]; /* room for the sign */
    cs_format_bytes((uint64_t)-bytes, positive, sizeof positive);
    snprintf(text, sizeof text, "-%s", positive);
  } else {
    cs_format_bytes((uint64_t)bytes, text, sizeof text);
  }
  fprintf(out, "  %-40s %s%s\n", label, text, note ? note : "");
}

static int64_t cs_reconcile_get(const cs_doc_t *doc, cs_val_t obj, const char *key) {
  int64_t v = 0;
  return cs_view_int(doc, obj, key, &v) ? v : 0;
}

/* A pool row: PREFIX_reserved, "; used" PREFIX_used, or that the driver was not asked or did not
 * answer (known_key false). Snapshots older than the key have no row. */
static void cs_reconcile_pool_row(FILE *out, const cs_doc_t *doc, cs_val_t m, const char *label,
                                  const char *known_key, const char *prefix) {
  char key[32];
  cs_val_t known = cs_doc_get(doc, m, known_key);
  if (!cs_val_is_bool(known)) return;
  if (!cs_val_is_true(known)) {
    fprintf(out, "  %-40s not known (not asked, or the driver has none)\n", label);
    return;
  }
  char note[128], bytes[64];
  snprintf(key, sizeof key, "%s_used", prefix);
  cs_format_bytes((uint64_t)cs_reconcile_get(doc, m, key), bytes, sizeof bytes);
  snprintf(note, sizeof note, "; used %s", bytes);
  snprintf(key, sizeof key, "%s_reserved", prefix);
  cs_reconcile_row(out, label, cs_reconcile_get(doc, m, key), note);
}

/* The remainder is the driver's used bytes less every line above. With managed memory counted at
 * its whole size while the driver counts only its resident pages, the true remainder lies between
 * that figure and that figure plus the managed bytes (and is never below 0): a range, not a
 * negative number presented as fact. */
static void cs_reconcile_remainder(FILE *out, int64_t remainder, int64_t managed) {
  const char *label = "remainder (context, modules, others)";
  if (managed <= 0) {
    cs_reconcile_row(out, label, remainder, NULL);
    return;
  }
  char low[64], high[64];
  cs_format_bytes(remainder > 0 ? (uint64_t)remainder : 0, low, sizeof low);
  cs_format_bytes(remainder + managed > 0 ? (uint64_t)(remainder + managed) : 0, high, sizeof high);
  fprintf(out, "  %-40s between %s and %s (as much of the managed memory as is not resident)\n", label, low,
          high);
}

/* "2026-11-25 05:03:01.123 UTC (0.250 s before the snapshot)": the snapshot's cudasnap.time_us,
 * when it has one. */
static void cs_reconcile_time(const cs_doc_t *doc, int64_t time_us, char *buf, size_t len) {
  if (!cs_format_utc(time_us, buf, len)) return;
  int64_t snapshot_us = 0;
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  size_t used = strlen(buf);
  if (cs_view_int(doc, cudasnap, "time_us", &snapshot_us) && snapshot_us >= time_us)
    snprintf(buf + used, len - used, " (%.3f s before the snapshot)", (double)(snapshot_us - time_us) / 1e6);
}

/* An answer kept from before the snapshot (driver_last, driver_at_peak), reconciled with what
 * cudasnap saw when it was taken: its rows indented under the line that says which answer it is
 * (depth: 1 under the table's rows, 2 under a line of the peak's). */
static void cs_reconcile_kept(FILE *out, const cs_doc_t *doc, cs_val_t a, int depth) {
  static const char *const labels[] = {"driver used (total - free)", "cache reserved + passed through",
                                       "stream-ordered, graph pools reserved",
                                       "remainder (context, modules, others)"};
  int64_t pools = cs_reconcile_get(doc, a, "pool_reserved") + cs_reconcile_get(doc, a, "graph_reserved");
  const int64_t values[] = {cs_reconcile_get(doc, a, "driver_used"), cs_reconcile_get(doc, a, "accounted") - pools,
                            pools, cs_reconcile_get(doc, a, "remainder")};
  for (size_t i = 0; i < sizeof labels / sizeof *labels; i++) {
    char label[64];
    snprintf(label, sizeof label, "%*s%s", 2 * depth, "", labels[i]);
    cs_reconcile_row(out, label, values[i], i == 1 ? " (the kinds the driver counts)" : NULL);
  }
}

/* What the driver held at the peak of the memory cudasnap saw (driver_at_peak). */
static void cs_reconcile_peak(FILE *out, const cs_doc_t *doc, cs_val_t m) {
  cs_val_t p = cs_doc_get(doc, m, "driver_at_peak");
  if (!cs_val_is_dict(p)) return;
  char when[96], bytes[64];
  cs_format_bytes((uint64_t)cs_reconcile_get(doc, p, "seen_bytes"), bytes, sizeof bytes);
  cs_reconcile_time(doc, cs_reconcile_get(doc, p, "time_us"), when, sizeof when);
  fprintf(out, "  at the peak of the cache + memory passed through, %s, at %s:\n", bytes, when);
  if (!cs_val_is_true(cs_doc_get(doc, p, "answered"))) {
    fprintf(out, "    no answer from the driver on the way up\n");
    return;
  }
  cs_reconcile_time(doc, cs_reconcile_get(doc, p, "answer_time_us"), when, sizeof when);
  if (cs_val_is_true(cs_doc_get(doc, p, "at_peak"))) {
    fprintf(out, "    the driver's answer at the peak, at %s:\n", when);
  } else {
    /* An answer from lower down does not explain the peak: say which moment it is of, and how
     * far below the peak that was, before its figures. */
    int64_t seen = cs_reconcile_get(doc, p, "seen_bytes"), then = cs_reconcile_get(doc, p, "answer_seen_bytes");
    char below[64];
    cs_format_bytes((uint64_t)then, bytes, sizeof bytes);
    cs_format_size(seen > then ? (uint64_t)(seen - then) : 0, below, sizeof below);
    fprintf(out, "    no answer at the peak itself (the driver is asked at most once per 100 ms)\n");
    fprintf(out,
            "    the driver's last answer before the peak, at %s, when the cache + memory passed through "
            "held %s, %s below the peak (figures of that moment, not of the peak):\n",
            when, bytes, below);
  }
  cs_reconcile_kept(out, doc, p, 2);
}

void cs_reconcile_write(FILE *out, const cs_doc_t *doc, int device) {
  cs_val_t m = cs_reconcile_find(doc, device);
  if (cs_val_absent(m)) return;
  fprintf(out, "device memory, reconciled with the driver:\n");
  bool known = cs_val_is_true(cs_doc_get(doc, m, "driver_known"));
  if (known) {
    cs_reconcile_row(out, "driver total", cs_reconcile_get(doc, m, "driver_total"), NULL);
    cs_reconcile_row(out, "driver used (total - free)", cs_reconcile_get(doc, m, "driver_used"), NULL);
  } else {
    const char *why = cs_view_str(doc, m, "driver_not_asked");
    cs_val_t last = cs_doc_get(doc, m, "driver_last");
    if (why != NULL && cs_val_is_dict(last)) {
      char when[96];
      cs_reconcile_time(doc, cs_reconcile_get(doc, last, "time_us"), when, sizeof when);
      fprintf(out, "  driver used: not asked: %s (cudasnap makes no CUDA call then); last answer at %s:\n", why,
              when);
      cs_reconcile_kept(out, doc, last, 1);
    } else if (why != NULL)
      fprintf(out, "  driver used: not asked: %s (cudasnap makes no CUDA call then)\n", why);
    else
      fprintf(out, "  driver used: not asked (no usable context at the snapshot, or a snapshot from "
                   "before exit snapshots asked)\n");
  }
  cs_reconcile_row(out, "cudasnap cache reserved", cs_reconcile_get(doc, m, "cache_reserved"), NULL);
  cs_val_t pass = cs_doc_get(doc, m, "passthrough");
  static const char *const counted[] = {"device", "pitch", "managed", "array", "vmm_physical"};
  int64_t managed = cs_reconcile_get(doc, pass, "managed");
  for (size_t i = 0; i < sizeof counted / sizeof *counted; i++) {
    int64_t bytes = 0;
    /* a snapshot recovered from a recording has no figure for what is not drawn (vmm_physical) */
    if (!cs_view_int(doc, pass, counted[i], &bytes)) continue;
    char label[64];
    snprintf(label, sizeof label, "passed through: %s", counted[i]);
    /* The driver counts a managed allocation's resident pages only, this row its whole size. */
    const char *note = strcmp(counted[i], "managed") == 0 && managed > 0 ? " (at most: pages not resident "
                                                                           "on the device are not in use)"
                                                                         : NULL;
    cs_reconcile_row(out, label, bytes, note);
  }
  cs_reconcile_pool_row(out, doc, m, "stream-ordered pools reserved", "pools_known", "pool");
  cs_reconcile_pool_row(out, doc, m, "graph memory pool reserved", "graph_known", "graph");
  if (known) cs_reconcile_remainder(out, cs_reconcile_get(doc, m, "remainder"), managed);
  /* drawn, but not more bytes of this process's: inside the lines above, or another process's */
  cs_reconcile_row(out, "drawn: VMM mappings", cs_reconcile_get(doc, pass, "vmm_mapped"), " (of vmm_physical)");
  cs_reconcile_row(out, "drawn: stream-ordered allocations", cs_reconcile_get(doc, pass, "async"), " (of the pools)");
  cs_reconcile_row(out, "drawn: graph allocations", cs_reconcile_get(doc, pass, "graph"), " (of the graph pool)");
  int64_t ipc = cs_reconcile_get(doc, pass, "ipc_imported");
  if (ipc) cs_reconcile_row(out, "drawn: IPC imports", ipc, " (another process's)");
  cs_reconcile_peak(out, doc, m);
}

void cs_reconcile_print_host(const cs_doc_t *doc) {
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  cs_val_t host = cs_doc_get(doc, cudasnap, "host_memory");
  /* Snapshots before 0.1.0's fix wrote it under "host", where it hid the machine's name. */
  if (!cs_val_is_dict(host)) host = cs_doc_get(doc, cudasnap, "host");
  int64_t pinned = cs_reconcile_get(doc, host, "host_pinned");
  int64_t registered = cs_reconcile_get(doc, host, "host_registered");
  if (!pinned && !registered) return;
  char a[64], b[64];
  cs_format_bytes((uint64_t)pinned, a, sizeof a);
  cs_format_bytes((uint64_t)registered, b, sizeof b);
  printf("\nhost memory (not device memory): pinned %s, registered %s\n", a, b);
}

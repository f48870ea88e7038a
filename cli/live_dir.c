/* SPDX-License-Identifier: Apache-2.0 */
/* The tool's live directory and the listing's notes (contract in cli/live_dir.h). */
#include "cli/live_dir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_compiler.h"
#include "common/cs_labels.h"
#include "common/cs_options.h"

const char *cs_live_dir(void) {
  static char dir[CS_OPTION_LIVE_DIR_MAX];
  if (dir[0]) return dir;
  cs_options_t opts;
  cs_options_init(&opts);
  const char *value = getenv("CUDASNAP_LIVE_DIR");
  size_t len = value ? strlen(value) : 0;
  char *entry = len ? malloc(len + sizeof "CUDASNAP_LIVE_DIR=") : NULL;
  if (entry) {
    /* the library's parser: the same rule, the same one-line warning, the default kept */
    snprintf(entry, len + sizeof "CUDASNAP_LIVE_DIR=", "CUDASNAP_LIVE_DIR=%s", value);
    const char *envp[] = {entry, NULL};
    cs_options_parse(envp, &opts);
    free(entry);
  }
  snprintf(dir, sizeof dir, "%s", opts.live_dir);
  return dir;
}

static bool cs_live_label_ok(const cs_live_label_t *l) {
  return cs_label_key_ok(l->key, strlen(l->key)) && cs_label_value_ok(l->value, strlen(l->value));
}

/* (an earlier label with the key that is itself a repeat has a valid one with it before it) */
bool cs_live_label_shown(const cs_live_header_t *h, uint32_t i) {
  if (i >= h->label_count || i >= CS_LIVE_MAX_LABELS || !cs_live_label_ok(&h->labels[i])) return false;
  for (uint32_t k = 0; k < i; k++)
    if (strcmp(h->labels[k].key, h->labels[i].key) == 0 && cs_live_label_ok(&h->labels[k])) return false;
  return true;
}

/* Appends "passed over: " or "; ", then the text, cut to the buffer. */
CS_PRINTF(4, 5) static void cs_live_note(char *buf, size_t len, size_t *used,
                                         const char *fmt, ...) {
  int n = snprintf(buf + *used, len - *used, "%s", *used ? "; " : "passed over: ");
  if (n > 0) *used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
  va_list ap;
  va_start(ap, fmt);
  n = vsnprintf(buf + *used, len - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
}

void cs_live_passed_over(const cs_live_list_t *list, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  if (list->busy)
    cs_live_note(buf, len, &used, "%zu record%s whose sequence word stayed odd (being written, or not a publisher's)",
                 list->busy, list->busy == 1 ? "" : "s");
  if (list->other_version)
    cs_live_note(buf, len, &used, "%zu record%s of another cudasnap version", list->other_version,
                 list->other_version == 1 ? "" : "s");
  if (list->users_capped)
    cs_live_note(buf, len, &used, "records of %zu user%s beyond the caps (%d records, %d names per user)",
                 list->users_capped, list->users_capped == 1 ? "" : "s", CS_LIVE_MAX_PER_USER,
                 CS_LIVE_SCAN_PER_USER);
  if (list->out_of_time) cs_live_note(buf, len, &used, "whatever was left after %d ms", CS_LIVE_LIST_MS);
}

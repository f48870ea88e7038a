/* SPDX-License-Identifier: Apache-2.0 */
/* CUDASNAP_LABELS' rules (contract in common/cs_labels.h). */
#include "common/cs_labels.h"

#include <string.h>

#include "common/cs_utf8.h"

/* Labels `cudasnap metrics` writes itself (cli/metrics_text.c); "pod" and "namespace" are not
 * among them: POD_NAME and POD_NAMESPACE give them, and CUDASNAP_LABELS may instead. */
static const char *const cs_label_reserved[] = {"pid", "rank",   "local_rank", "job",        "host",
                                                "device", "site", "exe",        "interval_ms"};

bool cs_label_key_ok(const char *key, size_t len) {
  if (len == 0 || len >= CS_LABEL_KEY_LEN) return false;
  if (len >= 2 && key[0] == '_' && key[1] == '_') return false;
  for (size_t i = 0; i < len; i++) {
    char c = key[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  for (size_t i = 0; i < sizeof cs_label_reserved / sizeof cs_label_reserved[0]; i++)
    if (strlen(cs_label_reserved[i]) == len && memcmp(cs_label_reserved[i], key, len) == 0) return false;
  return true;
}

bool cs_label_value_ok(const char *value, size_t len) {
  if (len == 0 || len >= CS_LABEL_VALUE_LEN) return false;
  const unsigned char *s = (const unsigned char *)value;
  for (size_t i = 0; i < len;) {
    if (s[i] < 0x80) {
      if (s[i] < 0x20 || s[i] == 0x7F || s[i] == ',') return false;
      i++;
      continue;
    }
    size_t n;
    if (!cs_utf8_seq(s + i, len - i, &n)) return false;
    /* C1 controls are U+0080..U+009F: C2 80..C2 9F */
    if (s[i] == 0xC2 && s[i + 1] < 0xA0) return false;
    i += n;
  }
  return true;
}

int cs_labels_parse(const char *text, cs_label_t out[CS_LABELS_MAX]) {
  int count = 0;
  if (text[0] == '\0') return 0;
  for (const char *item = text;;) {
    size_t len = strcspn(item, ",");
    const char *eq = memchr(item, '=', len);
    if (eq == NULL || count == CS_LABELS_MAX) return -1;
    size_t klen = (size_t)(eq - item), vlen = len - klen - 1;
    if (!cs_label_key_ok(item, klen) || !cs_label_value_ok(eq + 1, vlen)) return -1;
    for (int i = 0; i < count; i++)
      if (strlen(out[i].key) == klen && memcmp(out[i].key, item, klen) == 0) return -1;
    memcpy(out[count].key, item, klen);
    out[count].key[klen] = '\0';
    memcpy(out[count].value, eq + 1, vlen);
    out[count].value[vlen] = '\0';
    count++;
    if (item[len] == '\0') break;
    item += len + 1;
  }
  return count;
}

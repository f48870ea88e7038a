/* SPDX-License-Identifier: Apache-2.0 */
/* CUDASNAP_LABELS: "key=value,..." labels a process adds to its live record, which `cudasnap
 * metrics` puts on the process's samples (docs/live.md). The same rules judge the variable in the
 * library and every label a record brings to the tool (a record is written by its owner, who may
 * write anything), so that a label the exposition carries is always a valid Prometheus label. */
#ifndef CS_LABELS_H
#define CS_LABELS_H

#include <stdbool.h>
#include <stddef.h>

enum {
  CS_LABELS_MAX = 8,        /* labels per process, POD_NAME's and POD_NAMESPACE's included */
  CS_LABEL_KEY_LEN = 32,    /* a key's bytes, its terminator included */
  CS_LABEL_VALUE_LEN = 256, /* a value's bytes, its terminator included (a pod's name: 253) */
};

typedef struct cs_label_s {
  char key[CS_LABEL_KEY_LEN];
  char value[CS_LABEL_VALUE_LEN];
} cs_label_t;

/* A key Prometheus takes ([a-zA-Z_][a-zA-Z0-9_]*, not starting "__", which Prometheus keeps for
 * itself), of at most CS_LABEL_KEY_LEN - 1 bytes, and none of the exporter's own labels (pid,
 * rank, local_rank, job, host, device, site, exe, interval_ms), which would repeat one. */
bool cs_label_key_ok(const char *key, size_t len);

/* A value of 1 to CS_LABEL_VALUE_LEN - 1 bytes of well-formed UTF-8 without a comma (the
 * separator) or a control character (C0, DEL, C1). */
bool cs_label_value_ok(const char *value, size_t len);

/* Parse "key=value,..." into out[0..CS_LABELS_MAX) (the keys different). Returns the number of
 * labels (0 for ""), or -1 when any item breaks a rule (out then holds nothing to use). */
int cs_labels_parse(const char *text, cs_label_t out[CS_LABELS_MAX]);

#endif

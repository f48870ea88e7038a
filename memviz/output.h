/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot files: names from the CUDASNAP_OUTPUT pattern, and writing that never leaves a partial
 * file nor replaces an existing one. The bytes go to a temporary file in the destination's
 * directory, which is then linked to the final name (link(2) fails where a file exists, unlike
 * rename(2)); if the name is taken, "-1", "-2", ... is added before the extension. */
#ifndef CS_OUTPUT_H
#define CS_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

/* The values of the pattern's specifiers. */
typedef struct cs_output_fields_s {
  const char *executable; /* %e: the program's file name */
  long pid;               /* %p */
  const char *host;       /* %h */
  const char *rank;       /* %r: RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; "0" if none */
  int dump_number;        /* %n, from 1 */
  const char *trigger;    /* %t: exit, signal, oom, api */
} cs_output_fields_t;

/* Expand pattern into buf. Returns 0, or -1 when the result does not fit. Unknown specifiers
 * cannot occur (the option parser refuses them) and are copied as they are. */
int cs_output_expand(const char *pattern, const cs_output_fields_t *f, char *buf, size_t len);

/* The rank from the usual launcher variables, or "0". */
const char *cs_output_rank(void);

typedef struct cs_output_s {
  int fd;                /* of the temporary file */
  char temp_path[4096];
  char final_path[4096]; /* the name it was committed under */
} cs_output_t;

/* Create the temporary file for `path`. Returns 0 or an errno. */
int cs_output_open(cs_output_t *out, const char *path);

/* Close the temporary file and give it its final name (path, or path with -N added). Returns 0
 * or an errno; on failure the temporary file is removed. */
int cs_output_commit(cs_output_t *out, const char *path);

/* Drop the temporary file (a write failed). */
void cs_output_abort(cs_output_t *out);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The rows `cudasnap top` shows and `top --once --json` prints: one per profiled process and
 * device, from the live records (live/live_read.h; which of them top and metrics read), sorted,
 * and the text of the table and of one row's sites at a given width. */
#ifndef CS_CLI_LIVE_ROWS_H
#define CS_CLI_LIVE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "live/live_read.h"

typedef struct cs_live_row_s {
  const cs_live_header_t *process;
  const cs_live_device_t *device;
} cs_live_row_t;

typedef enum cs_live_sort_e {
  CS_LIVE_SORT_ALLOCATED = 0, /* the default */
  CS_LIVE_SORT_RESERVED,
  CS_LIVE_SORT_PEAK,
  CS_LIVE_SORT_DRIVER,
  CS_LIVE_SORT_PID,
  CS_LIVE_SORT_RANK,
  CS_LIVE_SORTS,
} cs_live_sort_t;

/* The live records `top` and `metrics` show: this user's processes, every user's when run as
 * root; only process pid's when pid > 0. 0, or the errno of cs_live_list. */
int cs_live_rows_list(long pid, cs_live_list_t *list);

/* The column a sort orders by, as the header names it ("ALLOCATED"). */
const char *cs_live_sort_name(cs_live_sort_t sort);

/* Rows of list (one per process and device; a process with no device yet has none), sorted,
 * the larger first (pid and rank: the smaller first). *rows is malloc'ed. -1 without memory. */
int cs_live_rows(const cs_live_list_t *list, cs_live_sort_t sort, cs_live_row_t **rows, size_t *count);

/* The header line and cs_live_table_row_lines(width) lines per row (the second: the top site,
 * where its column would be too narrow), each cut to `width` columns (>= 40). selected: the row
 * to mark with '>' (SIZE_MAX: none). */
void cs_live_print_table(FILE *out, const cs_live_row_t *rows, size_t count, int width, size_t selected);
int cs_live_table_row_lines(int width);

/* One row's process and its sites, cut to width. */
void cs_live_print_sites(FILE *out, const cs_live_row_t *row, int width);

/* {"processes": [...]} of every row (the `top --once --json` interface). Returns 0 or -1. */
int cs_live_print_json(FILE *out, const cs_live_row_t *rows, size_t count);

#endif

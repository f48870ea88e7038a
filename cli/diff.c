/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap diff A B`: live bytes and blocks per allocation site in two snapshots, largest change
 * first. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "common/cs_format.h"
#include "cli/load.h"
#include "analysis/peak.h"
#include "analysis/phase_lanes.h"
#include "analysis/sites.h"
#include "analysis/snapview.h"

static const char cs_diff_help[] =
    "usage: cudasnap diff [--top N] [--phase NAME] [--allocator-frames GLOB[,GLOB...]] A B\n"
    "\n"
    "Compare the live memory of two snapshots (JSON or pickle) by allocation site: the\n"
    "requested bytes and the number of active_allocated blocks each site holds, over all\n"
    "devices. A site is the first frame of a block's stack outside the CUDA runtime, the\n"
    "driver and cudasnap (function file:line), or \"(no stack)\", as summary names it; both\n"
    "files are named by the allocator frames of both (their cudasnap.allocator_frames) and of\n"
    "--allocator-frames. Output, on stdout:\n"
    "  A -> B: live bytes by allocation site, largest change first:\n"
    "    CHANGE: BYTES_A -> BYTES_B, N_A -> N_B blocks: FUNCTION FILE:LINE\n"
    "    ... (at most --top lines; sites that did not change are left out)\n"
    "    (K more changed sites)                     when --top cut the list\n"
    "  total: CHANGE: BYTES_A -> BYTES_B, N_A -> N_B blocks\n"
    "CHANGE reads \"+9437184 B (9.0 MiB)\" or \"-512 B\"; BYTES reads \"9437184 B (9.0 MiB)\".\n"
    "Rows are ordered by the absolute change in bytes, then in blocks, then by site.\n"
    "\n"
    "A file whose numbers would mean nothing is refused with one line on stderr, exit 1:\n"
    "  FILE: WHERE: problem    not a snapshot (neither segments nor device_traces), or an\n"
    "                          address or size that is not a finite non-negative number\n"
    "Other problems the viewer has with a file (`cudasnap check` lists them) do not stop it.\n"
    "\n"
    "With --phase NAME, each side is not its final state but the moment of its trace when the\n"
    "most bytes were live while a phase called NAME was open (external_annotations: NVTX ranges,\n"
    "record_function; a domain's ranges are named DOMAIN::NAME), replayed as `summary` replays the\n"
    "peak; the blocks live then are compared, and a line per side says when that was:\n"
    "  A: peak of NAME: BYTES after event I of N (device D)\n"
    "A side whose trace never has NAME open is an error (exit status 1).\n"
    "\n"
    "options:\n"
    "  --top N       rows listed (default 20)\n"
    "  --phase NAME  compare the two snapshots at the peak of phase NAME\n"
    "  --allocator-frames GLOB[,GLOB...]\n"
    "                functions that are part of the program's allocator: a site is the first\n"
    "                frame outside them (as summary's --allocator-frames)\n"
    "  -h, --help    this text\n";

enum { CS_DIFF_TOP_DEFAULT = 20, CS_DIFF_TOP_MAX = 1000000 };

static const char cs_diff_name[] = "diff";

/* A site's totals in A and B. */
typedef struct cs_diff_row_s {
  cs_site_t site;
  uint64_t bytes[2];
  uint64_t blocks[2];
} cs_diff_row_t;

static int cs_diff_live(const cs_doc_t *doc, cs_sites_t *sites) {
  cs_val_t segments = cs_view_segments(doc);
  size_t n = cs_doc_len(doc, segments);
  const cs_val_t *segment = cs_doc_items(doc, segments);
  cs_site_cache_t cache;
  cs_site_cache_init(&cache, doc);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    cs_view_blocks_t it;
    cs_view_block_t b;
    for (cs_view_blocks_begin(&it, doc, segment[i]); rc == 0 && cs_view_blocks_next(&it, &b);) {
      if (b.state != CS_VIEW_ALLOCATED) continue;
      cs_site_t site = cs_site_cache_of(&cache, b.frames);
      if (cs_sites_add(sites, &site, (uint64_t)b.requested) != 0) rc = -1;
    }
  }
  cs_site_cache_free(&cache);
  return rc;
}

/* The blocks live at the peak of phase `name`, on the device where that peak is highest. Returns 0,
 * 1 when no device's trace has the phase open, or -1 without host memory. */
static int cs_diff_phase_live(const char *path, const cs_doc_t *doc, const char *name, cs_sites_t *sites) {
  int best_device = -1;
  cs_peak_t best = {.bytes = 0};
  for (int d = 0; d < cs_view_device_count(doc); d++) {
    cs_peak_t peak;
    bool found = false;
    if (cs_phases_peak_of(doc, d, name, &peak, &found) != 0) return -1;
    if (found && (best_device < 0 || peak.bytes > best.bytes)) {
      best = peak;
      best_device = d;
    }
  }
  if (best_device < 0) return 1;
  char bytes[64];
  cs_format_bytes(best.bytes, bytes, sizeof bytes);
  printf("%s: peak of %s: %s after event %zu of %zu (device %d)\n", path, name, bytes, best.after, best.events,
         best_device);
  return cs_peak_live_at(doc, best_device, best.after, sites);
}

static uint64_t cs_diff_distance(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

static int cs_diff_row_compare(const void *x, const void *y) {
  const cs_diff_row_t *a = x, *b = y;
  uint64_t da = cs_diff_distance(a->bytes[0], a->bytes[1]), db = cs_diff_distance(b->bytes[0], b->bytes[1]);
  if (da != db) return da > db ? -1 : 1;
  da = cs_diff_distance(a->blocks[0], a->blocks[1]);
  db = cs_diff_distance(b->blocks[0], b->blocks[1]);
  if (da != db) return da > db ? -1 : 1;
  return cs_site_compare(&a->site, &b->site);
}

/* "+9437184 B (9.0 MiB)", "-512 B", "+0 B". */
static void cs_diff_format_change(uint64_t from, uint64_t to, char *buf, size_t len) {
  char bytes[64];
  cs_format_bytes(cs_diff_distance(from, to), bytes, sizeof bytes);
  snprintf(buf, len, "%c%s", to < from ? '-' : '+', bytes);
}

static void cs_diff_print_counts(const uint64_t bytes[2], const uint64_t blocks[2]) {
  char change[80], a[64], b[64];
  cs_diff_format_change(bytes[0], bytes[1], change, sizeof change);
  cs_format_bytes(bytes[0], a, sizeof a);
  cs_format_bytes(bytes[1], b, sizeof b);
  printf("%s: %s -> %s, %llu -> %llu blocks", change, a, b, (unsigned long long)blocks[0],
         (unsigned long long)blocks[1]);
}

/* The union of both tables' sites, changed ones only. Returns the row count, or -1. */
static long cs_diff_rows(const cs_sites_t sites[2], cs_diff_row_t **out) {
  cs_diff_row_t *rows = calloc(sites[0].count + sites[1].count + 1, sizeof *rows);
  if (rows == NULL) return -1;
  size_t n = 0;
  for (int side = 0; side < 2; side++) {
    for (size_t i = 0; i < sites[side].count; i++) {
      const cs_site_total_t *t = &sites[side].totals[i];
      const cs_site_total_t *other = cs_sites_find(&sites[1 - side], &t->site);
      if (side == 1 && other != NULL) continue; /* already a row, from A */
      cs_diff_row_t row = {.site = t->site};
      row.bytes[side] = t->bytes;
      row.blocks[side] = t->blocks;
      if (other != NULL) {
        row.bytes[1 - side] = other->bytes;
        row.blocks[1 - side] = other->blocks;
      }
      if (row.bytes[0] != row.bytes[1] || row.blocks[0] != row.blocks[1]) rows[n++] = row;
    }
  }
  qsort(rows, n, sizeof *rows, cs_diff_row_compare);
  *out = rows;
  return (long)n;
}

static int cs_diff_print(const char *a, const char *b, const cs_sites_t sites[2], uint64_t top) {
  cs_diff_row_t *rows;
  long n = cs_diff_rows(sites, &rows);
  if (n < 0) return -1;
  printf("%s -> %s: live bytes by allocation site, largest change first:\n", a, b);
  uint64_t shown = (uint64_t)n < top ? (uint64_t)n : top;
  for (uint64_t i = 0; i < shown; i++) {
    char site[1024];
    cs_site_format(&rows[i].site, site, sizeof site);
    printf("  ");
    cs_diff_print_counts(rows[i].bytes, rows[i].blocks);
    printf(": %s\n", site);
  }
  if ((uint64_t)n > shown) printf("  (%llu more changed sites)\n", (unsigned long long)((uint64_t)n - shown));
  uint64_t bytes[2] = {0, 0}, blocks[2] = {0, 0};
  for (int side = 0; side < 2; side++) {
    for (size_t i = 0; i < sites[side].count; i++) {
      bytes[side] += sites[side].totals[i].bytes;
      blocks[side] += sites[side].totals[i].blocks;
    }
  }
  printf("total: ");
  cs_diff_print_counts(bytes, blocks);
  printf("\n");
  free(rows);
  return 0;
}

int cs_cli_diff(int argc, char **argv) {
  uint64_t top = CS_DIFF_TOP_DEFAULT;
  const char *phase = NULL;
  const struct option options[] = {{"top", required_argument, NULL, 't'},
                                   {"phase", required_argument, NULL, 'p'},
                                   {"allocator-frames", required_argument, NULL, 'A'},
                                   {"help", no_argument, NULL, 'h'},
                                   {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_diff_help, stdout); return CS_CLI_OK;
    case 't':
      if (!cs_cli_parse_count(cs_diff_name, "--top", optarg, 1, CS_DIFF_TOP_MAX, &top)) return CS_CLI_USAGE;
      break;
    case 'p': phase = optarg; break;
    case 'A':
      if (!cs_cli_allocator_frames(cs_diff_name, optarg)) return CS_CLI_USAGE;
      break;
    default: return cs_cli_bad_option(cs_diff_name, c, argv);
    }
  }
  if (!cs_cli_operands(cs_diff_name, argc, argv, 2, "A B")) return CS_CLI_USAGE;
  const char *paths[2] = {argv[optind], argv[optind + 1]};
  cs_doc_t *docs[2] = {NULL, NULL};
  cs_sites_t sites[2];
  cs_sites_init(&sites[0]);
  cs_sites_init(&sites[1]);
  int rc = CS_CLI_OK;
  for (int side = 0; side < 2 && rc == CS_CLI_OK; side++) {
    docs[side] = cs_load_snapshot(paths[side], NULL, NULL);
    if (docs[side] == NULL) rc = CS_CLI_FAIL;
  }
  /* a site is named alike on both sides: by the allocator frames of both files */
  for (int side = 0; side < 2 && rc == CS_CLI_OK; side++) cs_site_frames_adopt(docs[side]);
  for (int side = 0; side < 2 && rc == CS_CLI_OK; side++) {
    if (phase == NULL) {
      if (cs_diff_live(docs[side], &sites[side]) != 0) rc = -1;
    } else {
      int found = cs_diff_phase_live(paths[side], docs[side], phase, &sites[side]);
      if (found < 0) rc = -1;
      if (found == 1) {
        cs_cli_error(cs_diff_name, "%s: no phase named '%s' is open during its trace", paths[side], phase);
        rc = CS_CLI_FAIL;
      }
    }
  }
  if (rc == CS_CLI_OK && cs_diff_print(paths[0], paths[1], sites, top) != 0) rc = -1;
  if (rc == -1) {
    cs_cli_error(cs_diff_name, "out of host memory");
    rc = CS_CLI_FAIL;
  }
  for (int side = 0; side < 2; side++) {
    cs_sites_free(&sites[side]);
    cs_doc_free(docs[side]);
  }
  return rc;
}

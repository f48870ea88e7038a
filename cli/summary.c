/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap summary FILE`: per device, the memory_summary table, the top allocation sites (live,
 * and at the trace's peak), the blocks live at the snapshot and the free bytes inside segments. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "analysis/device_blocks.h"
#include "cli/load.h"
#include "analysis/lower_bound.h"
#include "analysis/oom.h"
#include "analysis/peak.h"
#include "analysis/phase_lanes.h"
#include "analysis/pools_summary.h"
#include "analysis/reconcile.h"
#include "analysis/sites.h"
#include "analysis/snapstats.h"
#include "analysis/snapview.h"
#include "common/cs_format.h"

static const char cs_summary_help[] =
    "usage: cudasnap summary [--top N] [--site-frames N] [--allocator-frames GLOB[,GLOB...]] FILE\n"
    "\n"
    "Summarize a snapshot (JSON or pickle; cudasnap's or PyTorch's). Output, on stdout:\n"
    "\n"
    "  FILE: cudasnap VERSION snapshot, pid PID, trigger TRIGGER, N device(s)\n"
    "    (or: FILE: PyTorch snapshot, N device(s))\n"
    "  FILE: best effort: WHAT  (a snapshot taken as the process ended, which left WHAT out)\n"
    "  FILE: warning: the live figures are lower bounds: ...  (a snapshot `cudasnap recover` made\n"
    "    from a recording whose history dropped its oldest events: how many, and the setting)\n"
    "  when the trace has an out-of-memory error, the answer first (the last OOM):\n"
    "    out of memory on device D, stream S: Tried to allocate SIZE; SIZE free[ of TOTAL]\n"
    "      asked by FUNCTION FILE:LINE       (the site that asked; its user callers below it)\n"
    "      the cache: SIZE reserved, SIZE of it reserved but unallocated, largest free block SIZE\n"
    "      outside the cache: SIZE           (with the driver's total: cudasnap snapshots)\n"
    "      verdict: fragmentation (and the setting that helps), memory held outside the cache,\n"
    "        or the device is full (and the sites that hold most)\n"
    "  then for each device with segments, allocator events or statistics other than 0:\n"
    "  <empty line>\n"
    "  device D\n"
    "  the torch.cuda.memory_summary() table, in its exact layout, from the snapshot's\n"
    "    cudasnap.memory_stats; a PyTorch snapshot has none, so the current values are computed\n"
    "    from its segments, the unknown ones (peaks, totals, OOMs, retries) show as '?', and a\n"
    "    line says so: note: ...\n"
    "  note: the table counts blocks, as torch.cuda.memory_allocated() does (...); the sites and\n"
    "    the peak below count requested bytes\n"
    "  device memory, reconciled with the driver:     (cudasnap snapshots)\n"
    "    driver total, driver used (total - free), cudasnap cache reserved, the bytes of each\n"
    "    kind passed through that the driver counts (device, pitch, managed, array,\n"
    "    vmm_physical), stream-ordered pools reserved (; used BYTES), the graph memory pool\n"
    "    reserved (graph memory nodes; used BYTES), and the remainder:\n"
    "    context, modules, other processes (used minus all the rest). Then what is drawn but\n"
    "    counted above or not ours: VMM mappings, stream-ordered allocations, graph\n"
    "    allocations, IPC imports; the driver's last answer at a crash; the driver at the peak\n"
    "  top allocation sites by live bytes:\n"
    "    BYTES in N block(s): FUNCTION FILE:LINE       (at most --top lines, most bytes first)\n"
    "        from FUNCTION FILE:LINE                   (--site-frames N: the site's callers)\n"
    "  top allocation sites at the trace's peak (BYTES live after event I of N):\n"
    "    BYTES in N block(s): FUNCTION FILE:LINE\n"
    "  when the snapshot has phases (external_annotations: NVTX ranges, record_function):\n"
    "    peak BYTES at event I, during OUTER > ... > INNER   (the phases open then)\n"
    "    (phases are per thread; with several threads' phases, the peak's thread and each other's:\n"
    "    peak BYTES at event I, on thread T (NAME), during OUTER > ... > INNER\n"
    "      open on thread T (NAME): OUTER > ... > INNER)\n"
    "    largest live bytes inside each top-level phase:\n"
    "      NAME: BYTES                                        (at most --top lines)\n"
    "  when pools declared their regions through NVTX (cudasnap.pools):\n"
    "    inside pools (NVTX):\n"
    "      pool ADDRESS (BYTES): BYTES registered in N region(s); top region sites:\n"
    "        BYTES in N block(s): FUNCTION FILE:LINE      (at most 3 per pool)\n"
    "  blocks live at the snapshot: N block(s), BYTES[; N block(s), BYTES of them allocated\n"
    "    before recording began (no stack)]\n"
    "  free bytes inside segments: BYTES: rounding BYTES, gaps BYTES\n"
    "then, when the snapshot reports any:\n"
    "  host memory (not device memory): pinned BYTES, registered BYTES\n"
    "\n"
    ;
/* The help's second half (C11 guarantees string literals of 4095 characters only). */
static const char cs_summary_help_more[] =
    "BYTES reads \"9437184 B (9.0 MiB)\" (just \"N B\" below 1 KiB). A site is the first user frame\n"
    "of a block's stack (function file:line): a Python frame outside the standard library,\n"
    "installed packages and synthetic code first, else a native frame outside CUDA's libraries,\n"
    "cudasnap, the C/C++ runtime, the interpreter and a framework's allocator and dispatcher;\n"
    "else the first frame outside CUDA's libraries; \"(no stack)\" for a block without one\n"
    "(allocated before recording began, or with stacks off). Frames the program named part of its\n"
    "allocator (CUDASNAP_ALLOCATOR_FRAMES, the file's cudasnap.allocator_frames) and those\n"
    "--allocator-frames names are never a site. With --site-frames N, the next N\n"
    "user frames of the stack of the site's first block (its callers) follow it.\n"
    "Site bytes are requested bytes (before the allocator's rounding). Live: blocks\n"
    "in state active_allocated. The peak replays the device's trace from its start (alloc adds a\n"
    "block; free_completed removes it), counting blocks live before the trace began; \"after\n"
    "event 0\" means at its start.\n"
    "Rounding: size - requested_size of active blocks; gaps: inactive blocks.\n"
    "\n"
    "A file whose numbers would mean nothing is refused with one line on stderr, exit 1:\n"
    "  FILE: WHERE: problem    not a snapshot (neither segments nor device_traces), or an\n"
    "                          address or size that is not a finite non-negative number\n"
    "Other problems the viewer has with a file (`cudasnap check` lists them) do not stop it.\n"
    "\n"
    "options:\n"
    "  --top N           sites listed per ranking (default 10)\n"
    "  --site-frames N   user-code callers shown under each site, 0 to 64 (default 0)\n"
    "  --allocator-frames GLOB[,GLOB...]\n"
    "                    functions that are part of the program's allocator (shell globs over\n"
    "                    function names: cuda_alloc,MyPool::*): a site is the first frame\n"
    "                    outside them; for any file, PyTorch's too (docs/configuration.md)\n"
    "  -h, --help        this text\n";

enum { CS_SUMMARY_TOP_DEFAULT = 10, CS_SUMMARY_TOP_MAX = 1000000, CS_SUMMARY_SITE_FRAMES_MAX = 64 };
/* The user callers shown under the site that asked for the memory an OOM could not give. */
enum { CS_SUMMARY_OOM_CALLERS = 5 };

typedef struct cs_summary_opts_s {
  uint64_t top;         /* sites per ranking */
  uint64_t site_frames; /* callers under each site */
} cs_summary_opts_t;

static const char cs_summary_name[] = "summary";

/* The first line: who wrote the snapshot. */
static void cs_summary_header(const char *path, const cs_doc_t *doc, int devices) {
  cs_val_t cudasnap = cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP);
  if (cs_val_is_dict(cudasnap)) {
    const char *version = cs_view_str(doc, cudasnap, "version");
    const char *trigger = cs_view_str_key(doc, cudasnap, CS_KEY_TRIGGER);
    int64_t pid = 0;
    if (!cs_view_int(doc, cudasnap, "pid", &pid)) pid = 0;
    printf("%s: cudasnap %s snapshot, pid %lld, trigger %s, %d device%s\n", path, version ? version : "?",
           (long long)pid, trigger ? trigger : "?", devices, cs_plural((uint64_t)devices));
    const char *best_effort = cs_view_str(doc, cudasnap, "best_effort");
    if (best_effort) printf("%s: best effort: %s\n", path, best_effort);
  } else {
    printf("%s: PyTorch snapshot, %d device%s\n", path, devices, cs_plural((uint64_t)devices));
  }
}

static int cs_summary_table(const cs_doc_t *doc, int device) {
  int found;
  char *text = cs_snapstats_table(doc, device, &found);
  if (text == NULL) return -1;
  fputs(text, stdout);
  free(text);
  /* Two peaks of "allocated" memory on one screen would read as a contradiction: say which is which. */
  printf("note: the table counts blocks, as torch.cuda.memory_allocated() does (sizes rounded up by the "
         "allocator); the sites and the peak below count requested bytes\n");
  if (found < 0) {
    printf("note: no cudasnap statistics in this snapshot: current values are computed from its "
           "segments; peaks, totals, OOMs and retries are unknown (?)\n");
  } else if (found < CS_STATS_KEY_COUNT) {
    printf("note: %d of the %d memory_stats keys are missing; they read 0\n", CS_STATS_KEY_COUNT - found,
           CS_STATS_KEY_COUNT);
  }
  return 0;
}

static void cs_summary_sites(const cs_doc_t *doc, const cs_sites_t *sites, const cs_summary_opts_t *o) {
  if (sites->count == 0) printf("  (none)\n");
  for (size_t i = 0; i < sites->count && i < o->top; i++) {
    const cs_site_total_t *s = &sites->totals[i];
    char bytes[64], site[1024];
    cs_format_bytes(s->bytes, bytes, sizeof bytes);
    cs_site_format(&s->site, site, sizeof site);
    printf("  %s in %llu block%s: %s\n", bytes, (unsigned long long)s->blocks, cs_plural(s->blocks), site);
    cs_val_t frames = s->site.frames;
    size_t caller = cs_val_absent(frames) ? SIZE_MAX : cs_site_next_caller(doc, frames, s->site.frame);
    for (uint64_t k = 0; caller != SIZE_MAX && k < o->site_frames;
         k++, caller = cs_site_next_caller(doc, frames, caller)) {
      cs_site_t c = cs_site_of_frame(doc, cs_doc_at(doc, frames, caller));
      cs_site_format(&c, site, sizeof site);
      printf("      from %s\n", site);
    }
  }
}

static int cs_summary_peak(const cs_doc_t *doc, int device, const cs_summary_opts_t *o) {
  cs_sites_t at_peak;
  cs_sites_init(&at_peak);
  cs_peak_t peak;
  int rc = cs_peak_find(doc, device, &peak, &at_peak);
  if (rc == 0) {
    cs_sites_sort(&at_peak);
    char bytes[64], split[192] = "";
    cs_format_bytes(peak.bytes, bytes, sizeof bytes);
    if (peak.passthrough > 0) { /* allocated: the cache's blocks; memory passed through, its own figure */
      char cache[64], passed[64];
      cs_format_bytes(peak.bytes - peak.passthrough, cache, sizeof cache);
      cs_format_bytes(peak.passthrough, passed, sizeof passed);
      snprintf(split, sizeof split, ": %s allocated in the cache, %s passed through it", cache, passed);
    }
    printf("top allocation sites at the trace's peak (%s live after event %zu of %zu%s):\n", bytes, peak.after,
           peak.events, split);
    cs_summary_sites(doc, &at_peak, o);
    rc = cs_phases_summary(doc, device, &peak, o->top);
  }
  cs_sites_free(&at_peak);
  return rc;
}

static void cs_summary_totals(const cs_device_blocks_t *b) {
  uint64_t blocks = 0, bytes = 0, bare_blocks = 0, bare_bytes = 0;
  for (size_t i = 0; i < b->live.count; i++) {
    blocks += b->live.totals[i].blocks;
    bytes += b->live.totals[i].bytes;
    if (b->live.totals[i].site.name == NULL) {
      bare_blocks += b->live.totals[i].blocks;
      bare_bytes += b->live.totals[i].bytes;
    }
  }
  char text[64], rounding[64], gaps[64];
  cs_format_bytes(bytes, text, sizeof text);
  /* Live at the snapshot, which need not be the program's end: not "never freed". */
  printf("blocks live at the snapshot: %llu block%s, %s", (unsigned long long)blocks, cs_plural(blocks), text);
  if (bare_blocks > 0) {
    cs_format_bytes(bare_bytes, text, sizeof text);
    printf("; %llu block%s, %s of them allocated before recording began (no stack)", (unsigned long long)bare_blocks,
           cs_plural(bare_blocks), text);
  }
  printf("\n");
  cs_format_bytes(b->rounding + b->gaps, text, sizeof text);
  cs_format_bytes(b->rounding, rounding, sizeof rounding);
  cs_format_bytes(b->gaps, gaps, sizeof gaps);
  printf("free bytes inside segments: %s: rounding %s, gaps %s\n", text, rounding, gaps);
}

static int cs_summary_device(const cs_doc_t *doc, int device, const cs_summary_opts_t *o) {
  printf("\ndevice %d\n", device);
  cs_device_blocks_t blocks;
  int rc = cs_device_blocks(doc, device, &blocks);
  if (rc == 0) rc = cs_summary_table(doc, device);
  if (rc == 0) cs_reconcile_write(stdout, doc, device);
  if (rc == 0) {
    cs_sites_sort(&blocks.live);
    printf("top allocation sites by live bytes:\n");
    cs_summary_sites(doc, &blocks.live, o);
    rc = cs_summary_peak(doc, device, o);
  }
  if (rc == 0) rc = cs_pools_summary(doc, device);
  if (rc == 0) cs_summary_totals(&blocks);
  cs_device_blocks_free(&blocks);
  return rc;
}

/* Returns -1 to go on, else the exit status (--help, a bad option). */
static int cs_summary_options(int argc, char **argv, cs_summary_opts_t *o) {
  const struct option options[] = {{"top", required_argument, NULL, 't'},
                                   {"site-frames", required_argument, NULL, 'f'},
                                   {"allocator-frames", required_argument, NULL, 'A'},
                                   {"help", no_argument, NULL, 'h'},
                                   {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'h':
      fputs(cs_summary_help, stdout);
      fputs(cs_summary_help_more, stdout);
      return CS_CLI_OK;
    case 't':
      if (!cs_cli_parse_count(cs_summary_name, "--top", optarg, 1, CS_SUMMARY_TOP_MAX, &o->top)) return CS_CLI_USAGE;
      break;
    case 'f':
      if (!cs_cli_parse_count(cs_summary_name, "--site-frames", optarg, 0, CS_SUMMARY_SITE_FRAMES_MAX,
                              &o->site_frames))
        return CS_CLI_USAGE;
      break;
    case 'A':
      if (!cs_cli_allocator_frames(cs_summary_name, optarg)) return CS_CLI_USAGE;
      break;
    default: return cs_cli_bad_option(cs_summary_name, c, argv);
    }
  }
  return -1;
}

int cs_cli_summary(int argc, char **argv) {
  cs_summary_opts_t opts = {.top = CS_SUMMARY_TOP_DEFAULT, .site_frames = 0};
  int status = cs_summary_options(argc, argv, &opts);
  if (status >= 0) return status;
  if (!cs_cli_operands(cs_summary_name, argc, argv, 1, "FILE")) return CS_CLI_USAGE;
  const char *path = argv[optind];
  cs_doc_t *doc = cs_load_snapshot(path, NULL, NULL);
  if (doc == NULL) return CS_CLI_FAIL;
  int devices = cs_view_device_count(doc);
  cs_summary_header(path, doc, devices);
  uint64_t dropped, kept;
  if (cs_lower_bound(doc, &dropped, &kept)) {
    char text[512];
    cs_lower_bound_text(dropped, kept, text, sizeof text);
    printf("%s: warning: %s\n", path, text);
  }
  cs_oom_t oom;
  int rc = cs_oom_find(doc, &oom), unused = 0;
  if (rc == 0 && oom.found) cs_oom_write(stdout, doc, &oom, "", CS_SUMMARY_OOM_CALLERS);
  for (int d = 0; rc == 0 && d < devices; d++) {
    if (cs_device_used(doc, d)) rc = cs_summary_device(doc, d, &opts);
    else unused++;
  }
  /* say why a device of the header has no section, rather than leave the reader to wonder */
  if (rc == 0 && unused > 0)
    printf("\n%d of %d device%s not shown: no segments, allocator events or statistics (unused here)\n",
           unused, devices, cs_plural((uint64_t)devices));
  if (rc == 0) cs_reconcile_print_host(doc);
  cs_doc_free(doc);
  if (rc != 0) {
    cs_cli_error(cs_summary_name, "out of host memory");
    return CS_CLI_FAIL;
  }
  return CS_CLI_OK;
}

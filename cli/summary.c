/* `cudasnap summary FILE`: per device, the memory_summary table, the top allocation sites (live,
 * and at the trace's peak), the blocks never freed and the free bytes inside segments. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cs_format.h"
#include "cli/load.h"
#include "cli/peak.h"
#include "cli/sites.h"
#include "cli/snapstats.h"
#include "cli/snapview.h"

static const char cs_summary_help[] =
    "usage: cudasnap summary [--top N] FILE\n"
    "\n"
    "Summarize a snapshot (JSON or pickle; cudasnap's or PyTorch's). Output, on stdout:\n"
    "\n"
    "  FILE: cudasnap VERSION snapshot, pid PID, trigger TRIGGER, N device(s)\n"
    "    (or: FILE: PyTorch snapshot, N device(s))\n"
    "  then for each device with segments, allocator events or statistics other than 0:\n"
    "  <empty line>\n"
    "  device D\n"
    "  the torch.cuda.memory_summary() table, in its exact layout, from the snapshot's\n"
    "    cudasnap.memory_stats; a PyTorch snapshot has none, so the current values are computed\n"
    "    from its segments, the unknown ones (peaks, totals, OOMs, retries) show as '?', and a\n"
    "    line says so: note: ...\n"
    "  top allocation sites by live bytes:\n"
    "    BYTES in N block(s): FUNCTION FILE:LINE       (at most --top lines, most bytes first)\n"
    "  top allocation sites at the trace's peak (BYTES live after event I of N):\n"
    "    BYTES in N block(s): FUNCTION FILE:LINE\n"
    "  blocks never freed: N block(s), BYTES\n"
    "  free bytes inside segments: BYTES: rounding BYTES, gaps BYTES\n"
    "\n"
    "BYTES reads \"9437184 B (9.0 MiB)\" (just \"N B\" below 1 KiB). A site is the first frame of a\n"
    "block's stack outside the CUDA runtime, the driver and cudasnap (function file:line), or\n"
    "\"(no stack)\". Site bytes are requested bytes (before the allocator's rounding). Live: blocks\n"
    "in state active_allocated. The peak replays the device's trace from its start (alloc adds a\n"
    "block; free_completed removes it), counting blocks live before the trace began; \"after\n"
    "event 0\" means at its start. Blocks never freed: active_allocated blocks at the snapshot.\n"
    "Rounding: size - requested_size of active blocks; gaps: inactive blocks.\n"
    "\n"
    "A file whose numbers would mean nothing is refused with one line on stderr, exit 1:\n"
    "  FILE: WHERE: problem    not a snapshot (neither segments nor device_traces), or an\n"
    "                          address or size that is not a finite non-negative number\n"
    "Other problems the viewer has with a file (`cudasnap check` lists them) do not stop it.\n"
    "\n"
    "options:\n"
    "  --top N     sites listed per ranking (default 10)\n"
    "  -h, --help  this text\n";

enum { CS_SUMMARY_TOP_DEFAULT = 10, CS_SUMMARY_TOP_MAX = 1000000 };

static const char cs_summary_name[] = "summary";

/* The first line: who wrote the snapshot. */
static void cs_summary_header(const char *path, const cJSON *root, int devices) {
  const cJSON *cudasnap = cJSON_GetObjectItemCaseSensitive(root, "cudasnap");
  if (cJSON_IsObject(cudasnap)) {
    const char *version = cs_view_str(cudasnap, "version");
    const char *trigger = cs_view_str(cudasnap, "trigger");
    int64_t pid = 0;
    if (!cs_view_int(cudasnap, "pid", &pid)) pid = 0;
    printf("%s: cudasnap %s snapshot, pid %lld, trigger %s, %d device%s\n", path, version ? version : "?",
           (long long)pid, trigger ? trigger : "?", devices, cs_plural((uint64_t)devices));
  } else {
    printf("%s: PyTorch snapshot, %d device%s\n", path, devices, cs_plural((uint64_t)devices));
  }
}

/* Does the device hold anything worth a section: segments, trace entries or statistics other
 * than zeros? Snapshots list every visible device, used or not, and the `snapshot` mark a dump
 * leaves in every device's trace is no sign of use. */
static bool cs_summary_device_used(const cJSON *root, int device) {
  const cJSON *entry;
  cJSON_ArrayForEach(entry, cs_view_trace(root, device)) {
    const char *action = cs_view_str(entry, "action");
    if (action == NULL || strcmp(action, "snapshot") != 0) return true;
  }
  cs_stats_t stats, zero;
  memset(&zero, 0, sizeof zero);
  if (cs_snapstats_from_cudasnap(root, device, &stats) >= 0) {
    stats.max_split_size = 0; /* a setting, not a sign of use */
    if (memcmp(&stats, &zero, sizeof stats) != 0) return true;
  }
  const cJSON *segment;
  cJSON_ArrayForEach(segment, cs_view_segments(root)) {
    if (cs_view_segment_device(segment) == device) return true;
  }
  return false;
}

static int cs_summary_table(const cJSON *root, int device) {
  cs_stats_t stats;
  int found = cs_snapstats_from_cudasnap(root, device, &stats);
  if (found < 0) cs_snapstats_from_segments(root, device, &stats);
  size_t len = cs_stats_summary(&stats, device, false, NULL, 0) + 1;
  char *text = malloc(len);
  if (text == NULL) return -1;
  cs_stats_summary(&stats, device, false, text, len);
  if (found < 0) cs_snapstats_mark_unknown(text);
  fputs(text, stdout);
  free(text);
  if (found < 0) {
    printf("note: no cudasnap statistics in this snapshot: current values are computed from its "
           "segments; peaks, totals, OOMs and retries are unknown (?)\n");
  } else if (found < CS_STATS_KEY_COUNT) {
    printf("note: %d of the %d memory_stats keys are missing; they read 0\n", CS_STATS_KEY_COUNT - found,
           CS_STATS_KEY_COUNT);
  }
  return 0;
}

static void cs_summary_sites(const cs_sites_t *sites, uint64_t top) {
  if (sites->count == 0) printf("  (none)\n");
  for (size_t i = 0; i < sites->count && i < top; i++) {
    const cs_site_total_t *s = &sites->totals[i];
    char bytes[64], site[1024];
    cs_format_bytes(s->bytes, bytes, sizeof bytes);
    cs_site_format(&s->site, site, sizeof site);
    printf("  %s in %llu block%s: %s\n", bytes, (unsigned long long)s->blocks, cs_plural(s->blocks), site);
  }
}

/* What one walk over a device's blocks finds. */
typedef struct cs_summary_blocks_s {
  cs_sites_t live;   /* active_allocated blocks by site */
  uint64_t rounding; /* size - requested_size of active blocks */
  uint64_t gaps;     /* inactive blocks */
} cs_summary_blocks_t;

static int cs_summary_walk(const cJSON *root, int device, cs_summary_blocks_t *out) {
  const cJSON *segment;
  cJSON_ArrayForEach(segment, cs_view_segments(root)) {
    if (cs_view_segment_device(segment) != device) continue;
    cs_view_blocks_t it;
    cs_view_block_t b;
    for (cs_view_blocks_begin(&it, segment); cs_view_blocks_next(&it, &b);) {
      if (b.state == CS_VIEW_INACTIVE) {
        out->gaps += (uint64_t)b.size;
        continue;
      }
      if (b.requested < b.size) out->rounding += (uint64_t)(b.size - b.requested);
      if (b.state != CS_VIEW_ALLOCATED) continue;
      cs_site_t site = cs_site_of(b.frames);
      if (cs_sites_add(&out->live, &site, (uint64_t)b.requested) != 0) return -1;
    }
  }
  return 0;
}

static int cs_summary_peak(const cJSON *root, int device, uint64_t top) {
  cs_sites_t at_peak;
  cs_sites_init(&at_peak);
  cs_peak_t peak;
  int rc = cs_peak_find(root, device, &peak, &at_peak);
  if (rc == 0) {
    cs_sites_sort(&at_peak);
    char bytes[64];
    cs_format_bytes(peak.bytes, bytes, sizeof bytes);
    printf("top allocation sites at the trace's peak (%s live after event %zu of %zu):\n", bytes, peak.after,
           peak.events);
    cs_summary_sites(&at_peak, top);
  }
  cs_sites_free(&at_peak);
  return rc;
}

static void cs_summary_totals(const cs_summary_blocks_t *b) {
  uint64_t blocks = 0, bytes = 0;
  for (size_t i = 0; i < b->live.count; i++) {
    blocks += b->live.totals[i].blocks;
    bytes += b->live.totals[i].bytes;
  }
  char text[64], rounding[64], gaps[64];
  cs_format_bytes(bytes, text, sizeof text);
  printf("blocks never freed: %llu block%s, %s\n", (unsigned long long)blocks, cs_plural(blocks), text);
  cs_format_bytes(b->rounding + b->gaps, text, sizeof text);
  cs_format_bytes(b->rounding, rounding, sizeof rounding);
  cs_format_bytes(b->gaps, gaps, sizeof gaps);
  printf("free bytes inside segments: %s: rounding %s, gaps %s\n", text, rounding, gaps);
}

static int cs_summary_device(const cJSON *root, int device, uint64_t top) {
  printf("\ndevice %d\n", device);
  cs_summary_blocks_t blocks = {.rounding = 0, .gaps = 0};
  cs_sites_init(&blocks.live);
  int rc = cs_summary_table(root, device);
  if (rc == 0) rc = cs_summary_walk(root, device, &blocks);
  if (rc == 0) {
    cs_sites_sort(&blocks.live);
    printf("top allocation sites by live bytes:\n");
    cs_summary_sites(&blocks.live, top);
    rc = cs_summary_peak(root, device, top);
  }
  if (rc == 0) cs_summary_totals(&blocks);
  cs_sites_free(&blocks.live);
  return rc;
}

int cs_cli_summary(int argc, char **argv) {
  uint64_t top = CS_SUMMARY_TOP_DEFAULT;
  int status = cs_cli_count_options(cs_summary_name, cs_summary_help, argc, argv, "top", CS_SUMMARY_TOP_MAX,
                                    &top);
  if (status >= 0) return status;
  if (!cs_cli_operands(cs_summary_name, argc, argv, 1, "FILE")) return CS_CLI_USAGE;
  const char *path = argv[optind];
  cJSON *root = cs_load_snapshot(path, NULL);
  if (root == NULL) return CS_CLI_FAIL;
  int devices = cs_view_device_count(root);
  cs_summary_header(path, root, devices);
  int rc = 0;
  for (int d = 0; rc == 0 && d < devices; d++) {
    if (cs_summary_device_used(root, d)) rc = cs_summary_device(root, d, top);
  }
  cJSON_Delete(root);
  if (rc != 0) {
    cs_cli_error(cs_summary_name, "out of host memory");
    return CS_CLI_FAIL;
  }
  return CS_CLI_OK;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "snapshot/leaks.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_format.h"
#include "common/cs_log.h"
#include "snapshot/stack_site.h"

typedef struct cs_leak_site_s {
  cs_frame_t frame; /* the site; name NULL: no stack, or no symbolizer to name it */
  uint64_t bytes;
  uint64_t blocks;
} cs_leak_site_t;

static const cs_frame_t cs_leak_no_site = {.name = NULL, .filename = "??", .line = 0};

static cs_frame_t cs_leak_site_of(const cs_intern_t *intern, cs_symbolizer_t *sym, uint32_t stack_id) {
  size_t n = 0;
  const uintptr_t *pcs = stack_id ? cs_intern_get(intern, stack_id, &n) : NULL;
  if (pcs == NULL || n == 0 || sym == NULL) return cs_leak_no_site;
  return cs_stack_site(sym, pcs, n);
}

/* Frames of one symbolizer: equal names are often one string, but not always (a Python frame's). */
static bool cs_leak_same_site(const cs_frame_t *a, const cs_frame_t *b) {
  if (a->name == NULL || b->name == NULL) return a->name == b->name;
  return a->line == b->line && strcmp(a->name, b->name) == 0 && strcmp(a->filename, b->filename) == 0;
}

static int cs_leak_site_cmp(const void *x, const void *y) {
  const cs_leak_site_t *a = x, *b = y;
  return (a->bytes < b->bytes) - (a->bytes > b->bytes); /* most bytes first */
}

/* A live allocation the report counts: a block of a segment, or memory passed through and not
 * drawn (physical VMM handles, reservations, pinned host memory). */
typedef struct cs_leak_item_s {
  int kind;          /* -1: the cache's */
  uint64_t bytes;
  uint32_t stack_id;
} cs_leak_item_t;

/* One paragraph: the cache's blocks (kind -1), or one kind passed through. */
static void cs_leak_report_kind(const cs_leak_item_t *items, size_t n, int kind, const cs_intern_t *intern,
                                cs_symbolizer_t *sym) {
  uint64_t blocks = 0, bytes = 0;
  for (size_t i = 0; i < n; i++)
    if (items[i].kind == kind) {
      blocks++;
      bytes += items[i].bytes;
    }
  if (blocks == 0) return;
  char total[32];
  cs_format_size(bytes, total, sizeof total);

  /* group the live blocks by site: a few hundred distinct sites at most, so a plain array */
  cs_leak_site_t *sites = calloc(blocks, sizeof *sites);
  size_t count = 0;
  for (size_t i = 0; sites && i < n; i++) {
    if (items[i].kind != kind) continue;
    cs_frame_t site = cs_leak_site_of(intern, sym, items[i].stack_id);
    size_t j = 0;
    while (j < count && !cs_leak_same_site(&sites[j].frame, &site)) j++;
    if (j == count) sites[count++] = (cs_leak_site_t){.frame = site};
    sites[j].bytes += items[i].bytes;
    sites[j].blocks++;
  }
  bool named = sites && count > 0 && !(count == 1 && sites[0].frame.name == NULL);
  const char *hint = named ? "; top allocation sites by bytes:" : " (CUDASNAP_STACKS=all shows where)";
  if (kind < 0)
    cs_log_info("%llu block%s (%s) never freed%s", (unsigned long long)blocks, blocks == 1 ? "" : "s", total, hint);
  else
    cs_log_info("passed through, %s: %llu allocation%s (%s) never freed%s",
                cs_passthrough_kind_name((cs_passthrough_kind_t)kind), (unsigned long long)blocks, blocks == 1 ? "" : "s",
                total, hint);
  if (named) {
    qsort(sites, count, sizeof *sites, cs_leak_site_cmp);
    for (size_t i = 0; i < count && i < CS_LEAK_TOP_SITES; i++) {
      char size[32];
      cs_format_size(sites[i].bytes, size, sizeof size);
      const cs_frame_t f = sites[i].frame;
      if (f.name == NULL) {
        /* blocks allocated while recording was off (cudasnap_record_history) or past the stack
           table's bound: say why there is no site rather than name a non-site */
        cs_log_info("  %s in %llu block%s: (no stack: allocated before recording began or with stacks off)",
                    size, (unsigned long long)sites[i].blocks, sites[i].blocks == 1 ? "" : "s");
      } else {
        cs_log_info("  %s in %llu block%s: %s (%s:%d)", size, (unsigned long long)sites[i].blocks,
                    sites[i].blocks == 1 ? "" : "s", f.name, f.filename, f.line);
      }
    }
  }
  free(sites);
}

void cs_leak_report(const cs_snap_state_t *s, const cs_intern_t *intern, cs_symbolizer_t *sym) {
  size_t n = 0;
  cs_leak_item_t *items = malloc((s->block_count + s->other_count + 1) * sizeof *items);
  if (!items) return;
  for (size_t g = 0; g < s->segment_count; g++) {
    const cs_snap_segment_t *seg = &s->segments[g];
    for (size_t i = seg->first_block; i < seg->first_block + seg->block_count; i++) {
      const cs_snap_block_t *b = &s->blocks[i];
      if (b->state == CS_BLOCK_ALLOCATED)
        items[n++] = (cs_leak_item_t){.kind = seg->kind, .bytes = b->requested, .stack_id = b->stack_id};
    }
  }
  for (size_t i = 0; i < s->other_count; i++)
    items[n++] = (cs_leak_item_t){.kind = (int)s->others[i].kind, .bytes = s->others[i].size,
                                  .stack_id = s->others[i].stack_id};
  for (int kind = -1; kind < CS_PASSTHROUGH_KINDS; kind++) cs_leak_report_kind(items, n, kind, intern, sym);
  free(items);
}

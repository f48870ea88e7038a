/* The out-of-memory answer (contract in analysis/oom.h). */
#include "analysis/oom.h"

#include <inttypes.h>
#include <string.h>

#include "analysis/device_blocks.h"
#include "analysis/snapview.h"
#include "common/cs_format.h"
#include "common/cs_saturate.h"

static bool cs_oom_is(const cs_doc_t *doc, cs_val_t entry, const char *action) {
  const char *a = cs_view_str_key(doc, entry, CS_KEY_ACTION);
  return a != NULL && strcmp(a, action) == 0;
}

/* Entries after the OOM that change the cache's blocks or segments (an oom or a snapshot mark
 * changes none), and what their segment events added to the reserved bytes since. */
static void cs_oom_after(const cs_doc_t *doc, cs_val_t trace, cs_oom_t *o, int64_t *reserved_since) {
  size_t n = cs_doc_len(doc, trace);
  for (size_t i = o->index + 1; i < n; i++) {
    cs_val_t entry = cs_doc_at(doc, trace, i);
    const char *a = cs_view_str_key(doc, entry, CS_KEY_ACTION);
    if (a == NULL || strcmp(a, "oom") == 0 || strcmp(a, "snapshot") == 0) continue;
    o->events_after++;
    int64_t size;
    if (!cs_view_int_key(doc, entry, CS_KEY_SIZE, &size)) continue;
    int sign = cs_view_segment_sign(a); /* held at the int64 limits, as rank_summary.c's replay */
    if (sign > 0) *reserved_since = cs_add_sat_i64(*reserved_since, size);
    else if (sign < 0) *reserved_since = cs_sub_sat_i64(*reserved_since, size);
  }
}

/* The last oom entry: the latest by time over the devices, else the last device's last. */
static void cs_oom_last(const cs_doc_t *doc, cs_oom_t *o) {
  int devices = cs_view_device_count(doc);
  for (int d = 0; d < devices; d++) {
    cs_val_t trace = cs_view_trace(doc, d);
    size_t n = cs_val_is_array(trace) ? cs_doc_len(doc, trace) : 0;
    for (size_t i = 0; i < n; i++) {
      cs_val_t entry = cs_doc_at(doc, trace, i);
      if (!cs_oom_is(doc, entry, "oom")) continue;
      o->count++;
      int64_t t;
      if (!cs_view_int_key(doc, entry, CS_KEY_TIME_US, &t)) t = -1;
      if (o->found && t < o->time_us) continue;
      o->found = true;
      o->device = d;
      o->index = i;
      o->time_us = t;
    }
  }
}

/* The cudasnap.memory figures of a device, CS_VAL_ABSENT if none. */
static cs_val_t cs_oom_memory(const cs_doc_t *doc, int device) {
  cs_val_t memory = cs_doc_get(doc, cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP), "memory");
  size_t n = cs_val_is_container(memory) ? cs_doc_len(doc, memory) : 0;
  const cs_val_t *items = n ? cs_doc_items(doc, memory) : NULL;
  for (size_t i = 0; i < n; i++) {
    int64_t d = -1;
    if (cs_view_int_key(doc, items[i], CS_KEY_DEVICE, &d) && d == device) return items[i];
  }
  return CS_VAL_ABSENT;
}

/* The cache's own segments: no cudasnap.kind, or "cached" (export/kinds.c reads it the same way). */
static bool cs_oom_cache_segment(const cs_doc_t *doc, cs_val_t segment) {
  const char *kind = cs_view_str(doc, cs_doc_get_key(doc, segment, CS_KEY_CUDASNAP), "kind");
  return kind == NULL || strcmp(kind, "cached") == 0;
}

static void cs_oom_cache(const cs_doc_t *doc, cs_oom_t *o) {
  cs_val_t segments = cs_view_segments(doc);
  size_t n = cs_val_is_container(segments) ? cs_doc_len(doc, segments) : 0;
  for (size_t i = 0; i < n; i++) {
    cs_val_t seg = cs_doc_at(doc, segments, i);
    if (cs_view_segment_device(doc, seg) != o->device || !cs_oom_cache_segment(doc, seg)) continue;
    cs_view_blocks_t it;
    cs_view_block_t b;
    cs_view_blocks_begin(&it, doc, seg);
    while (cs_view_blocks_next(&it, &b)) {
      uint64_t size = (uint64_t)b.size;
      o->reserved += size;
      if (b.state == CS_VIEW_INACTIVE) {
        o->cached_free += size;
        if (size > o->largest_free) o->largest_free = size;
      } else {
        o->allocated += size;
      }
    }
  }
}

static int cs_oom_holders(const cs_doc_t *doc, cs_oom_t *o) {
  cs_device_blocks_t blocks;
  if (cs_device_blocks(doc, o->device, &blocks) != 0) return -1;
  cs_sites_sort(&blocks.live);
  for (size_t i = 0; i < blocks.live.count && o->nholders < CS_OOM_HOLDERS; i++)
    o->holders[o->nholders++] = blocks.live.totals[i];
  cs_device_blocks_free(&blocks);
  return 0;
}

int cs_oom_find(const cs_doc_t *doc, cs_oom_t *o) {
  *o = (cs_oom_t){.time_us = -1, .site = {.frames = CS_VAL_ABSENT}};
  cs_oom_last(doc, o);
  if (!o->found) return 0;
  cs_val_t trace = cs_view_trace(doc, o->device);
  cs_val_t entry = cs_doc_at(doc, trace, o->index);
  int64_t v;
  if (cs_view_int_key(doc, entry, CS_KEY_SIZE, &v) && v >= 0) o->requested = (uint64_t)v;
  if (!cs_view_int_key(doc, entry, CS_KEY_STREAM, &o->stream)) o->stream = 0;
  o->free_known = cs_view_int_key(doc, entry, CS_KEY_DEVICE_FREE, &v) && v >= 0;
  if (o->free_known) o->driver_free = (uint64_t)v;
  o->site = cs_site_of(doc, cs_doc_get_key(doc, entry, CS_KEY_FRAMES));
  o->pytorch = !cs_val_is_dict(cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP));
  cs_val_t memory = cs_oom_memory(doc, o->device);
  o->total_known = cs_view_int(doc, memory, "driver_total", &v) && v > 0;
  if (o->total_known) o->driver_total = (uint64_t)v;
  int64_t reserved_since = 0;
  cs_oom_after(doc, trace, o, &reserved_since);
  cs_oom_cache(doc, o);
  /* the reserved bytes at the failure: the segment events since undone (exact while the trace
   * holds them; the blocks inside are the snapshot's) */
  int64_t reserved_then = cs_sub_sat_i64((int64_t)o->reserved, reserved_since);
  o->reserved_then = reserved_then > 0 ? (uint64_t)reserved_then : 0;
  if (o->total_known && o->free_known && o->driver_total >= o->driver_free + o->reserved_then)
    o->outside = o->driver_total - o->driver_free - o->reserved_then;
  if (o->cached_free >= o->requested && o->largest_free < o->requested) o->verdict = CS_OOM_FRAGMENTED;
  else if (o->total_known && o->free_known && o->outside + o->driver_free >= o->requested &&
           o->outside >= o->requested / 2)
    o->verdict = CS_OOM_OUTSIDE;
  else if (o->total_known) o->verdict = CS_OOM_EXHAUSTED;
  else o->verdict = CS_OOM_UNDECIDED;
  return cs_oom_holders(doc, o);
}

void cs_oom_headline(const cs_oom_t *o, char *buf, size_t len) {
  char asked[32], free_text[32], total[32];
  cs_format_size_torch(o->requested, asked, sizeof asked);
  cs_format_size_torch(o->driver_free, free_text, sizeof free_text);
  cs_format_size_torch(o->driver_total, total, sizeof total);
  if (!o->free_known) snprintf(buf, len, "Tried to allocate %s; the driver's free bytes were not recorded", asked);
  else if (o->total_known) snprintf(buf, len, "Tried to allocate %s; %s free of %s", asked, free_text, total);
  else snprintf(buf, len, "Tried to allocate %s; %s free", asked, free_text);
}

void cs_oom_verdict_text(const cs_oom_t *o, char *buf, size_t len) {
  char asked[32], a[32], b[32];
  cs_format_size_torch(o->requested, asked, sizeof asked);
  switch (o->verdict) {
  case CS_OOM_FRAGMENTED:
    cs_format_size_torch(o->cached_free, a, sizeof a);
    cs_format_size_torch(o->largest_free, b, sizeof b);
    snprintf(buf, len,
             "fragmentation: %s free inside the cache's segments, but no free block of %s (the largest is %s); "
             "%s=expandable_segments:True lets segments grow instead, or max_split_size_mb keeps large blocks "
             "from being split",
             a, asked, b, o->pytorch ? "PYTORCH_CUDA_ALLOC_CONF" : "CUDASNAP_ALLOC_CONF");
    break;
  case CS_OOM_OUTSIDE:
    cs_format_size_torch(o->outside, a, sizeof a);
    snprintf(buf, len,
             "memory held outside the cache: %s of the device is neither free nor the cache's (other kinds "
             "of memory, the CUDA context, other processes on the GPU: the reconciliation below says which)",
             a);
    break;
  case CS_OOM_EXHAUSTED:
    if (o->events_after == 0) {
      cs_format_size_torch(o->allocated, a, sizeof a);
      snprintf(buf, len, "the device is full: the cache holds %s in allocated blocks; the sites that hold most:", a);
    } else {
      cs_format_size_torch(o->reserved_then, a, sizeof a);
      snprintf(buf, len, "the device is full: the cache held %s at the OOM; the sites that hold most at the snapshot:", a);
    }
    break;
  case CS_OOM_UNDECIDED:
    cs_format_size_torch(o->allocated, a, sizeof a);
    snprintf(buf, len,
             "not fragmentation: the cache had no %s free; it holds %s in allocated blocks (the snapshot has no driver "
             "total, so memory outside the cache is not known); the sites that hold most:",
             asked, a);
    break;
  }
}

void cs_oom_write(FILE *out, const cs_doc_t *doc, const cs_oom_t *o, const char *indent, size_t callers) {
  char text[1024], a[32], b[32], c[32];
  cs_oom_headline(o, text, sizeof text);
  fprintf(out, "%sout of memory on device %d, stream %" PRId64 ": %s\n", indent, o->device, o->stream, text);
  cs_site_format(&o->site, text, sizeof text);
  fprintf(out, "%s  asked by %s\n", indent, text);
  cs_val_t frames = o->site.frames;
  size_t caller = o->site.name == NULL || cs_val_absent(frames) ? SIZE_MAX : cs_site_next_caller(doc, frames, o->site.frame);
  for (size_t k = 0; caller != SIZE_MAX && k < callers; k++, caller = cs_site_next_caller(doc, frames, caller)) {
    cs_site_t s = cs_site_of_frame(doc, cs_doc_at(doc, frames, caller));
    cs_site_format(&s, text, sizeof text);
    fprintf(out, "%s      from %s\n", indent, text);
  }
  cs_format_size_torch(o->reserved, a, sizeof a);
  cs_format_size_torch(o->cached_free, b, sizeof b);
  cs_format_size_torch(o->largest_free, c, sizeof c);
  if (o->events_after == 0) {
    fprintf(out, "%s  the cache: %s reserved, %s of it reserved but unallocated, largest free block %s\n", indent, a,
            b, c);
  } else {
    char then[32];
    cs_format_size_torch(o->reserved_then, then, sizeof then);
    fprintf(out,
            "%s  the cache: %s reserved at the OOM; at the snapshot, %zu event%s later: %s reserved, %s of it "
            "reserved but unallocated, largest free block %s\n",
            indent, then, o->events_after, o->events_after == 1 ? "" : "s", a, b, c);
  }
  if (o->total_known && o->free_known) {
    cs_format_size_torch(o->outside, a, sizeof a);
    fprintf(out, "%s  outside the cache: %s (the driver's used bytes less the cache's reserved)\n", indent, a);
  }
  cs_oom_verdict_text(o, text, sizeof text);
  fprintf(out, "%s  verdict: %s\n", indent, text);
  if (o->verdict == CS_OOM_EXHAUSTED || o->verdict == CS_OOM_UNDECIDED) {
    for (size_t i = 0; i < o->nholders; i++) {
      cs_format_size_torch(o->holders[i].bytes, a, sizeof a);
      cs_site_format(&o->holders[i].site, text, sizeof text);
      fprintf(out, "%s    %s in %" PRIu64 " block%s: %s\n", indent, a, o->holders[i].blocks,
              o->holders[i].blocks == 1 ? "" : "s", text);
    }
  }
  if (o->count > 1) fprintf(out, "%s  (the last of %" PRIu64 " OOMs in the trace)\n", indent, o->count);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The out-of-memory answer's words (contract in analysis/oom.h; its figures: oom.c). Every
 * sentence is whole, whatever is known: the views that show one line (the report's banner,
 * Perfetto's OOM event) show the same sentence `summary` does. */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "analysis/oom.h"
#include "common/cs_format.h"
#include "common/cs_text.h"

/* Appends to a fixed buffer; cut short where it is full. */
typedef struct cs_oom_buf_s {
  char *buf;
  size_t len, used;
} cs_oom_buf_t;

__attribute__((format(printf, 2, 3))) static void cs_oom_put(cs_oom_buf_t *b, const char *fmt, ...) {
  if (b->used + 1 >= b->len) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->buf + b->used, b->len - b->used, fmt, ap);
  va_end(ap);
  if (n > 0) b->used = b->used + (size_t)n < b->len ? b->used + (size_t)n : b->len - 1;
}

static const char *cs_oom_size(uint64_t bytes, char *buf, size_t len) {
  cs_format_size_torch(bytes, buf, len);
  return buf;
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

/* A kind's name as the file has it, safe for a terminal (common/cs_text.h): a file is any text. */
static const char *cs_oom_kind_name(const char *kind, char *buf, size_t len) {
  cs_text_safe(buf, len, kind, strlen(kind));
  return buf;
}

/* "async 6.44 MiB, device 1.00 MiB": the memory passed through live at the OOM, by kind. */
static void cs_oom_kinds(cs_oom_buf_t *b, const cs_oom_t *o) {
  char s[32], name[64];
  for (size_t i = 0; i < o->nkinds; i++)
    cs_oom_put(b, "%s%s %s", i ? ", " : "", cs_oom_kind_name(o->kinds[i].kind, name, sizeof name),
               cs_oom_size(o->kinds[i].bytes, s, sizeof s));
}

/* The end of a verdict about who held the cache: the sites, or that there were none. */
static void cs_oom_sites(cs_oom_buf_t *b, const cs_oom_t *o, cs_oom_sites_t how) {
  if (o->nholders == 0) {
    cs_oom_put(b, "no block of the cache was live then");
    return;
  }
  cs_oom_put(b, "the sites that held most of the cache then:");
  for (size_t i = 0; how == CS_OOM_SITES_INLINE && i < o->nholders; i++) {
    char size[32], where[512];
    cs_site_format(&o->holders[i].site, where, sizeof where);
    cs_oom_size(o->holders[i].bytes, size, sizeof size);
    cs_oom_put(b, "%s %s in %" PRIu64 " block%s by %s", i ? ";" : "", size, o->holders[i].blocks,
               o->holders[i].blocks == 1 ? "" : "s", where);
  }
}

/* What would have made room for a fragmented OOM: the settings cudasnap honours that would have
 * kept those free blocks from being held (oom.c, cs_oom_helps), or that none would have. */
static void cs_oom_settings(cs_oom_buf_t *b, const cs_oom_t *o) {
  char s[32];
  if (o->pytorch) {
    cs_oom_put(b, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets segments grow instead, or max_split_size_mb "
                  "keeps large blocks from being split");
    return;
  }
  bool small = o->helps & CS_OOM_HELPS_IPC_SMALL, large = o->helps & CS_OOM_HELPS_NO_SPLIT_LARGE;
  uint64_t large_free = o->cached_free - o->small_free;
  if (small && large && (o->helps & CS_OOM_HELPS_TOGETHER))
    cs_oom_put(b, "CUDASNAP_ALLOC_CONF=ipc_small:True without split_large:True would have made room for it (every "
                  "request in a segment of its own, given back whole when freed, holds no free block)");
  else if (small && large)
    cs_oom_put(b, "CUDASNAP_ALLOC_CONF=ipc_small:True, or leaving out split_large:True, would have made room for it");
  else if (small)
    cs_oom_put(b, "CUDASNAP_ALLOC_CONF=ipc_small:True would have made room for it (requests of 1 MiB or less get "
                  "segments of their own, given back whole when freed: the %s free inside shared small segments "
                  "would not have been held)", cs_oom_size(o->small_free, s, sizeof s));
  else if (large)
    cs_oom_put(b, "CUDASNAP_ALLOC_CONF without split_large:True would have made room for it (each request over 1 MiB "
                  "gets a segment of its own, given back whole when freed: the %s free inside shared large segments "
                  "would not have been held)", cs_oom_size(large_free, s, sizeof s));
  else
    cs_oom_put(b, "no setting of cudasnap's would have made room for it");
}

void cs_oom_verdict_text(const cs_oom_t *o, cs_oom_sites_t how, char *buf, size_t len) {
  cs_oom_buf_t b = {.buf = buf, .len = len, .used = 0};
  if (len) buf[0] = '\0';
  char asked[32], x[32], y[32];
  cs_format_size_torch(o->requested, asked, sizeof asked);
  switch (o->verdict) {
  case CS_OOM_FRAGMENTED:
    cs_oom_put(&b, "fragmentation: %s free inside the cache's segments, but no free block of %s (the largest is %s); ",
               cs_oom_size(o->cached_free, x, sizeof x), asked, cs_oom_size(o->largest_free, y, sizeof y));
    cs_oom_settings(&b, o);
    break;
  case CS_OOM_OUTSIDE:
    cs_oom_put(&b, "memory held outside the cache: %s of the device is neither free nor the cache's",
               cs_oom_size(o->outside, x, sizeof x));
    if (o->passthrough == 0) {
      cs_oom_put(&b, " (other kinds of memory, the CUDA context, other processes on the GPU)");
    } else if (o->passthrough >= o->outside) {
      cs_oom_put(&b, ": the memory passed through the cache (");
      cs_oom_kinds(&b, o);
      cs_oom_put(&b, ")");
    } else {
      cs_oom_put(&b, ": %s passed through the cache (", cs_oom_size(o->passthrough, x, sizeof x));
      cs_oom_kinds(&b, o);
      cs_oom_put(&b, "), %s else (pools' free reserve, the CUDA context and modules, other processes on the GPU)",
                 cs_oom_size(o->outside - o->passthrough, y, sizeof y));
    }
    break;
  case CS_OOM_EXHAUSTED:
    cs_oom_put(&b, "the device is full: the cache held %s at the OOM", cs_oom_size(o->reserved, x, sizeof x));
    if (o->blocks_known) cs_oom_put(&b, ", %s of it in allocated blocks", cs_oom_size(o->allocated, y, sizeof y));
    if (o->passthrough > 0) {
      cs_oom_put(&b, ", and %s was passed through the cache (", cs_oom_size(o->passthrough, x, sizeof x));
      cs_oom_kinds(&b, o);
      cs_oom_put(&b, ")");
    }
    cs_oom_put(&b, "; ");
    cs_oom_sites(&b, o, how);
    break;
  case CS_OOM_UNDECIDED:
    if (o->blocks_known && o->kind == NULL)
      cs_oom_put(&b, "not fragmentation: the cache had no %s free; it held %s in allocated blocks", asked,
                 cs_oom_size(o->allocated, x, sizeof x));
    else if (o->blocks_known)
      cs_oom_put(&b, "the cache held %s in allocated blocks", cs_oom_size(o->allocated, x, sizeof x));
    else
      cs_oom_put(&b, "the cache held %s at the OOM; its blocks then are not known, so fragmentation cannot be told",
                 cs_oom_size(o->reserved, x, sizeof x));
    cs_oom_put(&b, " (the snapshot has no driver total, so memory outside the cache is not known); ");
    cs_oom_sites(&b, o, how);
    break;
  }
}

void cs_oom_write(FILE *out, const cs_doc_t *doc, const cs_oom_t *o, const char *indent, size_t callers) {
  char text[2048], a[32], b[32], c[32];
  cs_oom_headline(o, text, sizeof text);
  fprintf(out, "%sout of memory on device %d, stream %" PRId64 ": %s\n", indent, o->device, o->stream, text);
  cs_site_format(&o->site, text, sizeof text);
  char kind[64];
  if (o->kind)
    fprintf(out, "%s  asked by %s, for memory passed through the cache (%s)\n", indent, text,
            cs_oom_kind_name(o->kind, kind, sizeof kind));
  else fprintf(out, "%s  asked by %s\n", indent, text);
  cs_val_t frames = o->site.frames;
  bool stack = o->site.name != NULL && !cs_val_absent(frames);
  size_t caller = stack ? cs_site_next_caller(doc, frames, o->site.frame) : SIZE_MAX;
  for (size_t k = 0; caller != SIZE_MAX && k < callers; k++, caller = cs_site_next_caller(doc, frames, caller)) {
    cs_site_t s = cs_site_of_frame(doc, cs_doc_at(doc, frames, caller));
    cs_site_format(&s, text, sizeof text);
    fprintf(out, "%s      from %s\n", indent, text);
  }
  cs_oom_size(o->reserved, a, sizeof a);
  if (o->blocks_known)
    fprintf(out, "%s  the cache at the OOM: %s reserved, %s of it reserved but unallocated, largest free block %s\n",
            indent, a, cs_oom_size(o->cached_free, b, sizeof b), cs_oom_size(o->largest_free, c, sizeof c));
  else
    fprintf(out, "%s  the cache at the OOM: %s reserved; its blocks then are not known (the snapshot is %zu event%s "
            "later, and their figures were not recorded)\n",
            indent, a, o->events_after, o->events_after == 1 ? "" : "s");
  if (o->total_known && o->free_known) {
    cs_oom_buf_t line = {.buf = text, .len = sizeof text, .used = 0};
    cs_oom_put(&line, "outside the cache: %s (the driver's used bytes less the cache's reserved)",
               cs_oom_size(o->outside, a, sizeof a));
    if (o->passthrough > 0) {
      cs_oom_put(&line, ", of which %s passed through the cache (", cs_oom_size(o->passthrough, b, sizeof b));
      cs_oom_kinds(&line, o);
      cs_oom_put(&line, ")");
    }
    fprintf(out, "%s  %s\n", indent, text);
  }
  cs_oom_verdict_text(o, CS_OOM_SITES_BELOW, text, sizeof text);
  fprintf(out, "%s  verdict: %s\n", indent, text);
  if (o->verdict == CS_OOM_EXHAUSTED || o->verdict == CS_OOM_UNDECIDED) {
    for (size_t i = 0; i < o->nholders; i++) {
      cs_site_format(&o->holders[i].site, text, sizeof text);
      fprintf(out, "%s    %s in %" PRIu64 " block%s: %s\n", indent, cs_oom_size(o->holders[i].bytes, a, sizeof a),
              o->holders[i].blocks, o->holders[i].blocks == 1 ? "" : "s", text);
    }
  }
  if (o->count > 1)
    fprintf(out, "%s  (%s %" PRIu64 " OOMs in the trace)\n", indent, o->last ? "the last of" : "one of", o->count);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* A snapshot as a pprof profile (contract in export/pprof.h). The samples, locations and strings
 * are gathered first (they are as many as the distinct stacks, not the trace's entries), then
 * written out message by message. */
#include "export/pprof.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kinds.h"
#include "analysis/live_map.h"
#include "analysis/peak.h"
#include "analysis/phase_lanes.h"
#include "analysis/sites.h"
#include "analysis/snapview.h"
#include "analysis/val_map.h"
#include "export/proto.h"
#include "memviz/site_rule.h"

/* profile.proto's field numbers */
enum {
  CS_PP_SAMPLE_TYPE = 1, CS_PP_SAMPLE = 2, CS_PP_MAPPING = 3, CS_PP_LOCATION = 4, CS_PP_FUNCTION = 5, CS_PP_STRING_TABLE = 6,
  CS_PP_TIME_NANOS = 9, CS_PP_DEFAULT_SAMPLE_TYPE = 14,
};
enum { CS_PP_VALUES = 4 }; /* inuse_objects, inuse_space, alloc_objects, alloc_space */
/* Phases placed per device; more are left out (their allocations get the enclosing phase). */
enum { CS_PP_MAX_SPANS = 1 << 16 };

typedef struct cs_pp_key_s {
  cs_val_t frames;        /* CS_VAL_ABSENT: no stack */
  int64_t device, stream;
  uint32_t kind, phase;   /* string table indexes; phase 0 = none */
} cs_pp_key_t;

typedef struct cs_pp_sample_s {
  cs_pp_key_t key;
  int64_t values[CS_PP_VALUES];
} cs_pp_sample_t;

/* A location: one return address, so one frame, or several where functions were inlined into
 * the last one (cudasnap marks them: cs_frame_inlined), written as one Line each, innermost
 * first, as pprof encodes inlining. */
typedef struct cs_pp_location_s {
  const cs_val_t *frames; /* in the doc's frame list; NULL: "(no stack)" */
  uint32_t count;
  uint32_t next; /* the next location id whose frames hash the same (inlined_index), 0: none */
} cs_pp_location_t;

typedef struct cs_pprof_s {
  const cs_doc_t *doc;
  const char **strings;        /* the string table; [0] = "" */
  size_t nstrings, cap_strings;
  cs_val_map_t string_index;   /* a string's address -> its index: the doc interns its strings */
  cs_pp_location_t *locations; /* location id i + 1 */
  size_t nlocations, cap_locations;
  cs_val_map_t location_index; /* a location of one frame: frame -> location id */
  cs_val_map_t inlined_index;  /* of several: their hash -> the first location id with it */
  cs_val_t *functions;         /* frame of function id i + 1; CS_VAL_NULL = "(no stack)" */
  size_t nfunctions, cap_functions;
  cs_val_map_t function_index; /* frame -> function id */
  cs_pp_sample_t *samples;
  size_t nsamples, cap_samples;
  uint32_t *slots;             /* index + 1 into samples; 0 = empty */
  size_t nslots;               /* a power of two above twice nsamples */
  bool all_frames;             /* keep the frames above each stack's site */
  cs_site_cache_t sites;       /* frame list -> its site's frame, the leaf written */
  bool oom;
} cs_pprof_t;

/* Strings added by address (cs_pp_string): each one object, so that it is one entry. */
static const char cs_pp_no_stack[] = "(no stack)";
static const char cs_pp_device_key[] = "device", cs_pp_stream_key[] = "stream", cs_pp_kind_key[] = "kind",
                  cs_pp_phase_key[] = "phase", cs_pp_mapping_file[] = "cudasnap snapshot", cs_pp_index_unit[] = "index", cs_pp_id_unit[] = "id";

static bool cs_pp_grow(void **items, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t cap2 = *cap ? *cap * 2 : 64;
  while (cap2 < need) cap2 *= 2;
  void *p = realloc(*items, cap2 * size);
  if (p == NULL) return false;
  *items = p;
  *cap = cap2;
  return true;
}

/* The index of s in the string table (added if new); 0 without host memory. */
static uint32_t cs_pp_string(cs_pprof_t *p, const char *s) {
  cs_val_t key = (cs_val_t)(uintptr_t)s;
  uint32_t index;
  if (cs_val_map_get(&p->string_index, key, &index)) return index;
  if (!cs_pp_grow((void **)&p->strings, &p->cap_strings, p->nstrings + 1, sizeof *p->strings) ||
      cs_val_map_put(&p->string_index, key, (uint32_t)p->nstrings) != 0) {
    p->oom = true;
    return 0;
  }
  p->strings[p->nstrings] = s;
  return (uint32_t)p->nstrings++;
}

static uint64_t cs_pp_add_location(cs_pprof_t *p, const cs_val_t *frames, uint32_t count) {
  if (!cs_pp_grow((void **)&p->locations, &p->cap_locations, p->nlocations + 1, sizeof *p->locations)) {
    p->oom = true;
    return 0;
  }
  p->locations[p->nlocations++] = (cs_pp_location_t){.frames = frames, .count = count, .next = 0};
  return p->nlocations;
}

/* Frames are stored once by content (model/doc.h): equal frames are equal words. */
static cs_val_t cs_pp_frames_hash(const cs_val_t *frames, uint32_t count) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint32_t i = 0; i < count; i++) {
    h = (h ^ frames[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
  }
  return h == CS_VAL_ABSENT ? h + 1 : h;
}

/* The location id of frames[0..count) (added if new); 0 without host memory. frames NULL: the
 * "(no stack)" location. */
static uint64_t cs_pp_location(cs_pprof_t *p, const cs_val_t *frames, uint32_t count) {
  uint32_t id;
  if (frames == NULL || count == 1) {
    const cs_val_t key = frames ? frames[0] : CS_VAL_NULL;
    if (cs_val_map_get(&p->location_index, key, &id)) return id;
    uint64_t added = cs_pp_add_location(p, frames, 1);
    if (added != 0 && cs_val_map_put(&p->location_index, key, (uint32_t)added) != 0) p->oom = true;
    return p->oom ? 0 : added;
  }
  const cs_val_t hash = cs_pp_frames_hash(frames, count);
  uint32_t first = 0;
  if (cs_val_map_get(&p->inlined_index, hash, &first)) {
    for (id = first; id != 0; id = p->locations[id - 1].next) {
      const cs_pp_location_t *l = &p->locations[id - 1];
      if (l->count == count && memcmp(l->frames, frames, count * sizeof *frames) == 0) return id;
    }
  }
  uint64_t added = cs_pp_add_location(p, frames, count);
  if (added == 0) return 0;
  p->locations[added - 1].next = first; /* the chain of this hash, newest first */
  if (cs_val_map_put(&p->inlined_index, hash, (uint32_t)added) != 0) {
    p->oom = true;
    return 0;
  }
  return added;
}

/* The function id of a frame (added if new); 0 without host memory. */
static uint64_t cs_pp_function(cs_pprof_t *p, cs_val_t frame) {
  uint32_t id;
  if (cs_val_map_get(&p->function_index, frame, &id)) return id;
  if (!cs_pp_grow((void **)&p->functions, &p->cap_functions, p->nfunctions + 1, sizeof *p->functions) ||
      cs_val_map_put(&p->function_index, frame, (uint32_t)p->nfunctions + 1) != 0) {
    p->oom = true;
    return 0;
  }
  p->functions[p->nfunctions++] = frame;
  return p->nfunctions;
}

/* ---- samples, by key ------------------------------------------------------------------------ */

static size_t cs_pp_home(const cs_pprof_t *p, const cs_pp_key_t *k) {
  uint64_t h = k->frames;
  h = (h ^ (uint64_t)k->device) * 0x9e3779b97f4a7c15ull;
  h = (h ^ (uint64_t)k->stream) * 0x9e3779b97f4a7c15ull;
  h = (h ^ ((uint64_t)k->kind << 32 | k->phase)) * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 32) & (p->nslots - 1);
}

static bool cs_pp_key_eq(const cs_pp_key_t *a, const cs_pp_key_t *b) {
  return a->frames == b->frames && a->device == b->device && a->stream == b->stream && a->kind == b->kind &&
         a->phase == b->phase;
}

static bool cs_pp_rehash(cs_pprof_t *p) {
  size_t nslots = p->nslots ? p->nslots * 2 : 1024;
  uint32_t *slots = calloc(nslots, sizeof *slots);
  if (slots == NULL) return false;
  free(p->slots);
  p->slots = slots;
  p->nslots = nslots;
  for (size_t i = 0; i < p->nsamples; i++) {
    size_t s = cs_pp_home(p, &p->samples[i].key);
    while (p->slots[s]) s = (s + 1) & (nslots - 1);
    p->slots[s] = (uint32_t)i + 1;
  }
  return true;
}

/* Add one block or allocation to the sample of its key: value `bytes` at index first + 1, one
 * object at first. */
static void cs_pp_add(cs_pprof_t *p, const cs_pp_key_t *key, int first, int64_t bytes) {
  if (p->oom) return;
  if ((p->nsamples + 1) * 2 > p->nslots && !cs_pp_rehash(p)) {
    p->oom = true;
    return;
  }
  size_t s = cs_pp_home(p, key);
  while (p->slots[s] && !cs_pp_key_eq(&p->samples[p->slots[s] - 1].key, key)) s = (s + 1) & (p->nslots - 1);
  if (!p->slots[s]) {
    if (p->nsamples >= UINT32_MAX - 1 ||
        !cs_pp_grow((void **)&p->samples, &p->cap_samples, p->nsamples + 1, sizeof *p->samples)) {
      p->oom = true;
      return;
    }
    p->samples[p->nsamples] = (cs_pp_sample_t){.key = *key};
    p->slots[s] = (uint32_t)++p->nsamples;
  }
  cs_pp_sample_t *sample = &p->samples[p->slots[s] - 1];
  sample->values[first] += 1;
  sample->values[first + 1] += bytes;
}

/* ---- one device ------------------------------------------------------------------------------ */

/* What one device's walk needs. */
typedef struct cs_pp_device_s {
  int device;
  cs_kinds_t kinds;
  cs_val_t trace;
  size_t entries;
  uint32_t *phase_of;  /* per trace entry: the string index of its innermost phase, 0 = none */
  cs_val_map_t alloc_of; /* address -> 1 + the index of the last `alloc` there (within the cut) */
} cs_pp_device_t;

/* Each entry's innermost open phase: the latest started of the spans open at it (a span covers
 * the entries [start_state, end_state)) in the entry's own lane: its thread's (analysis/phase_lanes.h). */
static int cs_pp_phases(cs_pprof_t *p, cs_pp_device_t *d) {
  cs_phase_span_t *spans = malloc(CS_PP_MAX_SPANS * sizeof *spans);
  size_t nspans = 0, left_out = 0;
  cs_phase_lanes_t lanes = {NULL, 0, NULL};
  if (spans == NULL || cs_phases_spans(p->doc, d->device, spans, CS_PP_MAX_SPANS, &nspans, &left_out, &lanes) != 0) {
    free(spans);
    return -1;
  }
  size_t *open = nspans ? malloc(nspans * sizeof *open) : NULL;
  uint32_t *names = nspans ? malloc(nspans * sizeof *names) : NULL;
  int rc = nspans == 0 || (open && names) ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < nspans; i++) names[i] = cs_pp_string(p, spans[i].name);
  size_t next = 0, nopen = 0;
  for (size_t i = 0; rc == 0 && i < d->entries; i++) {
    while (next < nspans && spans[next].start_state <= i) open[nopen++] = next++;
    size_t kept = 0;
    for (size_t k = 0; k < nopen; k++)
      if (spans[open[k]].end_state > i) open[kept++] = open[k];
    nopen = kept;
    int64_t thread = nopen ? cs_phases_entry_thread(p->doc, cs_doc_at(p->doc, d->trace, i)) : 0;
    size_t own = nopen ? cs_phase_lanes_own(&lanes, thread) : SIZE_MAX;
    size_t k = nopen;
    while (k > 0 && spans[open[k - 1]].lane != own) k--;
    d->phase_of[i] = k ? names[open[k - 1]] : 0;
  }
  cs_phase_lanes_free(&lanes);
  free(names);
  free(open);
  free(spans);
  return rc;
}

static cs_pp_key_t cs_pp_entry_key(cs_pprof_t *p, const cs_pp_device_t *d, size_t i, int64_t addr) {
  cs_val_t entry = cs_doc_at(p->doc, d->trace, i);
  cs_val_t frames = cs_doc_get_key(p->doc, entry, CS_KEY_FRAMES);
  int64_t stream;
  if (!cs_view_int_key(p->doc, entry, CS_KEY_STREAM, &stream)) stream = 0;
  return (cs_pp_key_t){.frames = cs_val_is_array(frames) ? frames : CS_VAL_ABSENT, .device = d->device,
                       .stream = stream, .kind = cs_pp_string(p, cs_kinds_of(&d->kinds, addr)),
                       .phase = d->phase_of[i]};
}

/* The alloc samples, and where the last alloc at each address before `cut` is. */
static int cs_pp_allocs(cs_pprof_t *p, cs_pp_device_t *d, size_t cut) {
  for (size_t i = 0; i < d->entries && !p->oom; i++) {
    cs_val_t entry = cs_doc_at(p->doc, d->trace, i);
    const char *action = cs_view_str_key(p->doc, entry, CS_KEY_ACTION);
    int64_t addr, size;
    if (action == NULL || strcmp(action, "alloc") != 0 || !cs_view_int_key(p->doc, entry, CS_KEY_ADDR, &addr) ||
        !cs_view_int_key(p->doc, entry, CS_KEY_SIZE, &size) || size < 0)
      continue;
    cs_pp_key_t key = cs_pp_entry_key(p, d, i, addr);
    cs_pp_add(p, &key, 2, size);
    /* an address is a map key; the one word that is no key (CS_VAL_ABSENT, 24) is no block's */
    if (i < cut && (cs_val_t)addr != CS_VAL_ABSENT && cs_val_map_put(&d->alloc_of, (cs_val_t)addr, (uint32_t)i + 1) != 0)
      p->oom = true;
  }
  return p->oom ? -1 : 0;
}

/* The in-use key of a block at addr with these frames: the labels of the alloc that made it
 * when the trace has one, else its segment's. */
static cs_pp_key_t cs_pp_block_key(cs_pprof_t *p, const cs_pp_device_t *d, int64_t addr, cs_val_t frames) {
  uint32_t at;
  if ((cs_val_t)addr != CS_VAL_ABSENT && cs_val_map_get(&d->alloc_of, (cs_val_t)addr, &at)) {
    cs_pp_key_t key = cs_pp_entry_key(p, d, at - 1, addr);
    key.frames = frames;
    return key;
  }
  const cs_kind_range_t *r = cs_kinds_find(&d->kinds, addr);
  return (cs_pp_key_t){.frames = frames, .device = d->device, .stream = r ? r->stream : 0,
                       .kind = cs_pp_string(p, r ? r->kind : d->kinds.uncovered)};
}

/* In use at the snapshot: the active_allocated blocks of the device's segments. */
static void cs_pp_inuse_snapshot(cs_pprof_t *p, const cs_pp_device_t *d) {
  cs_view_device_blocks_t it;
  cs_view_block_t b;
  cs_view_device_blocks_begin(&it, p->doc, d->device);
  while (!p->oom && cs_view_device_blocks_next(&it, &b)) {
    if (b.state != CS_VIEW_ALLOCATED) continue;
    cs_pp_key_t key = cs_pp_block_key(p, d, b.addr, b.frames);
    /* a segment's kind wins over the address rule: it is the block's own */
    const cs_kind_range_t *r = cs_kinds_find(&d->kinds, b.addr);
    if (r) key.kind = cs_pp_string(p, r->kind);
    cs_pp_add(p, &key, 0, b.requested);
  }
}

/* In use at the peak: the replay's live blocks after `after` entries. */
static int cs_pp_inuse_peak(cs_pprof_t *p, const cs_pp_device_t *d, size_t after) {
  cs_live_map_t live;
  cs_live_map_init(&live);
  int rc = cs_peak_initial(p->doc, d->device, &live);
  for (size_t i = 0; rc == 0 && i < after; i++) rc = cs_peak_apply(p->doc, cs_doc_at(p->doc, d->trace, i), &live, NULL);
  for (size_t s = 0; rc == 0 && s < live.nslots && !p->oom; s++) {
    const cs_live_t *b = &live.slots[s];
    if (!b->used) continue;
    cs_pp_key_t key = cs_pp_block_key(p, d, b->addr, b->frames);
    cs_pp_add(p, &key, 0, (int64_t)b->bytes);
  }
  cs_live_map_free(&live);
  return rc;
}

static int cs_pp_device(cs_pprof_t *p, int device, bool at_peak) {
  cs_pp_device_t d = {.device = device, .trace = cs_view_trace(p->doc, device)};
  cs_val_map_init(&d.alloc_of);
  d.entries = cs_val_is_array(d.trace) ? cs_doc_len(p->doc, d.trace) : 0;
  if (d.entries >= UINT32_MAX) return -1; /* alloc_of holds entry indexes in 32 bits */
  int rc = cs_kinds_init(&d.kinds, p->doc, device);
  d.phase_of = d.entries ? calloc(d.entries, sizeof *d.phase_of) : NULL;
  if (rc == 0 && d.entries && d.phase_of == NULL) rc = -1;
  if (rc == 0) rc = cs_pp_phases(p, &d);
  size_t cut = d.entries;
  if (rc == 0 && at_peak) {
    cs_sites_t unused;
    cs_sites_init(&unused);
    cs_peak_t peak;
    rc = cs_peak_find(p->doc, device, &peak, &unused);
    cs_sites_free(&unused);
    cut = peak.after;
  }
  if (rc == 0) rc = cs_pp_allocs(p, &d, cut);
  if (rc == 0 && at_peak) rc = cs_pp_inuse_peak(p, &d, cut);
  else if (rc == 0) cs_pp_inuse_snapshot(p, &d);
  free(d.phase_of);
  cs_val_map_free(&d.alloc_of);
  cs_kinds_free(&d.kinds);
  return rc != 0 || p->oom ? -1 : 0;
}

/* ---- writing --------------------------------------------------------------------------------- */

typedef struct cs_pp_out_s {
  cs_pb_t top;  /* top-level fields not yet handed to the sink */
  cs_pb_t msg, inner, packed; /* scratch */
  cs_sink_t sink;
  int error;
} cs_pp_out_t;

static void cs_pp_flush(cs_pp_out_t *o, bool all) {
  if (o->top.error) o->error = o->error ? o->error : ENOMEM;
  if (o->error == 0 && o->top.len > 0 && (all || o->top.len >= (1u << 16)))
    o->error = o->sink.write(o->sink.ctx, o->top.data, o->top.len);
  if (all || o->top.len >= (1u << 16)) cs_pb_clear(&o->top);
}

static void cs_pp_value_type(cs_pprof_t *p, cs_pp_out_t *o, uint32_t field, const char *type, const char *unit) {
  cs_pb_clear(&o->msg);
  cs_pb_uint(&o->msg, 1, cs_pp_string(p, type));
  cs_pb_uint(&o->msg, 2, cs_pp_string(p, unit));
  cs_pb_bytes(&o->top, field, o->msg.data, o->msg.len);
}

static void cs_pp_label(cs_pp_out_t *o, uint32_t key, uint32_t str, int64_t num, uint32_t unit) {
  cs_pb_clear(&o->inner);
  cs_pb_uint(&o->inner, 1, key);
  cs_pb_uint_nz(&o->inner, 2, str);
  cs_pb_uint_nz(&o->inner, 3, (uint64_t)num);
  cs_pb_uint_nz(&o->inner, 4, unit);
  cs_pb_bytes(&o->msg, 3, o->inner.data, o->inner.len);
}

static void cs_pp_write_sample(cs_pprof_t *p, cs_pp_out_t *o, const cs_pp_sample_t *s) {
  cs_pb_clear(&o->msg);
  cs_pb_clear(&o->packed);
  size_t n = cs_val_absent(s->key.frames) ? 0 : cs_doc_len(p->doc, s->key.frames);
  /* The leaf is the frame the site rule names, as in every other view: the allocator, the
   * unwinder and the libraries above it say only how, not where. */
  size_t first = 0;
  if (n > 0 && !p->all_frames) {
    cs_site_t site = cs_site_cache_of(&p->sites, s->key.frames);
    if (site.name != NULL && site.frame < n) first = site.frame;
  }
  const cs_val_t *frames = n > 0 ? cs_doc_items(p->doc, s->key.frames) : NULL;
  for (size_t i = first, last; i < n; i = last + 1) {
    /* the frames of one address: those inlined, and the one they were inlined into */
    for (last = i; last + 1 < n && cs_frame_inlined(p->doc, frames[last]); last++) continue;
    cs_pb_varint(&o->packed, cs_pp_location(p, &frames[i], (uint32_t)(last + 1 - i)));
  }
  if (n == 0) cs_pb_varint(&o->packed, cs_pp_location(p, NULL, 1));
  cs_pb_bytes(&o->msg, 1, o->packed.data, o->packed.len);
  cs_pb_clear(&o->packed);
  for (int v = 0; v < CS_PP_VALUES; v++) cs_pb_varint(&o->packed, (uint64_t)s->values[v]);
  cs_pb_bytes(&o->msg, 2, o->packed.data, o->packed.len);
  cs_pp_label(o, cs_pp_string(p, cs_pp_device_key), 0, s->key.device, cs_pp_string(p, cs_pp_index_unit));
  cs_pp_label(o, cs_pp_string(p, cs_pp_stream_key), 0, s->key.stream, cs_pp_string(p, cs_pp_id_unit));
  cs_pp_label(o, cs_pp_string(p, cs_pp_kind_key), s->key.kind, 0, 0);
  if (s->key.phase) cs_pp_label(o, cs_pp_string(p, cs_pp_phase_key), s->key.phase, 0, 0);
  cs_pb_bytes(&o->top, CS_PP_SAMPLE, o->msg.data, o->msg.len);
}

/* A location: one Line per frame, innermost first (several where functions were inlined). */
static void cs_pp_write_location(cs_pprof_t *p, cs_pp_out_t *o, size_t i) {
  const cs_pp_location_t *l = &p->locations[i];
  cs_pb_clear(&o->msg);
  cs_pb_uint(&o->msg, 1, i + 1);
  cs_pb_uint(&o->msg, 2, 1); /* the one mapping */
  for (uint32_t k = 0; k < l->count; k++) {
    cs_val_t frame = l->frames ? l->frames[k] : CS_VAL_NULL;
    int64_t line = frame != CS_VAL_NULL ? cs_site_of_frame(p->doc, frame).line : 0;
    cs_pb_clear(&o->inner);
    cs_pb_uint(&o->inner, 1, cs_pp_function(p, frame));
    cs_pb_uint_nz(&o->inner, 2, (uint64_t)(line > 0 ? line : 0));
    cs_pb_bytes(&o->msg, 4, o->inner.data, o->inner.len);
  }
  cs_pb_bytes(&o->top, CS_PP_LOCATION, o->msg.data, o->msg.len);
}

/* One function per distinct frame (pprof merges functions by name and file, so two frames of one
 * function still read as one). */
static void cs_pp_write_function(cs_pprof_t *p, cs_pp_out_t *o, size_t i) {
  cs_val_t frame = p->functions[i];
  cs_site_t site = {.name = cs_pp_no_stack, .filename = "", .line = 0};
  if (frame != CS_VAL_NULL) site = cs_site_of_frame(p->doc, frame);
  cs_pb_clear(&o->msg);
  cs_pb_uint(&o->msg, 1, i + 1);
  uint32_t name = cs_pp_string(p, site.name);
  cs_pb_uint_nz(&o->msg, 2, name);
  /* system_name equal to name tells pprof the name is a C++ one to simplify: it would strip
   * "<module>", "<lambda>", "<listcomp>" whole. A Python frame has none. */
  cs_frame_t f = {.name = site.name, .filename = site.filename};
  if (!cs_frame_is_python(&f)) cs_pb_uint_nz(&o->msg, 3, name);
  cs_pb_uint_nz(&o->msg, 4, cs_pp_string(p, site.filename));
  cs_pb_bytes(&o->top, CS_PP_FUNCTION, o->msg.data, o->msg.len);
}

/* The snapshot's time in ns: cudasnap.time_us, else the latest time of its traces; 0 if none. */
static int64_t cs_pp_time_nanos(const cs_doc_t *doc) {
  int64_t us = 0;
  if (cs_view_int(doc, cs_doc_get_key(doc, cs_doc_root(doc), CS_KEY_CUDASNAP), "time_us", &us) && us > 0)
    return us <= INT64_MAX / 1000 ? us * 1000 : 0;
  int devices = cs_view_device_count(doc);
  us = 0;
  for (int d = 0; d < devices; d++) {
    cs_val_t trace = cs_view_trace(doc, d);
    size_t n = cs_val_is_array(trace) ? cs_doc_len(doc, trace) : 0;
    int64_t t;
    if (n > 0 && cs_view_int_key(doc, cs_doc_at(doc, trace, n - 1), CS_KEY_TIME_US, &t) && t > us) us = t;
  }
  return us <= INT64_MAX / 1000 ? us * 1000 : 0;
}

static int cs_pp_write(cs_pprof_t *p, cs_sink_t sink) {
  cs_pp_out_t o = {.sink = sink};
  cs_pb_init(&o.top);
  cs_pb_init(&o.msg);
  cs_pb_init(&o.inner);
  cs_pb_init(&o.packed);
  static const char *const types[CS_PP_VALUES][2] = {
      {"inuse_objects", "count"}, {"inuse_space", "bytes"}, {"alloc_objects", "count"}, {"alloc_space", "bytes"}};
  for (int v = 0; v < CS_PP_VALUES; v++) cs_pp_value_type(p, &o, CS_PP_SAMPLE_TYPE, types[v][0], types[v][1]);
  /* One mapping that says the names are there already: pprof then looks for no binary to
   * symbolize with (and says nothing about a missing one). */
  cs_pb_clear(&o.msg);
  cs_pb_uint(&o.msg, 1, 1);
  cs_pb_uint(&o.msg, 5, cs_pp_string(p, cs_pp_mapping_file));
  for (uint32_t f = 7; f <= 9; f++) cs_pb_uint(&o.msg, f, 1); /* has_functions, _filenames, _line_numbers */
  cs_pb_bytes(&o.top, CS_PP_MAPPING, o.msg.data, o.msg.len);
  for (size_t i = 0; i < p->nsamples && o.error == 0; i++) {
    cs_pp_write_sample(p, &o, &p->samples[i]);
    cs_pp_flush(&o, false);
  }
  /* locations are added while samples are written, functions while locations are, and
   * functions' strings while functions are */
  for (size_t i = 0; i < p->nlocations && o.error == 0; i++) {
    cs_pp_write_location(p, &o, i);
    cs_pp_flush(&o, false);
  }
  for (size_t i = 0; i < p->nfunctions && o.error == 0; i++) {
    cs_pp_write_function(p, &o, i);
    cs_pp_flush(&o, false);
  }
  cs_pb_uint_nz(&o.top, CS_PP_TIME_NANOS, (uint64_t)cs_pp_time_nanos(p->doc));
  cs_pb_uint(&o.top, CS_PP_DEFAULT_SAMPLE_TYPE, cs_pp_string(p, types[1][0]));
  /* the string table last: every string is known by now */
  for (size_t i = 0; i < p->nstrings && o.error == 0; i++) {
    cs_pb_bytes(&o.top, CS_PP_STRING_TABLE, p->strings[i], strlen(p->strings[i]));
    cs_pp_flush(&o, false);
  }
  if (o.msg.error || o.inner.error || o.packed.error || p->oom) o.error = o.error ? o.error : ENOMEM;
  cs_pp_flush(&o, true);
  cs_pb_free(&o.top);
  cs_pb_free(&o.msg);
  cs_pb_free(&o.inner);
  cs_pb_free(&o.packed);
  return o.error;
}

int cs_pprof_write(const cs_doc_t *doc, bool at_peak, bool all_frames, cs_sink_t sink) {
  cs_pprof_t p = {.doc = doc, .all_frames = all_frames};
  cs_site_cache_init(&p.sites, doc);
  cs_val_map_init(&p.string_index);
  cs_val_map_init(&p.location_index);
  cs_val_map_init(&p.inlined_index);
  cs_val_map_init(&p.function_index);
  cs_pp_string(&p, ""); /* index 0 must be the empty string */
  int devices = cs_view_device_count(doc);
  int rc = 0;
  for (int d = 0; rc == 0 && d < devices; d++) rc = cs_pp_device(&p, d, at_peak);
  int err = rc != 0 || p.oom ? ENOMEM : cs_pp_write(&p, sink);
  free(p.strings);
  free(p.locations);
  free(p.functions);
  free(p.samples);
  free(p.slots);
  cs_val_map_free(&p.string_index);
  cs_val_map_free(&p.location_index);
  cs_val_map_free(&p.inlined_index);
  cs_val_map_free(&p.function_index);
  cs_site_cache_free(&p.sites);
  return err;
}

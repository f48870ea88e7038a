/* SPDX-License-Identifier: Apache-2.0 */
/* `cudasnap recover RECORDING [-o SNAPSHOT]`: a snapshot from the recording file a process left
 * (CUDASNAP_RECORD), however it ended, kill -9 included. The recording is read and checked
 * (reader/recording.h), its events replayed into the end state (recover_replay.h), its stacks
 * named through its own module map (snapshot/symbolize.h, on the files the paths name), and the
 * snapshot written in the format a dump writes, built as a snapshot model and written through the emitters (model/write.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/recover_replay.h"
#include "cli/replace.h"
#include "memviz/output.h"
#include "memviz/passthrough.h"
#include "memviz/sink.h"
#include "model/build.h"
#include "model/write.h"
#include "reader/recording.h"
#include "record/stack_entry.h"
#include "snapshot/symbolize.h"

static const char cs_recover_name[] = "recover";

static const char cs_recover_help[] =
    "usage: cudasnap recover [-o SNAPSHOT] RECORDING\n"
    "\n"
    "Turn the recording file of a process run with CUDASNAP_RECORD (cudasnap run --record)\n"
    "into a snapshot, whatever ended the process: kill -9, the kernel's OOM killer, a crash.\n"
    "The state is the replay of the recorded events; stacks are named from the module map the\n"
    "recording kept: the program and its libraries must still be where they were, the same\n"
    "builds (a file with another build ID is not used, with a warning). An event the process\n"
    "was recording when it died is never misread: it is counted as lost at the end. Memory\n"
    "passed through the cache (v1, pitch, managed, stream-ordered, arrays, VMM mappings, IPC\n"
    "imports, graph allocations) is drawn with its kind, as a dump draws it.\n"
    "\n"
    "options:\n"
    "  -o, --output SNAPSHOT  where to write (default RECORDING.json; .pickle or .pkl: pickle);\n"
    "                         an existing file is replaced, as by every subcommand that writes\n"
    "                         a file (never RECORDING itself)\n"
    "  -h, --help             this text\n"
    "\n"
    "output: one line on stdout, `wrote SNAPSHOT: N events (L lost at the end, D damaged,\n"
    "O oldest dropped), B live blocks`.\n"
    "exit status: 0 written; 1 the recording cannot be read or holds nothing to show (one line\n"
    "`RECORDING: problem`), or the snapshot cannot be written; 2 usage error.\n";

/* ---- the snapshot, built as a model (model/build.h) ---- */

typedef struct cs_recover_s {
  const cs_recording_t *rec;
  const cs_rr_state_t *state;
  cs_symbolizer_t *sym;
  cs_build_t *b;
  cs_val_t *frames; /* by stack id - 1: the named frame list, made once (0: not yet) */
  cs_val_t empty;   /* [] */
  bool failed;
} cs_recover_t;

/* The builder's calls, remembering a failure (out of host memory) instead of checking each. */
static cs_val_t cs_rv(cs_recover_t *r, cs_val_t v) {
  if (cs_val_absent(v)) {
    r->failed = true;
    return CS_VAL_NULL;
  }
  return v;
}

static cs_val_t cs_r_int(cs_recover_t *r, int64_t x) {
  return cs_rv(r, cs_build_int(r->b, x));
}

static cs_val_t cs_r_str(cs_recover_t *r, const char *s) {
  return cs_rv(r, cs_build_str(r->b, s, strlen(s)));
}

static void cs_r_set(cs_recover_t *r, cs_val_t dict, const char *key, cs_val_t v) {
  uint32_t id = cs_build_key(r->b, key, strlen(key));
  if (id == UINT32_MAX || !cs_build_set(r->b, dict, id, v)) r->failed = true;
}

static void cs_r_append(cs_recover_t *r, cs_val_t list, cs_val_t v) {
  if (!cs_build_append(r->b, list, v)) r->failed = true;
}

static cs_val_t cs_r_close(cs_recover_t *r, cs_val_t open) {
  return cs_rv(r, cs_build_close(r->b, open));
}

/* One frame as a snapshot writes it (snapshot/snapshot.c): inlined into the next one or not. */
static cs_val_t cs_recover_frame(cs_recover_t *r, const cs_frame_t *f, bool inlined) {
  cs_val_t frame = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  cs_r_set(r, frame, "filename", cs_r_str(r, f->filename));
  cs_r_set(r, frame, "line", cs_r_int(r, f->line));
  cs_r_set(r, frame, "name", cs_r_str(r, f->name));
  if (inlined) cs_r_set(r, frame, "inlined", CS_VAL_TRUE);
  return cs_r_close(r, frame);
}

static cs_val_t cs_recover_frames(cs_recover_t *r, uint32_t stack_id) {
  size_t n = 0;
  const uint64_t *pcs = cs_recording_stack(r->rec, stack_id, &n);
  if (!pcs) return r->empty;
  if (r->frames[stack_id - 1] == 0) {
    cs_val_t list = cs_rv(r, cs_build_open(r->b, CS_TAG_LIST));
    for (size_t i = 0; !r->failed && i < n; i++) {
      /* a Python frame's names stayed in the process's memory (record/pyframes.h): say so */
      static const cs_frame_t python = {.name = "(Python frame, not in the recording)", .filename = "??"};
      const cs_frame_t *frames = &python;
      size_t count = 1;
      if (!cs_py_is_frame((uintptr_t)pcs[i])) count = cs_symbolize_frames(r->sym, (uintptr_t)pcs[i], 0, &frames);
      for (size_t k = 0; k < count; k++) cs_r_append(r, list, cs_recover_frame(r, &frames[k], k + 1 < count));
    }
    r->frames[stack_id - 1] = cs_r_close(r, list);
  }
  return r->frames[stack_id - 1];
}

/* A block: size, the bytes it spans; requested, the bytes asked (0 for a free block). */
static void cs_recover_add_block(cs_recover_t *r, cs_val_t blocks, uint64_t addr, uint64_t size,
                                 uint64_t requested, const char *state, uint32_t stack_id) {
  cs_val_t b = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  cs_r_set(r, b, "address", cs_r_int(r, (int64_t)addr));
  cs_r_set(r, b, "size", cs_r_int(r, (int64_t)size));
  cs_r_set(r, b, "requested_size", cs_r_int(r, (int64_t)requested));
  cs_r_set(r, b, "state", cs_r_str(r, state));
  cs_r_set(r, b, "frames", stack_id ? cs_recover_frames(r, stack_id) : r->empty);
  cs_r_append(r, blocks, cs_r_close(r, b));
}

static cs_val_t cs_recover_segment(cs_recover_t *r, const cs_rr_segment_t *seg) {
  cs_val_t s = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  uint64_t allocated = 0, active = 0, requested = 0;
  for (size_t i = 0; i < seg->block_count; i++) {
    active += seg->blocks[i].extent;
    requested += seg->blocks[i].size;
    if (!seg->blocks[i].pending) allocated += seg->blocks[i].extent;
  }
  cs_r_set(r, s, "device", cs_r_int(r, seg->device));
  cs_r_set(r, s, "address", cs_r_int(r, (int64_t)seg->addr));
  cs_r_set(r, s, "total_size", cs_r_int(r, (int64_t)seg->size));
  cs_r_set(r, s, "allocated_size", cs_r_int(r, (int64_t)allocated));
  cs_r_set(r, s, "active_size", cs_r_int(r, (int64_t)active));
  cs_r_set(r, s, "requested_size", cs_r_int(r, (int64_t)requested));
  cs_r_set(r, s, "stream", cs_r_int(r, (int64_t)seg->stream));
  /* the allocator's small pool makes 2 MiB segments (PyTorch's kSmallBuffer); memory passed
   * through is drawn large, as a dump draws it */
  cs_r_set(r, s, "segment_type", cs_r_str(r, seg->kind < 0 && seg->size <= ((uint64_t)2 << 20) ? "small" : "large"));
  cs_val_t pool = cs_rv(r, cs_build_open(r->b, CS_TAG_TUPLE));
  cs_r_append(r, pool, cs_r_int(r, 0));
  cs_r_append(r, pool, cs_r_int(r, 0));
  cs_r_set(r, s, "segment_pool_id", cs_r_close(r, pool));
  cs_r_set(r, s, "is_expandable", seg->expandable ? CS_VAL_TRUE : CS_VAL_FALSE);
  cs_r_set(r, s, "frames", seg->stack_id ? cs_recover_frames(r, seg->stack_id) : r->empty);
  cs_val_t kind = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  const char *kind_name = seg->kind < 0 ? "cached" : cs_passthrough_kind_name((cs_passthrough_kind_t)seg->kind);
  cs_r_set(r, kind, "kind", cs_r_str(r, kind_name));
  cs_r_set(r, s, "cudasnap", cs_r_close(r, kind));
  cs_val_t blocks = cs_rv(r, cs_build_open(r->b, CS_TAG_LIST));
  uint64_t at = seg->addr;
  for (size_t i = 0; i < seg->block_count; i++) {
    const cs_rr_block_t *b = &seg->blocks[i];
    if (b->addr > at) cs_recover_add_block(r, blocks, at, b->addr - at, 0, "inactive", 0);
    cs_recover_add_block(r, blocks, b->addr, b->extent, b->size,
                         b->pending ? "active_pending_free" : "active_allocated", b->stack_id);
    at = b->addr + b->extent;
  }
  if (at < seg->addr + seg->size)
    cs_recover_add_block(r, blocks, at, seg->addr + seg->size - at, 0, "inactive", 0);
  cs_r_set(r, s, "blocks", cs_r_close(r, blocks));
  return cs_r_close(r, s);
}

/* A trace entry's `cudasnap` dict, as a dump writes it: the kind of memory passed through, an
 * oom's cache and device (notes: its oom_state and oom_device events). */
static cs_val_t cs_recover_event_cudasnap(cs_recover_t *r, int kind, const cs_ring_entry_t *const notes[2]) {
  cs_val_t d = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  if (kind >= 0) cs_r_set(r, d, "kind", cs_r_str(r, cs_passthrough_kind_name((cs_passthrough_kind_t)kind)));
  if (notes[0]) {
    const cs_oom_state_t c = cs_oom_state_unpack(notes[0]->addr, notes[0]->size);
    cs_val_t cache = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
    cs_r_set(r, cache, "reserved", cs_r_int(r, (int64_t)c.reserved));
    cs_r_set(r, cache, "allocated", cs_r_int(r, (int64_t)c.allocated));
    cs_r_set(r, cache, "largest_free_block", cs_r_int(r, (int64_t)c.largest_free));
    cs_r_set(r, cache, "small_pool_free", cs_r_int(r, (int64_t)c.small_free));
    cs_r_set(r, d, "cache", cs_r_close(r, cache));
  }
  if (notes[1]) cs_r_set(r, d, "device_total", cs_r_int(r, (int64_t)notes[1]->addr));
  return cs_r_close(r, d);
}

/* One trace entry, with what a dump writes (snapshot/snapshot.c): no frames on a free_completed
 * right after its own free_requested (the viewer merges the two and keeps the first's frames),
 * and no compile_context or user_metadata. prev: the entry before it in the device's trace. */
static cs_val_t cs_recover_event(cs_recover_t *r, const cs_ring_entry_t *e, const cs_ring_entry_t *prev, int kind,
                                 const cs_ring_entry_t *const notes[2]) {
  const cs_action_t action = cs_ring_entry_action(e);
  const bool merged_free = action == CS_ACTION_FREE_COMPLETED && prev &&
                           cs_ring_entry_action(prev) == CS_ACTION_FREE_REQUESTED && prev->addr == e->addr;
  cs_val_t t = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  cs_r_set(r, t, "action", cs_r_str(r, cs_action_name(action)));
  cs_r_set(r, t, action == CS_ACTION_OOM ? "device_free" : "addr", cs_r_int(r, (int64_t)e->addr));
  cs_r_set(r, t, "size", cs_r_int(r, (int64_t)e->size));
  cs_r_set(r, t, "stream", cs_r_int(r, (int64_t)e->stream));
  cs_r_set(r, t, "time_us", cs_r_int(r, (int64_t)cs_ring_entry_epoch_us(e)));
  if (e->stack_id && !merged_free) cs_r_set(r, t, "frames", cs_recover_frames(r, e->stack_id));
  if (kind >= 0 || notes[0] || notes[1]) cs_r_set(r, t, "cudasnap", cs_recover_event_cudasnap(r, kind, notes));
  return cs_r_close(r, t);
}

/* A device's part of the reconciliation (docs/memory-kinds.md), what a recording knows of it: the
 * cache's bytes and the bytes of each kind drawn, from the recovered segments; the driver was not
 * asked (and the memory that is not drawn, physical VMM handles, pools, was not recorded). */
static cs_val_t cs_recover_memory(cs_recover_t *r, int device) {
  const cs_rr_state_t *s = r->state;
  uint64_t reserved = 0, allocated = 0, kind_bytes[CS_PASSTHROUGH_DRAWN_KINDS] = {0};
  for (size_t i = 0; i < s->segment_count; i++) {
    const cs_rr_segment_t *seg = &s->segments[i];
    if (seg->device != device) continue;
    if (seg->kind < 0) reserved += seg->size;
    for (size_t k = 0; k < seg->block_count; k++) {
      if (seg->kind >= 0 && seg->kind < CS_PASSTHROUGH_DRAWN_KINDS) kind_bytes[seg->kind] += seg->blocks[k].size;
      else if (!seg->blocks[k].pending) allocated += seg->blocks[k].extent;
    }
  }
  cs_val_t m = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  cs_r_set(r, m, "device", cs_r_int(r, device));
  cs_r_set(r, m, "driver_known", CS_VAL_FALSE);
  cs_r_set(r, m, "driver_not_asked", cs_r_str(r, "recovered from a recording"));
  cs_r_set(r, m, "cache_reserved", cs_r_int(r, (int64_t)reserved));
  cs_r_set(r, m, "cache_allocated", cs_r_int(r, (int64_t)allocated));
  cs_val_t pass = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  for (int k = 0; k < CS_PASSTHROUGH_DRAWN_KINDS; k++)
    cs_r_set(r, pass, cs_passthrough_kind_name((cs_passthrough_kind_t)k), cs_r_int(r, (int64_t)kind_bytes[k]));
  cs_r_set(r, m, "passthrough", cs_r_close(r, pass));
  return cs_r_close(r, m);
}

typedef struct cs_recover_counts_s {
  uint64_t lost, damaged, dropped, live;
} cs_recover_counts_t;

/* The snapshot's root, or CS_VAL_ABSENT without host memory. */
static cs_val_t cs_recover_snapshot(cs_recover_t *r, const char *recording, const cs_recover_counts_t *c) {
  const cs_rr_state_t *s = r->state;
  r->empty = cs_r_close(r, cs_rv(r, cs_build_open(r->b, CS_TAG_LIST)));
  cs_val_t root = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  cs_val_t segments = cs_rv(r, cs_build_open(r->b, CS_TAG_LIST));
  for (size_t i = 0; i < s->segment_count && !r->failed; i++)
    cs_r_append(r, segments, cs_recover_segment(r, &s->segments[i]));
  cs_r_set(r, root, "segments", cs_r_close(r, segments));
  cs_val_t traces = cs_rv(r, cs_build_open(r->b, CS_TAG_LIST));
  for (int d = 0; d < s->device_count && !r->failed; d++) {
    cs_val_t trace = cs_rv(r, cs_build_open(r->b, CS_TAG_LIST));
    const cs_ring_entry_t *prev = NULL;
    for (size_t i = 0; i < s->event_count && !r->failed; i++) {
      const cs_action_t action = cs_ring_entry_action(&s->events[i]);
      if (cs_ring_entry_device(&s->events[i]) != d || action == CS_ACTION_OOM_STATE || action == CS_ACTION_OOM_DEVICE)
        continue;
      const cs_ring_entry_t *notes[2] = {NULL, NULL};
      if (action == CS_ACTION_OOM) cs_ring_oom_notes(s->events, s->event_count, i, &notes[0], &notes[1]);
      cs_r_append(r, trace, cs_recover_event(r, &s->events[i], prev, s->kinds[i], notes));
      prev = &s->events[i];
    }
    cs_r_append(r, traces, cs_r_close(r, trace));
  }
  cs_r_set(r, root, "device_traces", cs_r_close(r, traces));
  cs_val_t settings = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  cs_r_set(r, settings, "trace_alloc_max_entries", cs_r_int(r, (int64_t)r->rec->max_entries));
  cs_r_set(r, settings, "trace_alloc_overflowed", c->dropped > 0 ? CS_VAL_TRUE : CS_VAL_FALSE);
  cs_r_set(r, root, "allocator_settings", cs_r_close(r, settings));
  cs_r_set(r, root, "external_annotations", r->empty);
  cs_val_t meta = cs_rv(r, cs_build_open(r->b, CS_TAG_DICT));
  cs_r_set(r, meta, "version", cs_r_str(r, CS_VERSION_STRING));
  cs_r_set(r, meta, "pid", cs_r_int(r, (int64_t)r->rec->pid));
  cs_val_t argv = cs_rv(r, cs_build_open(r->b, CS_TAG_LIST));
  for (const char *const *a = r->rec->argv; *a; a++) cs_r_append(r, argv, cs_r_str(r, *a));
  cs_r_set(r, meta, "argv", cs_r_close(r, argv));
  cs_r_set(r, meta, "host", cs_r_str(r, ""));
  cs_r_set(r, meta, "trigger", cs_r_str(r, "recover"));
  cs_r_set(r, meta, "dump_number", cs_r_int(r, 0));
  cs_r_set(r, meta, "time_us",
           cs_r_int(r, s->event_count ? (int64_t)cs_ring_entry_epoch_us(&s->events[s->event_count - 1]) : 0));
  cs_r_set(r, meta, "stacks", cs_r_str(r, r->rec->stack_count ? "native" : "none"));
  cs_r_set(r, meta, "dropped_events", cs_r_int(r, (int64_t)c->dropped));
  cs_r_set(r, meta, "trace_kinds", CS_VAL_TRUE); /* version 1 has the cache's events only */
  cs_r_set(r, meta, "lost_events", cs_r_int(r, (int64_t)c->lost));
  cs_r_set(r, meta, "damaged_events", cs_r_int(r, (int64_t)c->damaged));
  cs_r_set(r, meta, "recording", cs_r_str(r, recording));
  cs_r_set(r, meta, "memory_stats", r->empty);
  /* a recording of the format before the pass-through ring has the cache's memory only */
  if (r->rec->version >= 2) {
    cs_val_t memory = cs_rv(r, cs_build_open(r->b, CS_TAG_LIST));
    for (int d = 0; d < s->device_count && !r->failed; d++) cs_r_append(r, memory, cs_recover_memory(r, d));
    cs_r_set(r, meta, "memory", cs_r_close(r, memory));
  }
  cs_r_set(r, root, "cudasnap", cs_r_close(r, meta));
  root = cs_r_close(r, root);
  return r->failed ? CS_VAL_ABSENT : root;
}

/* ---- writing ---- */

static bool cs_recover_has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cs_recover_write(const cs_doc_t *doc, const char *path, char *final_path, size_t final_len) {
  cs_emit_format_t format =
      cs_recover_has_suffix(path, ".pickle") || cs_recover_has_suffix(path, ".pkl") ? CS_EMIT_PICKLE : CS_EMIT_JSON;
  cs_output_t out;
  int err = cs_output_open(&out, path);
  cs_fd_sink_t *sink = err == 0 ? malloc(sizeof *sink) : NULL;
  if (err == 0 && !sink) err = ENOMEM;
  cs_emitter_t *e = NULL;
  if (err == 0) {
    cs_fd_sink_init(sink, out.fd);
    e = cs_emitter_create(format, cs_fd_sink(sink), 2);
    if (!e) err = ENOMEM;
  }
  if (err == 0) {
    err = cs_doc_write(doc, e, format, NULL, NULL);
    int flushed = cs_fd_sink_flush(sink);
    if (err == 0) err = flushed;
  }
  if (err == 0) err = cs_replace_commit(&out, path);
  else if (out.fd >= 0) cs_output_abort(&out);
  free(sink);
  if (err != 0) {
    cs_cli_message("%s: cannot write: %s", path, strerror(err));
    return -1;
  }
  snprintf(final_path, final_len, "%s", out.final_path);
  return 0;
}

int cs_cli_recover(int argc, char **argv) {
  static const struct option options[] = {
      {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *output = NULL;
  int c;
  while ((c = getopt_long(argc, argv, ":ho:", options, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(cs_recover_help, stdout); return CS_CLI_OK;
    case 'o': output = optarg; break;
    default: return cs_cli_bad_option(cs_recover_name, c, argv);
    }
  }
  if (!cs_cli_operands(cs_recover_name, argc, argv, 1, "RECORDING")) return CS_CLI_USAGE;
  const char *recording = argv[optind];
  char default_output[4096];
  if (!output) {
    snprintf(default_output, sizeof default_output, "%s.json", recording);
    output = default_output;
  }

  if (cs_replace_same_file(recording, output)) {
    cs_cli_message("%s: is the recording being read: give another SNAPSHOT with -o", output);
    return CS_CLI_FAIL;
  }
  cs_recording_t rec;
  char why[256];
  if (cs_recording_read(recording, &rec, why, sizeof why) != 0) {
    cs_cli_message("%s: %s", recording, why);
    return CS_CLI_FAIL;
  }
  if (rec.version < 2)
    cs_cli_message("cudasnap: warning: %s: recording format version %u (an older cudasnap): memory passed through the "
                   "cache was not recorded, only the cache's is recovered",
                   recording, rec.version);
  cs_rr_state_t state;
  if (cs_rr_replay(&rec, &state) != 0) {
    cs_cli_message("%s: out of host memory for the replay", recording);
    cs_rr_free(&state);
    cs_recording_free(&rec);
    return CS_CLI_FAIL;
  }
  if (state.segment_count == 0 && state.event_count == 0) {
    /* the viewer cannot open an empty snapshot (as a dump, recover writes none) */
    cs_cli_message("%s: nothing to recover: no device memory was allocated while recording%s", recording,
                   rec.max_entries == 0 ? " (CUDASNAP_MAX_ENTRIES=0 keeps no history)" : "");
    cs_rr_free(&state);
    cs_recording_free(&rec);
    return CS_CLI_FAIL;
  }
  cs_recover_counts_t counts = {0};
  for (size_t i = 0; i < rec.ring_count; i++) {
    counts.lost += rec.rings[i].lost_at_end;
    counts.damaged += rec.rings[i].damaged;
    counts.dropped += rec.rings[i].dropped;
  }
  for (size_t i = 0; i < state.segment_count; i++) counts.live += state.segments[i].block_count;

  cs_sym_map_module_t *modules = calloc(rec.module_count ? rec.module_count : 1, sizeof *modules);
  for (size_t i = 0; modules && i < rec.module_count; i++)
    modules[i] = (cs_sym_map_module_t){.path = rec.modules[i].path, .bias = rec.modules[i].bias,
                                       .build_id = rec.modules[i].build_id, .build_id_len = rec.modules[i].build_id_len};
  cs_recover_t r = {.rec = &rec, .state = &state,
                    .sym = modules ? cs_symbolizer_create_for(modules, rec.module_count) : NULL,
                    .b = cs_build_new(),
                    .frames = calloc(rec.stack_count ? rec.stack_count : 1, sizeof(cs_val_t))};
  int rc = CS_CLI_FAIL;
  if (!r.sym || !r.frames || !r.b) {
    cs_cli_message("%s: out of host memory for the symbols", recording);
  } else {
    cs_val_t root = cs_recover_snapshot(&r, recording, &counts);
    cs_doc_t *doc = cs_val_absent(root) ? NULL : cs_build_finish(r.b, root);
    if (!cs_val_absent(root)) r.b = NULL; /* finished (or freed) by cs_build_finish */
    char final_path[4096];
    if (doc && cs_recover_write(doc, output, final_path, sizeof final_path) == 0) {
      printf("wrote %s: %zu events (%llu lost at the end, %llu damaged, %llu oldest dropped), %llu live blocks\n",
             final_path, state.event_count, (unsigned long long)counts.lost, (unsigned long long)counts.damaged,
             (unsigned long long)counts.dropped, (unsigned long long)counts.live);
      rc = CS_CLI_OK;
    } else if (!doc) {
      cs_cli_message("%s: out of host memory for the snapshot", recording);
    }
    cs_doc_free(doc);
  }
  cs_build_abort(r.b);
  free(r.frames);
  cs_symbolizer_destroy(r.sym);
  free(modules);
  cs_rr_free(&state);
  cs_recording_free(&rec);
  return rc;
}

/* `cudasnap recover RECORDING [-o SNAPSHOT]`: a snapshot from the recording file a process left
 * (CUDASNAP_RECORD), however it ended, kill -9 included. The recording is read and checked
 * (reader/recording.h), its events replayed into the end state (recover_replay.h), its stacks
 * named through its own module map (snapshot/symbolize.h, on the files the paths name), and the
 * snapshot written in the format a dump writes, as a tree through the emitters (tree_emit.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/recover_replay.h"
#include "cli/tree_emit.h"
#include "memviz/output.h"
#include "memviz/sink.h"
#include "reader/recording.h"
#include "record/pyframes.h"
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
    "was recording when it died is never misread: it is counted as lost at the end.\n"
    "\n"
    "options:\n"
    "  -o, --output SNAPSHOT  where to write (default RECORDING.json; .pickle or .pkl: pickle);\n"
    "                         an existing file is kept and -1, -2, ... added to the new name\n"
    "  -h, --help             this text\n"
    "\n"
    "output: one line on stdout, `wrote SNAPSHOT: N events (L lost at the end, D damaged,\n"
    "O oldest dropped), B live blocks`.\n"
    "exit status: 0 written; 1 the recording cannot be read or holds nothing to show (one line\n"
    "`RECORDING: problem`), or the snapshot cannot be written; 2 usage error.\n";

/* ---- the tree ---- */

typedef struct cs_recover_s {
  const cs_recording_t *rec;
  const cs_rr_state_t *state;
  cs_symbolizer_t *sym;
  cJSON **frames; /* by stack id - 1: the named frame list, made once */
} cs_recover_t;

static cJSON *cs_recover_frames(cs_recover_t *r, uint32_t stack_id) {
  size_t n = 0;
  const uint64_t *pcs = cs_recording_stack(r->rec, stack_id, &n);
  if (!pcs) return cJSON_CreateArray();
  if (!r->frames[stack_id - 1]) {
    cJSON *list = cJSON_CreateArray();
    for (size_t i = 0; list && i < n; i++) {
      /* a Python frame's names stayed in the process's memory (record/pyframes.h): say so */
      cs_frame_t f = cs_py_is_frame((uintptr_t)pcs[i])
                         ? (cs_frame_t){.name = "(Python frame, not in the recording)", .filename = "??"}
                         : cs_symbolize(r->sym, (uintptr_t)pcs[i], 0);
      cJSON *frame = cJSON_CreateObject();
      cJSON_AddStringToObject(frame, "filename", f.filename);
      cJSON_AddNumberToObject(frame, "line", f.line);
      cJSON_AddStringToObject(frame, "name", f.name);
      cJSON_AddItemToArray(list, frame);
    }
    r->frames[stack_id - 1] = list;
  }
  return cJSON_Duplicate(r->frames[stack_id - 1], 1);
}

static void cs_recover_add_block(cs_recover_t *r, cJSON *blocks, uint64_t addr, uint64_t size, const char *state,
                                 uint32_t stack_id) {
  cJSON *b = cJSON_CreateObject();
  cJSON_AddNumberToObject(b, "address", (double)addr);
  cJSON_AddNumberToObject(b, "size", (double)size);
  cJSON_AddNumberToObject(b, "requested_size", (double)(stack_id || strcmp(state, "inactive") ? size : 0));
  cJSON_AddStringToObject(b, "state", state);
  cJSON_AddItemToObject(b, "frames", stack_id ? cs_recover_frames(r, stack_id) : cJSON_CreateArray());
  cJSON_AddItemToArray(blocks, b);
}

static cJSON *cs_recover_segment(cs_recover_t *r, const cs_rr_segment_t *seg) {
  cJSON *s = cJSON_CreateObject();
  uint64_t allocated = 0, active = 0;
  for (size_t i = 0; i < seg->block_count; i++) {
    active += seg->blocks[i].size;
    if (!seg->blocks[i].pending) allocated += seg->blocks[i].size;
  }
  cJSON_AddNumberToObject(s, "device", seg->device);
  cJSON_AddNumberToObject(s, "address", (double)seg->addr);
  cJSON_AddNumberToObject(s, "total_size", (double)seg->size);
  cJSON_AddNumberToObject(s, "allocated_size", (double)allocated);
  cJSON_AddNumberToObject(s, "active_size", (double)active);
  cJSON_AddNumberToObject(s, "requested_size", (double)active);
  cJSON_AddNumberToObject(s, "stream", seg->stream);
  /* the allocator's small pool makes 2 MiB segments (PyTorch's kSmallBuffer) */
  cJSON_AddStringToObject(s, "segment_type", seg->size <= ((uint64_t)2 << 20) ? "small" : "large");
  cJSON *pool = cJSON_AddArrayToObject(s, "segment_pool_id");
  cJSON_AddItemToArray(pool, cJSON_CreateNumber(0));
  cJSON_AddItemToArray(pool, cJSON_CreateNumber(0));
  cJSON_AddBoolToObject(s, "is_expandable", 0);
  cJSON_AddItemToObject(s, "frames", seg->stack_id ? cs_recover_frames(r, seg->stack_id) : cJSON_CreateArray());
  cJSON *blocks = cJSON_AddArrayToObject(s, "blocks");
  uint64_t at = seg->addr;
  for (size_t i = 0; i < seg->block_count; i++) {
    const cs_rr_block_t *b = &seg->blocks[i];
    if (b->addr > at) cs_recover_add_block(r, blocks, at, b->addr - at, "inactive", 0);
    cs_recover_add_block(r, blocks, b->addr, b->size, b->pending ? "active_pending_free" : "active_allocated",
                         b->stack_id);
    at = b->addr + b->size;
  }
  if (at < seg->addr + seg->size) cs_recover_add_block(r, blocks, at, seg->addr + seg->size - at, "inactive", 0);
  return s;
}

/* One trace entry, with what a dump writes (snapshot/snapshot.c): no frames on a free_completed
 * right after its own free_requested (the viewer merges the two and keeps the first's frames),
 * and no compile_context or user_metadata. prev: the entry before it in the device's trace. */
static cJSON *cs_recover_event(cs_recover_t *r, const cs_ring_entry_t *e, const cs_ring_entry_t *prev) {
  const cs_action_t action = cs_ring_entry_action(e);
  const bool merged_free = action == CS_ACTION_FREE_COMPLETED && prev &&
                           cs_ring_entry_action(prev) == CS_ACTION_FREE_REQUESTED && prev->addr == e->addr;
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "action", cs_action_name(action));
  cJSON_AddNumberToObject(t, action == CS_ACTION_OOM ? "device_free" : "addr", (double)e->addr);
  cJSON_AddNumberToObject(t, "size", (double)e->size);
  cJSON_AddNumberToObject(t, "stream", e->stream);
  cJSON_AddNumberToObject(t, "time_us", (double)cs_ring_entry_epoch_us(e));
  if (e->stack_id && !merged_free) cJSON_AddItemToObject(t, "frames", cs_recover_frames(r, e->stack_id));
  return t;
}

typedef struct cs_recover_counts_s {
  uint64_t lost, damaged, dropped, live;
} cs_recover_counts_t;

static cJSON *cs_recover_tree(cs_recover_t *r, const char *recording, const cs_recover_counts_t *c) {
  const cs_rr_state_t *s = r->state;
  cJSON *root = cJSON_CreateObject();
  cJSON *segments = cJSON_AddArrayToObject(root, "segments");
  for (size_t i = 0; i < s->segment_count; i++) cJSON_AddItemToArray(segments, cs_recover_segment(r, &s->segments[i]));
  cJSON *traces = cJSON_AddArrayToObject(root, "device_traces");
  for (int d = 0; d < s->device_count; d++) {
    cJSON *trace = cJSON_CreateArray();
    const cs_ring_entry_t *prev = NULL;
    for (size_t i = 0; i < s->event_count; i++) {
      if (cs_ring_entry_device(&s->events[i]) != d) continue;
      cJSON_AddItemToArray(trace, cs_recover_event(r, &s->events[i], prev));
      prev = &s->events[i];
    }
    cJSON_AddItemToArray(traces, trace);
  }
  cJSON *settings = cJSON_AddObjectToObject(root, "allocator_settings");
  cJSON_AddNumberToObject(settings, "trace_alloc_max_entries", (double)r->rec->max_entries);
  cJSON_AddBoolToObject(settings, "trace_alloc_overflowed", c->dropped > 0);
  cJSON_AddArrayToObject(root, "external_annotations");
  cJSON *meta = cJSON_AddObjectToObject(root, "cudasnap");
  cJSON_AddStringToObject(meta, "version", CS_VERSION_STRING);
  cJSON_AddNumberToObject(meta, "pid", (double)r->rec->pid);
  cJSON *argv = cJSON_AddArrayToObject(meta, "argv");
  for (const char *const *a = r->rec->argv; *a; a++) cJSON_AddItemToArray(argv, cJSON_CreateString(*a));
  cJSON_AddStringToObject(meta, "host", "");
  cJSON_AddStringToObject(meta, "trigger", "recover");
  cJSON_AddNumberToObject(meta, "dump_number", 0);
  cJSON_AddNumberToObject(meta, "time_us", s->event_count ? (double)cs_ring_entry_epoch_us(&s->events[s->event_count - 1]) : 0);
  cJSON_AddStringToObject(meta, "stacks", r->rec->stack_count ? "native" : "none");
  cJSON_AddNumberToObject(meta, "dropped_events", (double)c->dropped);
  cJSON_AddNumberToObject(meta, "lost_events", (double)c->lost);
  cJSON_AddNumberToObject(meta, "damaged_events", (double)c->damaged);
  cJSON_AddStringToObject(meta, "recording", recording);
  cJSON_AddArrayToObject(meta, "memory_stats");
  return root;
}

/* ---- writing ---- */

static bool cs_recover_has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cs_recover_write(const cJSON *root, const char *path, char *final_path, size_t final_len) {
  cs_emit_format_t format =
      cs_recover_has_suffix(path, ".pickle") || cs_recover_has_suffix(path, ".pkl") ? CS_EMIT_PICKLE : CS_EMIT_JSON;
  char why[160];
  if (cs_tree_emit_check(root, why, sizeof why) != 0) {
    fprintf(stderr, "%s: cannot write: %s\n", path, why);
    return -1;
  }
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
    err = cs_tree_emit(root, e, format, NULL);
    int flushed = cs_fd_sink_flush(sink);
    if (err == 0) err = flushed;
  }
  if (err == 0) err = cs_output_commit(&out, path);
  else if (out.fd >= 0) cs_output_abort(&out);
  free(sink);
  if (err != 0) {
    fprintf(stderr, "%s: cannot write: %s\n", path, strerror(err));
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

  cs_recording_t rec;
  char why[256];
  if (cs_recording_read(recording, &rec, why, sizeof why) != 0) {
    fprintf(stderr, "%s: %s\n", recording, why);
    return CS_CLI_FAIL;
  }
  cs_rr_state_t state;
  if (cs_rr_replay(&rec, &state) != 0) {
    fprintf(stderr, "%s: out of host memory for the replay\n", recording);
    cs_rr_free(&state);
    cs_recording_free(&rec);
    return CS_CLI_FAIL;
  }
  if (state.segment_count == 0 && state.event_count == 0) {
    /* the viewer cannot open an empty snapshot (as a dump, recover writes none) */
    fprintf(stderr, "%s: nothing to recover: no device memory was allocated while recording%s\n", recording,
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
                    .frames = calloc(rec.stack_count ? rec.stack_count : 1, sizeof(cJSON *))};
  int rc = CS_CLI_FAIL;
  if (!r.sym || !r.frames) {
    fprintf(stderr, "%s: out of host memory for the symbols\n", recording);
  } else {
    cJSON *root = cs_recover_tree(&r, recording, &counts);
    char final_path[4096];
    if (root && cs_recover_write(root, output, final_path, sizeof final_path) == 0) {
      printf("wrote %s: %zu events (%llu lost at the end, %llu damaged, %llu oldest dropped), %llu live blocks\n",
             final_path, state.event_count, (unsigned long long)counts.lost, (unsigned long long)counts.damaged,
             (unsigned long long)counts.dropped, (unsigned long long)counts.live);
      rc = CS_CLI_OK;
    } else if (!root) {
      fprintf(stderr, "%s: out of host memory for the snapshot\n", recording);
    }
    cJSON_Delete(root);
  }
  for (size_t i = 0; r.frames && i < rec.stack_count; i++) cJSON_Delete(r.frames[i]);
  free(r.frames);
  cs_symbolizer_destroy(r.sym);
  free(modules);
  cs_rr_free(&state);
  cs_recording_free(&rec);
  return rc;
}

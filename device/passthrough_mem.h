/* SPDX-License-Identifier: Apache-2.0 */
/* Memory the program obtained past the cache: v1 and pitch allocations, managed, stream-ordered,
 * arrays, VMM handles, reservations and mappings, IPC imports, pinned host memory. cudasnap passes
 * those calls through and records here what exists, with the stack that created it, and its own
 * history of their events (one ring for all of them, merged by time with the contexts' rings in
 * a snapshot), so that snapshots draw all device memory, not only the cached part.
 *
 * Thread-safe (one lock); an entry costs one small heap allocation and the calls take the stack
 * of their caller: none of this is on the cache path. How each kind is drawn:
 * docs/memory-kinds.md, "Memory that passes through". */
#ifndef CS_PASSTHROUGH_MEM_H
#define CS_PASSTHROUGH_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocator/allocator.h"
#include "common/cs_options.h"
#include "memviz/passthrough.h"

struct cs_snap_state_s;

/* Arrays have no device address: they are drawn at pseudo addresses from here on, a range below
 * 2^53 (the viewer's exact integers) that no CUDA allocation on Linux x86-64 is handed. */
#define CS_PASSTHROUGH_ARRAY_BASE ((uintptr_t)0x1c000000000000)

/* At activation: the history's size (CUDASNAP_MAX_ENTRIES). Events before it are not recorded. */
void cs_passthrough_start(const cs_options_t *opts);

/* A new entry. key: the address, or the handle (arrays, VMM handles). stream: the allocation's
 * stream (stream-ordered kinds), else 0. stack: the creating call's interned stack. A mapping's
 * device is its physical handle's when that handle is known. */
void cs_passthrough_add(cs_passthrough_kind_t kind, uintptr_t key, size_t size, int device, uintptr_t stream,
                        uint32_t stack);

/* cuMemMap of `handle` at [addr, addr + size). */
void cs_passthrough_map(uintptr_t addr, size_t size, uintptr_t handle, int current_device, uint32_t stack);

/* A free of memory passed through, recorded in the order the driver's answers make true (the
 * lead comment of "frees in flight" in passthrough_mem.c): _begin marks what the call frees (the first of
 * `kinds` recorded at key; for an unmap every mapping that starts in [addr, addr + size)) before
 * the driver is asked, _end records the free if the driver freed, or takes the mark off if it
 * refused. A new allocation recorded meanwhile at an address (or handle) that was marked records
 * the free first. stack: the freeing call's. Every _begin is followed by one _end. */
typedef struct cs_passthrough_pending_s {
  struct cs_passthrough_entry_s *first;
  uintptr_t handle;    /* the release of a physical handle still mapped */
  uint32_t stack;
  bool release_mapped;
} cs_passthrough_pending_t;
void cs_passthrough_free_begin(cs_passthrough_pending_t *p, const cs_passthrough_kind_t *kinds, size_t count,
                               uintptr_t key,
                               uint32_t stack);
void cs_passthrough_unmap_begin(cs_passthrough_pending_t *p, uintptr_t addr, size_t size, uint32_t stack);
void cs_passthrough_free_end(cs_passthrough_pending_t *p, bool freed);

/* The cache was handed [addr, addr + size) by the driver: frees in flight there, and device memory
 * still recorded at addr, are recorded freed now, before the cache records its segment. Callable
 * under an allocator's lock. */
void cs_passthrough_reused(uintptr_t addr, size_t size);

/* Forget the entry of that kind and key, at once; false if there was none (or its free is in
 * flight). For frees the driver made already whose addresses no one else can be handed (graph
 * memory, whose addresses are the graph's for its life). stack: the freeing call's. */
bool cs_passthrough_remove(cs_passthrough_kind_t kind, uintptr_t key, uint32_t stack);

/* The driver answered out of memory to the program for memory of `kind` on device (-1: none
 * known), asked for size bytes on stream, with device_free bytes free: counted in
 * passthrough_ooms.<kind> (the host row for host kinds) and, on a device, in its num_ooms, with an
 * `oom` entry in the history, and the device's cache as it was then (cache: NULL when not known)
 * and its total bytes (0: not known) in oom_state and oom_device entries after it
 * (record/ring_entry.h). */
void cs_passthrough_record_oom(cs_passthrough_kind_t kind, int device, size_t size, uintptr_t stream,
                               size_t device_free, size_t device_total, uint32_t stack,
                               const cs_cache_figures_t *cache);

/* Whether addr lies in a drawn entry with a device address (not an array), and that entry's
 * device: NVTX heaps may be registered over such memory. A walk of the table: for rare calls. */
bool cs_passthrough_find_drawn(uintptr_t addr, int *device);

/* Live entries and bytes of a kind, all devices. */
void cs_passthrough_totals(cs_passthrough_kind_t kind, size_t *count, size_t *bytes);

/* Per device (CS_PASSTHROUGH_NO_DEVICE: host memory) and kind: cudasnap's own statistics. false
 * for a device out of range. */
bool cs_passthrough_stats(int device, cs_passthrough_stat_t out[CS_PASSTHROUGH_KINDS]);

/* Copy the drawn entries, the other entries and the history into a snapshot state. pre: every
 * allocator lock is held (cs_contexts_snapshot), so the copy agrees with theirs. */
void cs_passthrough_snapshot(struct cs_snap_state_s *state, bool with_history);
/* The same with its lock taken before deadline_ns (CLOCK_MONOTONIC): false, and nothing copied,
 * when it was not (as the process ends). */
bool cs_passthrough_snapshot_by(struct cs_snap_state_s *state, bool with_history, uint64_t deadline_ns);

/* cudasnap_record_history for this history */
void cs_passthrough_set_history(bool enabled);

/* fork: the parent's memory is not the child's */
void cs_passthrough_prefork(void);
void cs_passthrough_postfork(bool child);

#endif

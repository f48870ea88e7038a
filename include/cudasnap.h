/* SPDX-License-Identifier: Apache-2.0 */
/* cudasnap.h: the optional API of libcudasnap.so, for programs that opt in.
 *
 * It mirrors torch.cuda.memory / torch.accelerator.memory. Every function is declared weak, so a
 * program that calls them also links and runs without cudasnap preloaded; test for presence
 * first:
 *
 *     #include <cudasnap.h>
 *     if (cudasnap_memory_allocated)
 *       printf("allocated: %lld\n", (long long)cudasnap_memory_allocated(-1));
 *
 * `device` is a CUDA device ordinal, or -1 for the calling thread's current device. A device on
 * which the program has not allocated yet reports zeros. Every function is thread-safe, performs
 * no CUDA call except cudasnap_get_memory_info and cudasnap_empty_cache, and never allocates
 * device memory. */
#ifndef CUDASNAP_H
#define CUDASNAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CUDASNAP_BUILDING_LIBRARY)
#define CUDASNAP_API __attribute__((visibility("default")))
#else
#define CUDASNAP_API __attribute__((weak))
#endif

/* Number of entries cudasnap_memory_stats reports: the 122 keys of torch.cuda.memory_stats(). */
#define CUDASNAP_MEMORY_STATS_KEYS 122

/* One entry of cudasnap_memory_stats. `key` points to storage that lives as long as the
 * library, e.g. "allocated_bytes.all.current". */
typedef struct cudasnap_stat {
  const char *key;
  int64_t value;
} cudasnap_stat_t;

/* torch.cuda.memory_stats(device): the flat key/value set, sorted by key. Writes at most `cap`
 * entries to `out` and returns the number of keys (CUDASNAP_MEMORY_STATS_KEYS), so a first call
 * with cap 0 sizes the buffer; -1 for a device ordinal below -1. */
CUDASNAP_API int cudasnap_memory_stats(int device, cudasnap_stat_t *out, size_t cap);

/* cudasnap's own statistics of the memory that passes the cache by (docs/memory-kinds.md, "Memory
 * that passes through"), in the same flat form, bytes: "passthrough_bytes.KIND.current", ".peak",
 * ".allocated" (ever) and ".freed" (ever), and "passthrough_ooms.KIND": the out-of-memory answers
 * the driver gave the program for the kind (ever; num_ooms counts them with the cache's), KIND one
 * of device (cuMemAlloc v1, and allocations the cache passed on), pitch, managed, async
 * (stream-ordered), array, vmm_mapped, ipc_imported, graph (graph memory nodes' allocations,
 * launches and uploads), vmm_physical: CUDASNAP_PASSTHROUGH_KEYS entries. torch's 122 keys above
 * never include these. device CUDASNAP_HOST is pinned host memory instead: host_pinned (also
 * cuMemCreate located on the host) and host_registered, CUDASNAP_PASSTHROUGH_HOST_KEYS entries.
 * Writes at most cap entries and returns the number of keys; -1 for a bad device argument. */
#define CUDASNAP_PASSTHROUGH_KEYS 45
#define CUDASNAP_PASSTHROUGH_HOST_KEYS 10
#define CUDASNAP_HOST (-2)
CUDASNAP_API int cudasnap_passthrough_stats(int device, cudasnap_stat_t *out, size_t cap);

/* torch.cuda.memory_allocated / max_memory_allocated / memory_reserved / max_memory_reserved:
 * bytes held by the program's live blocks, their peak, bytes of device memory cudasnap holds
 * (cache included), its peak. */
CUDASNAP_API int64_t cudasnap_memory_allocated(int device);
CUDASNAP_API int64_t cudasnap_max_memory_allocated(int device);
CUDASNAP_API int64_t cudasnap_memory_reserved(int device);
CUDASNAP_API int64_t cudasnap_max_memory_reserved(int device);

/* torch.cuda.reset_peak_memory_stats: every peak becomes its current value.
 * torch.cuda.reset_accumulated_memory_stats: every accumulated allocated/freed count and the
 * num_* counters become 0. */
CUDASNAP_API void cudasnap_reset_peak_memory_stats(int device);
CUDASNAP_API void cudasnap_reset_accumulated_memory_stats(int device);

/* torch.cuda.empty_cache: wait for pending frees and return every cached segment that holds no
 * live block to the driver. Returns 0, or the driver's error. */
CUDASNAP_API int cudasnap_empty_cache(int device);

/* torch.cuda.mem_get_info: the device's free and total bytes as the program's own
 * cudaMemGetInfo would see them (cached-but-free bytes count as free unless
 * CUDASNAP_MEMINFO=raw). Returns 0, or -1 when the program has no CUDA context on the device. */
CUDASNAP_API int cudasnap_get_memory_info(int device, size_t *free_bytes, size_t *total_bytes);

/* torch.cuda.memory_summary(device, abbreviated): the same table, byte for byte, written to buf
 * (always NUL-terminated when len > 0). Returns the length of the whole text, as snprintf does. */
CUDASNAP_API size_t cudasnap_memory_summary(int device, int abbreviated, char *buf, size_t len);

/* torch.cuda.memory._record_memory_history: switch the event history on (nonzero) or off (0).
 * Off also forgets the history recorded so far, as PyTorch does; the state (segments, blocks and
 * their stacks) is always kept. On by default unless CUDASNAP_MAX_ENTRIES=0. */
CUDASNAP_API void cudasnap_record_history(int enabled);

/* torch.cuda.memory._dump_snapshot: write a snapshot now, to `path` (its extension picks the
 * format unless CUDASNAP_FORMAT is set), or when path is NULL to the name CUDASNAP_OUTPUT gives
 * with the trigger "api". An existing file is never replaced ("-1" is added to the name instead).
 * Returns 0 when a file was written, -1 otherwise (the reason is on stderr). */
CUDASNAP_API int cudasnap_dump(const char *path);

/* cudasnap_dump, also telling which file was written: its name (`path`, `path` with "-1" added,
 * or the name CUDASNAP_OUTPUT gave) goes to `written`, truncated to `len` and NUL-terminated when
 * len > 0. Returns the name's whole length, as snprintf does (so a result >= len means it was cut
 * short), or -1 when no file was written (the reason is on stderr). */
CUDASNAP_API int cudasnap_dump_snapshot(const char *path, char *written, size_t len);

/* A phase of the program, as an NVTX range (nvtxRangeStartA / nvtxRangeEnd) would make one,
 * without NVTX: snapshots write it in `external_annotations` and the tool shows it wherever it
 * shows NVTX ranges. cudasnap_phase_start records the start now and returns the range's id;
 * cudasnap_phase_end(id) records its end, from any thread; the phase is the starting thread's at
 * both ends (phases are per thread: docs/nvtx.md). Recorded whether or not CUDASNAP_NVTX
 * lets cudasnap take NVTX's calls. Returns 0 (and cudasnap_phase_end(0) does nothing) when the
 * phase cannot be recorded: no host memory for the phase ring. Lock-free; no CUDA call except
 * cuCtxGetCurrent (the phase's device) once the program has used CUDA. */
CUDASNAP_API uint64_t cudasnap_phase_start(const char *name);
CUDASNAP_API void cudasnap_phase_end(uint64_t id);

/* Name a function part of the program's allocator, as CUDASNAP_ALLOCATOR_FRAMES does from
 * outside: `glob` is a shell glob over function names (C, C++ or Python, as frames show them:
 * docs/configuration.md), and a stack's site is then the first frame outside the functions it
 * names, in the leak report, the live record (`cudasnap top`, `metrics`) and every snapshot from
 * now on (which carries the list, for the tool). Returns 0 when glob is in the process's list
 * (added now, or before), or -1 when it is not taken (a bad glob, or 64 globs already): `why`
 * then says what was wrong, NUL-terminated and cut to `len` when len > 0. Thread-safe; globs are
 * never removed. */
CUDASNAP_API int cudasnap_allocator_frame(const char *glob, char *why, size_t len);

#ifdef __cplusplus
}
#endif

#endif

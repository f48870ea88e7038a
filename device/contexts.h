/* SPDX-License-Identifier: Apache-2.0 */
/* One caching allocator per CUDA context, found from the calling thread's current context.
 *
 * Contexts are discovered at their first allocation. A context slot is never freed while the
 * process runs (lookups read it without a lock); a destroyed context's slot, with its emptied
 * allocator and its statistics, is reused by the next new context of the same device. */
#ifndef CS_CONTEXTS_H
#define CS_CONTEXTS_H

#include <stdbool.h>
#include <stdint.h>

#include "allocator/allocator.h"
#include "common/cs_options.h"
#include "real/cuda_api.h"
#include "snapshot/snapshot.h"

typedef struct cs_context_s cs_context_t;

/* At activation, before any context is served: the options every allocator is made with. The
 * driver watch asks the driver in this registry's contexts from now on
 * (cs_contexts_with_device). */
void cs_contexts_start(const cs_options_t *opts);

/* The context current on this thread, created on first use. NULL when the thread has no current
 * context, or cudasnap cannot serve it (then calls pass through to the driver). */
cs_context_t *cs_contexts_current(void);

int cs_context_device(const cs_context_t *c);

/* The program's allocation of `bytes` from c's cache, with the caller's stack: the allocator's
 * answer (allocator/allocator.h), once more after the device's other contexts emptied their caches
 * when it is out of memory (as the driver's view of memory has it, they may hold free segments).
 * The hot path. */
int cs_contexts_malloc(cs_context_t *c, size_t bytes, uint32_t stack, uintptr_t *addr);

/* Free addr in whichever context's allocator holds it. Returns 0, the synchronization's status
 * (sync mode), or -CS_EINVAL when no allocator handed it out. */
int cs_contexts_free(uintptr_t addr);

/* cuMemFreeAsync of a block of the cache: the driver would free the whole segment under it, live
 * neighbours included, so the driver never sees it. The block is the program's cudaMalloc memory,
 * which the driver frees once the stream's work before the call is done: the stream is
 * synchronized (never during a capture of it, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: a graph
 * cannot free cudaMalloc memory, and the driver refuses; per_thread: the per-thread default
 * stream's variant) and the block freed as cs_contexts_free frees it. Returns its codes, or the
 * driver's answer (a CUresult above 0) when the stream was not synchronized. */
int cs_contexts_free_after_stream(uintptr_t addr, uintptr_t stream, bool per_thread);

/* Is addr inside any segment cudasnap holds (live, cached or pending)? Then the driver must never
 * see it freed or taken for memory passed through. Sets *base to the segment's start. */
bool cs_contexts_find_segment(uintptr_t addr, uintptr_t *base);

/* cs_contexts_find_segment, also giving the start of the block that holds addr. */
bool cs_contexts_find_block(uintptr_t addr, uintptr_t *segment, uintptr_t *block);

/* Bytes of whole segments without a live block in the allocators of a device: what emptying
 * their caches gives back (cuMemGetInfo's adjustment). */
size_t cs_contexts_releasable_bytes(int device);

/* An allocation on device failed for lack of memory: empty the cache of every live context of
 * the device but `except` (NULL: none), as empty_cache does. Returns whether any memory went
 * back to the device, so that a retry may succeed. Nothing is released during a capture. */
bool cs_contexts_release_device(int device, const cs_context_t *except);

/* A context is about to be destroyed (context_alive: still usable) or is gone. */
void cs_contexts_drop(CUcontext ctx, bool context_alive);

/* The primary context of device is about to be reset, or was released for good. */
void cs_contexts_drop_primary(CUdevice device, bool context_alive);

/* Copy every live context's allocator state and (with_history) every history, consistently (see
 * contexts.c). Each lock is taken before deadline_ns (CLOCK_MONOTONIC) or not at all, since its
 * holder may never let go (a thread stuck in the driver, or the one that crashed): an allocator
 * whose lock was not had is left out, state and history, and so is the memory passed through if
 * its lock was not had. The registry lock is never held while an allocator's is waited for.
 * Returns the devices left out, a bit each; *passthrough_left_out says whether that was. */
uint64_t cs_contexts_snapshot(cs_snap_state_t *state, bool with_history, uint64_t deadline_ns,
                              bool *passthrough_left_out);

/* Successful allocations so far in every live context's allocator (allocation.all.allocated,
 * summed, as a snapshot's memory_stats count them); each allocator's lock is held for the copy of
 * its statistics only, and waited for wait_ms at most in all: -1 when one was not had. */
int64_t cs_contexts_allocations(unsigned wait_ms);

/* After a snapshot: a `snapshot` entry in each device's history, as PyTorch records one. */
void cs_contexts_mark_snapshot(const cs_snap_state_t *state, uint64_t deadline_ns);

/* cudasnap_record_history: start or stop (and forget) every history, and those of new contexts. */
void cs_contexts_set_history(bool enabled);

/* Calls f(device, arg) with a context of device current on this thread (a live one of cudasnap's,
 * else the device's primary context, retained meanwhile, when it is active); f is not called when
 * there is none, or the registry lock was not had before deadline_ns. f calls only real driver
 * functions. No lock of cudasnap's is held while f or the driver runs. */
void cs_contexts_with_device(int device, uint64_t deadline_ns, void (*f)(int device, void *arg), void *arg);

/* The driver's device count, as seen at the first context (0 before). */
int cs_contexts_device_count(void);

/* The device of the calling thread's current context when cudasnap knows it, else 0. Calls no
 * CUDA function unless the driver is in use already (then only cuCtxGetCurrent). */
int cs_contexts_thread_device(void);

/* fork */
void cs_contexts_prefork(void);
void cs_contexts_postfork(bool child);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* What cudasnap must know about streams: which non-blocking streams exist in each context (a
 * fence records an event on each, besides the legacy stream), and whether any stream capture is
 * underway in the process (then nothing synchronizes or records events). Fed by the stream and
 * capture hooks; thread-safe. */
#ifndef CS_STREAMS_H
#define CS_STREAMS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern atomic_int cs_streams_capturing;

static inline bool cs_streams_capture_underway(void) {
  return atomic_load_explicit(&cs_streams_capturing, memory_order_acquire) > 0;
}

void cs_streams_created(uintptr_t stream, uintptr_t ctx, unsigned flags);
/* A stream of a green context (always non-blocking): in every context's fence set. */
void cs_streams_green_created(uintptr_t stream);
/* Before the driver destroys `stream`: an event recorded on it now keeps its pending work in
 * every later fence until it completes. */
void cs_streams_destroyed(uintptr_t stream);
void cs_streams_capture_began(uintptr_t stream, int mode);
void cs_streams_capture_ended(uintptr_t stream);

/* Is `stream` capturing (per_thread: the per-thread default stream's variant of the query)? Asked
 * of the driver only while a capture is underway; false at once otherwise. On a capturing stream,
 * stream-ordered calls make graph memory nodes, not memory. */
bool cs_streams_is_capturing(uintptr_t stream, bool per_thread);

/* Would the driver refuse a potentially unsafe call (cuMemAlloc, cuMemFree) from this thread now,
 * for the captures underway? Asks the driver for this thread's capture mode only while a capture
 * is underway; false at once otherwise. */
bool cs_streams_capture_forbids_this_thread(void);

/* The legacy stream, then every live non-blocking stream of ctx and of green contexts; returns
 * how many there are. SIZE_MAX while a destroyed stream's work may still be pending, or after a
 * stream could not be tracked: then only a synchronization covers every stream. pre: no capture
 * is underway (it queries events). */
size_t cs_streams_fence_set(uintptr_t ctx, uintptr_t *out, size_t cap);

/* ctx was synchronized: waits for the green contexts' streams too and forgets the destroyed
 * streams that covered. Returns the first error of those waits, or 0. */
int cs_streams_synchronized(uintptr_t ctx);

/* fork (see process/lifecycle.c) */
void cs_streams_prefork(void);
void cs_streams_postfork(bool child);

#endif

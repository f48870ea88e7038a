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
void cs_streams_destroyed(uintptr_t stream);
void cs_streams_capture_began(uintptr_t stream);
void cs_streams_capture_ended(uintptr_t stream);

/* The legacy stream, then every live non-blocking stream of ctx; returns how many there are. */
size_t cs_streams_fence_set(uintptr_t ctx, uintptr_t *out, size_t cap);

/* fork (see lifecycle.c) */
void cs_streams_prefork(void);
void cs_streams_postfork(bool child);

#endif

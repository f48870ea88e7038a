/* SPDX-License-Identifier: Apache-2.0 */
/* An in-process cs_backend_t for allocator tests: fake device addresses under a capacity limit,
 * events whose completion the test controls, a capture switch, injected failures, and call
 * counts. It also counts contract violations (a sync or event call during a capture, freeing an
 * unknown segment), which tests assert to be zero. */
#ifndef CS_FAKE_BACKEND_H
#define CS_FAKE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocator/backend.h"

enum { FAKE_MAX_SEGMENTS = 4096, FAKE_MAX_EVENTS = 4096, FAKE_MAX_STREAMS = 8 };

typedef struct fake_segment_s {
  uintptr_t addr;
  size_t size;
} fake_segment_t;

typedef struct fake_event_s {
  bool exists;
  bool recorded;
  bool complete;
  uintptr_t stream;
} fake_event_t;

typedef struct fake_backend_s {
  size_t capacity;            /* device bytes */
  size_t used;
  uintptr_t next_addr;
  fake_segment_t segments[FAKE_MAX_SEGMENTS];
  size_t segment_count;

  fake_event_t events[FAKE_MAX_EVENTS];
  size_t event_count;
  bool events_complete_on_record; /* events complete at once (an idle device) */

  uintptr_t streams[FAKE_MAX_STREAMS];
  size_t stream_count;

  bool capturing;
  int sync_status;            /* returned by synchronize (a sticky error from earlier work) */
  int fail_next_alloc;        /* if non-zero, the next segment_alloc returns it */
  int fail_next_free;         /* if non-zero, the next segment_free returns it, freeing nothing
                                 (a sticky error from earlier work) */

  /* call counts */
  int allocs, frees, syncs, records, queries, creates, destroys;
  int violations;             /* contract breaches by the allocator */
} fake_backend_t;

/* A fake device with `capacity` bytes, one fence stream (the legacy stream, handle 0). */
void fake_backend_init(fake_backend_t *fb, size_t capacity);
cs_backend_t fake_backend_as_backend(fake_backend_t *fb);

/* Complete every recorded event (the device caught up). */
void fake_backend_complete_events(fake_backend_t *fb);
size_t fake_backend_incomplete_events(const fake_backend_t *fb);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/fakes/fake_backend.h"

#include <string.h>

#include "common/cs_error.h"

#define FAKE_BASE ((uintptr_t)0x7f0000000000)

void fake_backend_init(fake_backend_t *fb, size_t capacity) {
  memset(fb, 0, sizeof *fb);
  fb->capacity = capacity;
  fb->next_addr = FAKE_BASE;
  fb->stream_count = 1; /* the legacy stream, handle 0 */
}

static int fake_segment_alloc(void *self, size_t size, uintptr_t *addr) {
  fake_backend_t *fb = self;
  fb->allocs++;
  if (fb->fail_next_alloc) {
    int rc = fb->fail_next_alloc;
    fb->fail_next_alloc = 0;
    return rc;
  }
  if (size == 0 || size % 512 != 0) fb->violations++;
  if (fb->used + size > fb->capacity || fb->segment_count == FAKE_MAX_SEGMENTS) return -CS_ENOMEM;
  /* Never reuse an address: a stale pointer in the allocator then shows up as a lookup miss. */
  *addr = fb->next_addr;
  fb->next_addr += (size + 0x1fffff) & ~(uintptr_t)0x1fffff;
  fb->segments[fb->segment_count++] = (fake_segment_t){.addr = *addr, .size = size};
  fb->used += size;
  return 0;
}

static int fake_segment_free(void *self, uintptr_t addr, size_t size) {
  fake_backend_t *fb = self;
  fb->frees++;
  if (fb->fail_next_free) {
    int rc = fb->fail_next_free;
    fb->fail_next_free = 0;
    return rc;
  }
  for (size_t i = 0; i < fb->segment_count; i++) {
    if (fb->segments[i].addr != addr) continue;
    if (fb->segments[i].size != size) fb->violations++;
    fb->used -= fb->segments[i].size;
    fb->segments[i] = fb->segments[--fb->segment_count];
    return 0;
  }
  fb->violations++;
  return 1; /* CUDA_ERROR_INVALID_VALUE */
}

static int fake_mem_info(void *self, size_t *free_bytes, size_t *total_bytes) {
  fake_backend_t *fb = self;
  *free_bytes = fb->capacity - fb->used;
  *total_bytes = fb->capacity;
  return 0;
}

void fake_backend_complete_events(fake_backend_t *fb) {
  for (size_t i = 0; i < fb->event_count; i++)
    if (fb->events[i].recorded) fb->events[i].complete = true;
}

size_t fake_backend_incomplete_events(const fake_backend_t *fb) {
  size_t n = 0;
  for (size_t i = 0; i < fb->event_count; i++)
    if (fb->events[i].exists && fb->events[i].recorded && !fb->events[i].complete) n++;
  return n;
}

static int fake_synchronize(void *self) {
  fake_backend_t *fb = self;
  fb->syncs++;
  if (fb->capturing) fb->violations++;
  fake_backend_complete_events(fb);
  return fb->sync_status;
}

/* Event handles are index + 1, so 0 is never a valid event. */
static fake_event_t *fake_event(fake_backend_t *fb, uintptr_t event) {
  if (event == 0 || event > fb->event_count || !fb->events[event - 1].exists) {
    fb->violations++;
    return NULL;
  }
  return &fb->events[event - 1];
}

static int fake_event_create(void *self, uintptr_t *event) {
  fake_backend_t *fb = self;
  fb->creates++;
  if (fb->event_count == FAKE_MAX_EVENTS) return 2; /* CUDA_ERROR_OUT_OF_MEMORY as a status */
  fb->events[fb->event_count] = (fake_event_t){.exists = true};
  *event = ++fb->event_count;
  return 0;
}

static int fake_event_record(void *self, uintptr_t event, uintptr_t stream) {
  fake_backend_t *fb = self;
  fb->records++;
  if (fb->capturing) fb->violations++;
  fake_event_t *e = fake_event(fb, event);
  if (!e) return 400; /* CUDA_ERROR_INVALID_HANDLE */
  e->recorded = true;
  e->complete = fb->events_complete_on_record;
  e->stream = stream;
  return 0;
}

static int fake_event_query(void *self, uintptr_t event) {
  fake_backend_t *fb = self;
  fb->queries++;
  if (fb->capturing) fb->violations++;
  fake_event_t *e = fake_event(fb, event);
  if (!e) return 400;
  return e->complete ? 0 : -CS_EAGAIN;
}

static int fake_event_destroy(void *self, uintptr_t event) {
  fake_backend_t *fb = self;
  fb->destroys++;
  fake_event_t *e = fake_event(fb, event);
  if (!e) return 400;
  e->exists = false;
  return 0;
}

static bool fake_is_capturing(void *self) { return ((fake_backend_t *)self)->capturing; }

static size_t fake_fence_streams(void *self, uintptr_t *streams, size_t cap) {
  fake_backend_t *fb = self;
  for (size_t i = 0; i < fb->stream_count && i < cap; i++) streams[i] = fb->streams[i];
  return fb->stream_count;
}

static const cs_backend_ops_t fake_ops = {
    .segment_alloc = fake_segment_alloc,
    .segment_free = fake_segment_free,
    .mem_info = fake_mem_info,
    .synchronize = fake_synchronize,
    .event_create = fake_event_create,
    .event_record = fake_event_record,
    .event_query = fake_event_query,
    .event_destroy = fake_event_destroy,
    .is_capturing = fake_is_capturing,
    .fence_streams = fake_fence_streams,
};

cs_backend_t fake_backend_as_backend(fake_backend_t *fb) {
  return (cs_backend_t){.ops = &fake_ops, .self = fb};
}

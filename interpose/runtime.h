/* The process-wide state of libcudasnap.so: the options, and which caching allocator serves
 * which device. This is the library's only singleton (docs/design.md section 1); the layers below
 * take everything as arguments.
 *
 * The driver hooks register an allocator per device context as contexts come into use and
 * remove it when the context goes away; the opt-in API (api.c) reads through here. All functions
 * are thread-safe. */
#ifndef CS_RUNTIME_H
#define CS_RUNTIME_H

#include <stdbool.h>

#include "allocator/allocator.h"
#include "common/cs_options.h"
#include "snapshot/job.h"

enum {
  CS_MAX_DEVICES = 64,
  CS_MAX_CONTEXTS_PER_DEVICE = 8, /* contexts of one device profiled at once */
};

/* The options, parsed from the environment on first use (one warning line per bad value). */
const cs_options_t *cs_runtime_options(void);

/* The process's place in its job (snapshot/job.h), read with the options, once. */
const cs_job_t *cs_runtime_job(void);

/* Register a for `device`. Returns 0, or -CS_EINVAL for a bad ordinal or a full device slot. */
int cs_runtime_add_allocator(int device, cs_allocator_t *a);

/* Forget a; the caller destroys it afterwards. */
void cs_runtime_remove_allocator(cs_allocator_t *a);

/* Call fn for every allocator of `device`, under the registry's read lock (fn must not add or
 * remove allocators). Returns how many there were. */
typedef void (*cs_runtime_allocator_fn)(void *ctx, cs_allocator_t *a);
int cs_runtime_for_each_allocator(int device, cs_runtime_allocator_fn fn, void *ctx);

/* The out-of-memory answers the driver gave the program past the cache (memory passed through,
 * interpose/foreign.c), per device: num_ooms counts them with the allocators' own, wherever it is
 * read (the API, snapshots, the live record). Reset as num_ooms is (reset_accumulated); device -1
 * resets every device (a fork child). Lock-free. */
void cs_runtime_count_passthrough_oom(int device);
int64_t cs_runtime_passthrough_ooms(int device);
void cs_runtime_reset_passthrough_ooms(int device);

/* Resolve an API device argument: an ordinal stays, -1 becomes the calling thread's current
 * device. Returns -1 for anything else. */
int cs_runtime_resolve_device(int device);

/* Where the current device comes from; the driver layer installs a function asking the driver.
 * Until then the current device is 0. */
typedef int (*cs_runtime_current_device_fn)(void);
void cs_runtime_set_current_device_fn(cs_runtime_current_device_fn fn);

#endif

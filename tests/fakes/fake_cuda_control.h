/* SPDX-License-Identifier: Apache-2.0 */
/* Test-only control API of the fake CUDA driver (tests/fakes/fake_cuda.c, built as
 * tests/fakes/libcuda.so.1). The fake driver exports these functions next to the driver API.
 *
 * How a test reaches them:
 *   - link the fake driver (target fake_cuda) and call them directly; or
 *   - call fake_cuda_control_load() below, which finds the already loaded libcuda.so.1 with
 *     dlopen(RTLD_NOLOAD) and looks the functions up on that handle. That works however the driver
 *     was loaded, including by a runtime that dlopen()ed it RTLD_LOCAL (the real libcudart does:
 *     RTLD_NOW, no RTLD_GLOBAL), where dlsym(RTLD_DEFAULT, "fake_cuda_...") finds nothing.
 *
 * Environment read by the fake driver when it is loaded:
 *   FAKE_CUDA_DEVICES         device count, 0-16 (default 2; 0 makes cuInit fail with
 *                             CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_CAPACITY        bytes of memory per device (default 8 GiB)
 *   FAKE_CUDA_HOST_CAPACITY   bytes of host memory the driver can pin (default: no limit), for
 *                             cuMemHostAlloc/cuMemAllocHost and cuMemCreate located on the host
 *                             together; past it they fail with CUDA_ERROR_OUT_OF_MEMORY, as a
 *                             driver that cannot pin the pages does
 *   FAKE_CUDA_MANUAL_EVENTS   1: start with manual events (as fake_cuda_set_manual_events(1))
 *   FAKE_CUDA_LOG             append one line per driver call to this file
 *
 * All functions are thread-safe. */
#ifndef CS_FAKE_CUDA_CONTROL_H
#define CS_FAKE_CUDA_CONTROL_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FAKE_CUDA_API __attribute__((visibility("default")))

typedef struct fake_cuda_counters {
  uint64_t mem_alloc;            /* successful cuMemAlloc_v2 calls (no other allocation API) */
  uint64_t mem_free;             /* cuMemFree_v2 calls that freed something (of any device
                                    memory kind; freeing 0 is not counted) */
  uint64_t mem_alloc_failed;     /* failed cuMemAlloc_v2 calls, whatever the error */
  uint64_t ctx_synchronize;      /* cuCtxSynchronize and cuCtxSynchronize_v2 calls, all outcomes */
  uint64_t event_record;         /* cuEventRecord and _ptsz calls, all outcomes */
  uint64_t event_query;          /* cuEventQuery calls, all outcomes */
  uint64_t capture_violations;   /* calls refused because a stream capture was underway */
  uint64_t proc_address_lookups; /* cuGetProcAddress and cuGetProcAddress_v2 calls */
  uint64_t primary_ctx_resets;   /* successful cuDevicePrimaryCtxReset and _v2 calls */
  size_t bytes_in_use;           /* device bytes allocated now, all devices and device-memory
                                    APIs (requested sizes; stream-ordered allocations count as
                                    their pools' reserved bytes; pinned host and IPC imports
                                    excluded): what cuMemGetInfo reports used, summed */
} fake_cuda_counters_t;

/* Copies the counters. */
FAKE_CUDA_API void fake_cuda_get_counters(fake_cuda_counters_t *out);
/* Zeroes every counter except bytes_in_use. */
FAKE_CUDA_API void fake_cuda_reset_counters(void);
/* 1: events recorded from now on stay incomplete (cuEventQuery -> CUDA_ERROR_NOT_READY) until
 * fake_cuda_complete_events() or a synchronization that covers them. 0: they complete when
 * recorded (the default: an idle device). Already pending events stay pending. */
FAKE_CUDA_API void fake_cuda_set_manual_events(int manual);
/* Completes every pending event, in every context. */
FAKE_CUDA_API void fake_cuda_complete_events(void);
/* cuCtxSynchronize (both ABIs) returns this CUresult until it is cleared with 0, the way a
 * sticky error from a failed kernel is reported. */
FAKE_CUDA_API void fake_cuda_set_sticky_error(int status);
/* Memory per device, in bytes, for every device. Lowering it below what is in use is allowed:
 * cuMemGetInfo then reports 0 free and every allocation fails until enough is freed. */
FAKE_CUDA_API void fake_cuda_set_capacity(size_t bytes);
/* hook(bytesize) is called first by every cuMemAlloc_v2 (NULL: none), on the caller's thread and
 * outside the driver's lock: a test stops or crashes a thread there, inside the driver. */
typedef void (*fake_cuda_alloc_hook_t)(size_t bytesize);
FAKE_CUDA_API void fake_cuda_set_alloc_hook(fake_cuda_alloc_hook_t hook);
/* hook(address) is called by every call that freed device memory (cuMemFree_v2, cuMemFree,
 * cuMemFreeAsync and _ptsz, cuMemUnmap), after the driver freed it and before the call returns,
 * on the caller's thread and outside the driver's lock (NULL: none): a test makes another thread
 * be handed the address there, as a real driver may between its free and its answer. Linked
 * programs only (not in fake_cuda_control_t). */
typedef void (*fake_cuda_free_hook_t)(uintptr_t address);
FAKE_CUDA_API void fake_cuda_set_free_hook(fake_cuda_free_hook_t hook);

/* What the fake cuIpcGetMemHandle writes at the start of CUipcMemHandle.reserved (64 bytes).
 * cuIpcOpenMemHandle in the exporting process fails with CUDA_ERROR_INVALID_CONTEXT, as on a real
 * driver; in any other process (a fork child) it maps `size` fresh bytes: the fake driver's memory
 * is process-private, so the data is not shared. */
#define FAKE_CUDA_IPC_MAGIC "fakeipc"
typedef struct fake_cuda_ipc_payload {
  char magic[8];      /* FAKE_CUDA_IPC_MAGIC, NUL-terminated */
  uint64_t base;      /* the allocation's base address in the exporting process */
  uint64_t size;      /* bytes requested when it was allocated */
  uint64_t buffer_id; /* CU_POINTER_ATTRIBUTE_BUFFER_ID of the allocation */
  int32_t pid;        /* the exporting process */
  int32_t device;     /* the allocation's device ordinal */
} fake_cuda_ipc_payload_t;

/* ---- finding the control API at run time ---- */

typedef struct fake_cuda_control {
  void (*get_counters)(fake_cuda_counters_t *out);
  void (*reset_counters)(void);
  void (*set_manual_events)(int manual);
  void (*complete_events)(void);
  void (*set_sticky_error)(int status);
  void (*set_capacity)(size_t bytes);
  void (*set_alloc_hook)(fake_cuda_alloc_hook_t hook);
} fake_cuda_control_t;

/* Fills *c from the loaded fake driver. Returns 0, or -1 when no fake libcuda.so.1 is loaded yet
 * (the runtime loads it on its first call; call e.g. cudaGetDeviceCount first). */
static inline int fake_cuda_control_load(fake_cuda_control_t *c) {
  void *h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_NOW);
  if (!h) return -1;
  void *sym[7] = {
      dlsym(h, "fake_cuda_get_counters"),    dlsym(h, "fake_cuda_reset_counters"),
      dlsym(h, "fake_cuda_set_manual_events"), dlsym(h, "fake_cuda_complete_events"),
      dlsym(h, "fake_cuda_set_sticky_error"), dlsym(h, "fake_cuda_set_capacity"),
      dlsym(h, "fake_cuda_set_alloc_hook"),
  };
  dlclose(h); /* drops only the reference RTLD_NOLOAD took; whoever loaded the driver keeps it */
  _Static_assert(sizeof *c == sizeof sym, "one object pointer per function pointer");
  for (size_t i = 0; i < 7; i++) {
    if (!sym[i]) return -1;
  }
  /* memcpy, because ISO C has no cast between object and function pointers */
  memcpy(c, sym, sizeof sym);
  return 0;
}

#endif /* CS_FAKE_CUDA_CONTROL_H */

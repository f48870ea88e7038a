/* SPDX-License-Identifier: Apache-2.0 */
/* NVTX's ranges and marks, and the opt-in API's phases, as phases (phases/phases.h): the names of
 * NVTX's messages in their domains, the push/pop ranges of each thread, start/end ranges whose id
 * names them, marks. The NVTX injection (interpose/nvtx.c) and the API (api/api_phase.c) call
 * here; nothing here takes a lock on the recording path or calls CUDA but through `device`, the
 * caller's function that names the annotation's device, asked only when a phase is recorded.
 *
 * Every range is its thread's: a push/pop range the pushing thread's, a start/end range the
 * starting thread's (issue 44). */
#ifndef CS_RANGES_H
#define CS_RANGES_H

#ifndef NVTX_NO_IMPL
#define NVTX_NO_IMPL
#endif
#ifndef NVTX_AS_SYSTEM_HEADER
#define NVTX_AS_SYSTEM_HEADER
#endif
#include <nvtx3/nvToolsExt.h>

#include <stdint.h>
#include <wchar.h>

/* The device a phase is recorded on, asked when one is. */
typedef int (*cs_ranges_device_fn)(void);

/* Names longer than this (domain prefix included) are cut. */
enum { CS_RANGES_NAME_MAX = 512 };

/* The phase id of a message (NULL: the default domain, names as they are; a domain's names are
 * "domain::name"): ASCII, wide (as UTF-8), or an event's attributes (an ASCII, wide or registered
 * message; none: ""). */
uint32_t cs_ranges_name(nvtxDomainHandle_t domain, const char *text);
uint32_t cs_ranges_name_w(nvtxDomainHandle_t domain, const wchar_t *text);
uint32_t cs_ranges_name_attr(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr);

/* A registered string's handle: the phase id of the bare string. */
nvtxStringHandle_t cs_ranges_string_handle(uint32_t name);

/* A domain by its name (equal names share one); NULL past the limit, when its names go to the
 * default domain. Handles stay valid for the life of the process. */
nvtxDomainHandle_t cs_ranges_domain(const char *name);
nvtxDomainHandle_t cs_ranges_domain_w(const wchar_t *name);

/* A thread's name (nvtxNameOsThread takes the kernel's id), for the phases of that thread. */
void cs_ranges_name_thread(uint32_t thread, const char *name);
void cs_ranges_name_thread_w(uint32_t thread, const wchar_t *name);

/* Push/pop, per thread and domain, as nvtxRangePush / nvtxRangePop return: the depth. */
int cs_ranges_push(nvtxDomainHandle_t domain, uint32_t name, cs_ranges_device_fn device);
int cs_ranges_pop(nvtxDomainHandle_t domain, cs_ranges_device_fn device);

/* A range started and ended as nvtxRangeStartA / nvtxRangeEnd record it. The id carries the name
 * (0: nothing recorded) and the starting thread, so the end may come on another thread. */
uint64_t cs_ranges_start(uint32_t name, cs_ranges_device_fn device);
void cs_ranges_end(uint64_t id, cs_ranges_device_fn device);

/* A mark: a phase of no length. */
void cs_ranges_mark(uint32_t name, cs_ranges_device_fn device);

/* After fork the child forgets its parent's phases and pools (installed once, at NVTX's first call
 * or the API's). */
void cs_ranges_install_fork_handler(void);

#endif

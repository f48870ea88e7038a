/* SPDX-License-Identifier: Apache-2.0 */
/* The kinds of memory that pass the cache by (device/passthrough_mem.c records them), as a snapshot
 * names, draws and reconciles them: each segment's "kind", the "passthrough_bytes.*" and
 * "passthrough_ooms.*" statistics keys. Part of the format both sides share: the library records and writes them; the tool reads
 * them in a recording file's pass-through ring (reader/recording.h) and names them (`cudasnap
 * recover`). No state: names and rules only. */
#ifndef CS_PASSTHROUGH_H
#define CS_PASSTHROUGH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cs_passthrough_kind_e {
  CS_PASSTHROUGH_DEVICE,          /* cuMemAlloc (v1), and cuMemAlloc_v2 calls the cache passed on */
  CS_PASSTHROUGH_PITCH,           /* cuMemAllocPitch */
  CS_PASSTHROUGH_MANAGED,         /* cuMemAllocManaged */
  CS_PASSTHROUGH_ASYNC,           /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
  CS_PASSTHROUGH_ARRAY,           /* cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate */
  CS_PASSTHROUGH_VMM_MAPPING,     /* cuMemMap: drawn */
  CS_PASSTHROUGH_IPC,             /* cuIpcOpenMemHandle: another process's memory, drawn */
  CS_PASSTHROUGH_GRAPH,           /* graph memory nodes, live from a launch to a free: drawn */
  CS_PASSTHROUGH_VMM_HANDLE,      /* cuMemCreate: physical memory (counted; drawn through mappings) */
  CS_PASSTHROUGH_VMM_RESERVE,     /* cuMemAddressReserve: address space only */
  CS_PASSTHROUGH_HOST,            /* cuMemHostAlloc, cuMemAllocHost: not device memory */
  CS_PASSTHROUGH_HOST_REGISTERED, /* cuMemHostRegister: not device memory */
  CS_PASSTHROUGH_KINDS
} cs_passthrough_kind_t;

/* Kinds below this one are drawn as device segments. */
enum { CS_PASSTHROUGH_DRAWN_KINDS = CS_PASSTHROUGH_VMM_HANDLE };

/* Rows of per-device figures: one per device, and this last one for memory of no device (pinned
 * host memory, reservations). */
enum { CS_PASSTHROUGH_MAX_DEVICES = 64, CS_PASSTHROUGH_NO_DEVICE = CS_PASSTHROUGH_MAX_DEVICES };

/* The name a snapshot and the statistics keys use: "device", "pitch", "managed", "async", ... */
const char *cs_passthrough_kind_name(cs_passthrough_kind_t kind);

/* Does the driver count this kind as this process's used device memory (cuMemGetInfo)? Drawn
 * mappings are not (their physical handles are); IPC imports are another process's. */
bool cs_passthrough_kind_counted(cs_passthrough_kind_t kind);
/* Is it counted inside a pool's reserved bytes instead (stream-ordered and graph allocations)? */
bool cs_passthrough_kind_pooled(cs_passthrough_kind_t kind);

/* Bytes now, at peak, ever allocated and ever freed, per device and kind, and the out-of-memory
 * answers the driver gave the program for the kind: cudasnap's own statistics keys,
 * "passthrough_bytes.<kind>.current" (.peak, .allocated, .freed) and "passthrough_ooms.<kind>". */
typedef struct cs_passthrough_stat_s {
  int64_t current, peak, allocated, freed;
  int64_t ooms;
} cs_passthrough_stat_t;

enum { CS_PASSTHROUGH_STAT_FIELDS = 5 };
/* The kinds a row of statistics has: a device's (everything but reservations and host memory),
 * or the host row's (pinned and registered host memory). */
bool cs_passthrough_kind_in_row(cs_passthrough_kind_t kind, bool host_row);
/* The key of field f (0..4) of kind k, written into buf. */
void cs_passthrough_stat_key(cs_passthrough_kind_t kind, int field, char *buf, size_t len);
int64_t cs_passthrough_stat_field(const cs_passthrough_stat_t *s, int field);

#endif

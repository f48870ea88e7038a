/* Memory the program obtained past the cache: pitch, managed, stream-ordered, host pinned,
 * arrays, VMM handles and mappings, IPC imports, legacy 32-bit allocations. cudasnap passes those
 * calls through and records what exists here, so that snapshots can show all memory even where it
 * is not cached. Thread-safe; an entry costs one small heap allocation (never on the cache path). */
#ifndef CS_FOREIGN_H
#define CS_FOREIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cs_foreign_kind_e {
  CS_FOREIGN_DEVICE,          /* cuMemAlloc (v1), cuMemAllocPitch, allocations passed through */
  CS_FOREIGN_MANAGED,         /* cuMemAllocManaged */
  CS_FOREIGN_ASYNC,           /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
  CS_FOREIGN_HOST,            /* cuMemHostAlloc, cuMemAllocHost */
  CS_FOREIGN_HOST_REGISTERED, /* cuMemHostRegister */
  CS_FOREIGN_ARRAY,           /* cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate (estimated size) */
  CS_FOREIGN_VMM_HANDLE,      /* cuMemCreate: physical memory */
  CS_FOREIGN_VMM_RESERVE,     /* cuMemAddressReserve: address space only */
  CS_FOREIGN_VMM_MAPPING,     /* cuMemMap */
  CS_FOREIGN_IPC,             /* cuIpcOpenMemHandle: another process's memory */
  CS_FOREIGN_KINDS
} cs_foreign_kind_t;

void cs_foreign_add(cs_foreign_kind_t kind, uintptr_t key, size_t size, int device);

/* Forget the entry of that kind and key; false if there was none. */
bool cs_foreign_remove(cs_foreign_kind_t kind, uintptr_t key);

/* Live entries and bytes of a kind. */
void cs_foreign_totals(cs_foreign_kind_t kind, size_t *count, size_t *bytes);

const char *cs_foreign_kind_name(cs_foreign_kind_t kind);

/* fork: the parent's memory is not the child's */
void cs_foreign_prefork(void);
void cs_foreign_postfork(bool child);

#endif

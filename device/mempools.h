/* SPDX-License-Identifier: Apache-2.0 */
/* The stream-ordered memory pools the program allocated from (cuMemAllocFromPoolAsync), whose
 * reserved bytes the driver query adds up (device/driver_query.h), until the program destroys
 * them. Thread-safe (one lock, taken last: no other lock is taken under it). */
#ifndef CS_MEMPOOLS_H
#define CS_MEMPOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void cs_mempools_used(uintptr_t pool, int device);
void cs_mempools_destroyed(uintptr_t pool);

/* The pools seen on device, up to cap; returns the count. */
size_t cs_mempools_of(int device, uintptr_t *out, size_t cap);

/* The pools seen on every device. */
size_t cs_mempools_count(void);

/* fork: the parent's pools are not the child's. */
void cs_mempools_prefork(void);
void cs_mempools_postfork(bool child);

#endif

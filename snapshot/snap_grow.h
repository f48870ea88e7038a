/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot state's arrays grow by doubling (snapshot.c, snap_pools.c). */
#ifndef CS_SNAP_GROW_H
#define CS_SNAP_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Room for need items in a doubling array (items, capacity); false without host memory (the
 * array is unchanged). */
bool cs_snap_grow(void **items, size_t *capacity, size_t need, size_t item_size);

#endif

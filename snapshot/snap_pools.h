/* SPDX-License-Identifier: Apache-2.0 */
/* Pools seen from inside (NVTX's memory API, phases/pools.h) in a snapshot: the block a pool's heap
 * lies in is drawn as the heap's live regions (active, each with the stack that registered it and
 * its NVTX name as the block's user_metadata) and inactive blocks for the rest; the trace gets the
 * events that make it so (the block's free at the heap's registration, an alloc per region at its
 * registration), so the viewer's backward replay stays consistent. The caching allocator's
 * statistics are untouched: regions are not its allocations.
 *
 * What the trace shows is the regions live at the snapshot, each from its registration with its
 * current size: regions resized or unregistered earlier leave no trace of their past. */
#ifndef CS_SNAPSHOT_SNAP_POOLS_H
#define CS_SNAPSHOT_SNAP_POOLS_H

#include "memviz/emit.h"
#include "phases/pools.h"
#include "snapshot/snap_state.h"

/* Split the blocks and extend the history of s (after cs_snap_state_finish). Heaps that do not lie
 * inside one allocated block are left out (*drawn counts the others). -CS_EHOSTMEM without memory
 * (then s is unchanged). */
int cs_snap_state_add_pools(cs_snap_state_t *s, const cs_pool_list_t *pools, size_t *drawn);

/* The `pools` list of the snapshot's cudasnap key: per heap, device, address, size, registered
 * bytes and regions. */
void cs_snap_write_pools(cs_emitter_t *e, const cs_pool_list_t *pools);

#endif

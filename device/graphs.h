/* SPDX-License-Identifier: Apache-2.0 */
/* Graph memory nodes: an allocation node has its address from its creation (cuGraphAddMemAllocNode,
 * or a cuMemAllocAsync during stream capture) but memory only from a launch of its graph until it
 * is freed (a free node, cuMemFree[Async], or the next launch of a graph instantiated to free on
 * launch). cudasnap learns a graph's memory nodes when it is instantiated (the driver lists them)
 * and, at each launch, hands device/passthrough_mem.c the allocations the launch leaves live and the
 * frees of other graphs' allocations, so that snapshots draw graph memory as kind `graph`.
 * Allocations made and freed inside one launch are not drawn (the graph memory pool's reserved
 * bytes, in the reconciliation, hold them).
 *
 * Thread-safe (one lock). A program without memory nodes pays one atomic load per launch. */
#ifndef CS_GRAPHS_H
#define CS_GRAPHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The stack of the call that made the allocation node of address `addr`, drawn as its site. */
void cs_graphs_node_site(uintptr_t addr, uint32_t stack);

/* `exec` was instantiated from `graph` (auto_free: CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
 * stack: the instantiating call's, for nodes whose site is not known. With a context current. */
void cs_graphs_instantiated(uintptr_t exec, uintptr_t graph, bool auto_free, uint32_t stack);

/* A successful launch of `exec` on `stream`, from the call whose stack `stack()` gives (taken
 * only when the launch frees something). */
void cs_graphs_launched(uintptr_t exec, uintptr_t stream, uint32_t (*stack)(void));

void cs_graphs_exec_destroyed(uintptr_t exec);

/* The bytes of every allocation node of an instantiated exec (0: none, or not known), or of a
 * graph (asked of the driver): what a launch or an upload asks the graph memory pool for, the
 * size an out-of-memory answer to it records. */
size_t cs_graphs_exec_bytes(uintptr_t exec);
size_t cs_graphs_graph_bytes(uintptr_t graph);

/* In a fork child: the parent's graphs are not the child's. */
void cs_graphs_postfork_child(void);

#endif

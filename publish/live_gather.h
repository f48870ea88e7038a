/* SPDX-License-Identifier: Apache-2.0 */
/* The figures of the live record (live/live_format.h), gathered by the control thread at each
 * publication: per device, the allocators' statistics and their live blocks by allocation site,
 * the driver's last answer, the open phase.
 *
 * The live bytes per site come from the counts each allocator keeps by stack as blocks come and go
 * (allocator/stack_live.h), copied a page of stacks per hold of its lock: a hold copies the
 * statistics and CS_STACK_LIVE_PAGE counts at most, whatever the number of live blocks, where a
 * walk of the blocks held it 248 us at 100,000 and milliseconds at a million (bench/README.md at ce4c996, "The
 * live record" and "The live record without a walk"). A lock that is not had within
 * CS_LIVE_LOCK_WAIT_MS (its holder is stuck in the driver) leaves that device's figures as they
 * were, marked stale. Sites are named outside every lock, as `cudasnap summary` names them
 * (memviz/site_rule.h), each stack once: its name is kept for later publications (until a fork
 * child clears the stack table and its ids name other stacks). */
#ifndef CS_LIVE_GATHER_H
#define CS_LIVE_GATHER_H

#include <stddef.h>

#include "live/live_format.h"

enum { CS_LIVE_LOCK_WAIT_MS = 10 };

typedef struct cs_live_gather_s cs_live_gather_t;

/* NULL without host memory. */
cs_live_gather_t *cs_live_gather_create(void);
void cs_live_gather_destroy(cs_live_gather_t *g);

/* This moment's figures into out[0..CS_LIVE_MAX_DEVICES): one entry per device that has an
 * allocator, in device order; `previous` (prev_count entries, the last publication's) gives the
 * figures of a device whose lock was not had. Returns the entries filled. */
size_t cs_live_gather(cs_live_gather_t *g, cs_live_device_t *out, const cs_live_device_t *previous, size_t prev_count);

#endif

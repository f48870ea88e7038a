/* SPDX-License-Identifier: Apache-2.0 */
/* The report's tables of allocation sites, stacks and frames: every site, stack and frame the page
 * shows is written once and referred to by its index, so a stack shared by thousands of blocks
 * costs its bytes once.
 *
 * A site is cs_site_of's (analysis/sites.h): the report names sites exactly as `summary` does. Each
 * site keeps one representative stack, the stack of the largest block seen at it, shown when the
 * page is asked for "the site's stack". Stacks are equal when their frame lists are equal in
 * content, as Python compares them (report_stacks.c: numbers by value, 2 apart from 2.0, tuples
 * apart from lists); frames when name, file and line are.
 *
 * Strings point into the snapshot model: the tables must not outlive it. */
#ifndef CS_REPORT_STACKS_H
#define CS_REPORT_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/sites.h"
#include "analysis/val_map.h"
#include "memviz/emit.h"
#include "model/doc.h"

/* "No stack": a block or site without frames. */
#define CS_REPORT_NONE UINT32_MAX

/* An open-addressing index from a hash to positions in a caller's array (index + 1 per slot). */
typedef struct cs_report_index_s {
  uint32_t *slots;
  uint64_t *hashes; /* per slot, so growing never recomputes a hash */
  size_t nslots;    /* a power of two, kept above twice count */
  size_t count;
} cs_report_index_t;

typedef struct cs_report_stacks_s {
  const cs_doc_t *doc;
  cs_sites_t sites;       /* site -> position (insertion order: never sorted) */
  uint32_t *site_stack;   /* per site: its representative stack, or CS_REPORT_NONE */
  uint64_t *site_best;    /* per site: bytes of the block that gave that stack */
  size_t site_cap;
  /* Every frame list met -> its site's position, and the position of the site of no stack
   * (CS_REPORT_NONE until met): the timeline asks once per trace entry. */
  cs_val_map_t site_of;
  uint32_t no_stack_site;
  cs_val_t *stacks;       /* per stack: its first frame list (the others are equal to it) */
  size_t nstacks, stack_cap;
  cs_val_map_t stack_of;  /* every frame list met -> its stack (equal lists are one word, mostly) */
  cs_report_index_t stack_index; /* stacks by content, for the lists equal to one in another word */
} cs_report_stacks_t;

/* The tables of the sites and stacks of doc's blocks. */
void cs_report_stacks_init(cs_report_stacks_t *r, const cs_doc_t *doc);
void cs_report_stacks_free(cs_report_stacks_t *r);

/* The position of a block's site, the site registered if new; a block of `bytes` with these
 * frames (CS_VAL_ABSENT: none) may become the site's representative stack. Returns 0, or -1
 * without host memory. */
int cs_report_site(cs_report_stacks_t *r, cs_val_t frames, uint64_t bytes, uint32_t *site);

/* The position of a site already registered, or CS_REPORT_NONE. */
uint32_t cs_report_site_find(const cs_report_stacks_t *r, const cs_site_t *site);

/* The position of a frame list, registered if new; CS_REPORT_NONE for CS_VAL_ABSENT (or anything
 * but a list) or an empty list. Returns 0, or -1 without host memory. */
int cs_report_stack(cs_report_stacks_t *r, cs_val_t frames, uint32_t *stack);

/* Write the tables as members of the dict being written:
 *   "stacks": [[frame, ...], ...]            innermost frame first, as in the snapshot
 *   "frames": [[name, file, line], ...]
 *   "sites":  [[name, file, line, stack], ...]  name null for "(no stack)"; stack -1 for none
 *   "stack_sites": [site, ...]               each stack's site; -1 when no block of that site
 *                                            was registered (a stack only pending frees have)
 * Returns 0, or -1 without host memory. */
int cs_report_stacks_emit(const cs_report_stacks_t *r, cs_emitter_t *e);

#endif

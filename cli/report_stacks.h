/* The report's tables of allocation sites, stacks and frames: every site, stack and frame the page
 * shows is written once and referred to by its index, so a stack shared by thousands of blocks
 * costs its bytes once.
 *
 * A site is cs_site_of's (cli/sites.h): the report names sites exactly as `summary` does. Each
 * site keeps one representative stack, the stack of the largest block seen at it, shown when the
 * page is asked for "the site's stack". Stacks are equal when their frame lists are equal
 * (cli/tree.h); frames when name, file and line are.
 *
 * Strings point into the snapshot tree: the tables must not outlive it. */
#ifndef CS_CLI_REPORT_STACKS_H
#define CS_CLI_REPORT_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "cli/sites.h"
#include "memviz/emit.h"

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
  cs_sites_t sites;       /* site -> position (insertion order: never sorted) */
  uint32_t *site_stack;   /* per site: its representative stack, or CS_REPORT_NONE */
  uint64_t *site_best;    /* per site: bytes of the block that gave that stack */
  size_t site_cap;
  const cJSON **stacks;   /* per stack: its first frame list (the others are equal to it) */
  size_t nstacks, stack_cap;
  cs_report_index_t stack_index;
} cs_report_stacks_t;

void cs_report_stacks_init(cs_report_stacks_t *r);
void cs_report_stacks_free(cs_report_stacks_t *r);

/* The position of a block's site, the site registered if new; a block of `bytes` with these
 * frames (NULL: none) may become the site's representative stack. Returns 0, or -1 without host
 * memory. */
int cs_report_site(cs_report_stacks_t *r, const cJSON *frames, uint64_t bytes, uint32_t *site);

/* The position of a site already registered, or CS_REPORT_NONE. */
uint32_t cs_report_site_find(const cs_report_stacks_t *r, const cs_site_t *site);

/* The position of a frame list, registered if new; CS_REPORT_NONE for NULL or an empty list.
 * Returns 0, or -1 without host memory. */
int cs_report_stack(cs_report_stacks_t *r, const cJSON *frames, uint32_t *stack);

/* Write the tables as members of the dict being written:
 *   "stacks": [[frame, ...], ...]            innermost frame first, as in the snapshot
 *   "frames": [[name, file, line], ...]
 *   "sites":  [[name, file, line, stack], ...]  name null for "(no stack)"; stack -1 for none
 *   "stack_sites": [site, ...]               each stack's site; -1 when no block of that site
 *                                            was registered (a stack only pending frees have)
 * Returns 0, or -1 without host memory. */
int cs_report_stacks_emit(const cs_report_stacks_t *r, cs_emitter_t *e);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Allocation sites: the one frame that says where a block was allocated, and totals of bytes and
 * blocks per site (summary and diff).
 *
 * A site's strings point into the snapshot model its frames came from: a table must not outlive
 * the docs whose sites it holds. */
#ifndef CS_ANALYSIS_SITES_H
#define CS_ANALYSIS_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/val_map.h"
#include "model/doc.h"

typedef struct cs_site_s {
  const char *name;     /* function; NULL = no stack was recorded */
  const char *filename;
  int64_t line;
  /* Where the site's frame is, so that its callers (which follow it) can be found: a frame list is
   * shared by every entry with that stack, and a value does not know its parent. Not part of the
   * site's identity. */
  cs_val_t frames; /* the list the site was read from; CS_VAL_ABSENT = no stack */
  size_t frame;    /* the site's frame: its index in frames */
} cs_site_t;

/* The site of a frame list (innermost frame first) by the rule the exit leak report uses too
 * (memviz/site_rule.h): the first user frame (Python first), else the first frame outside CUDA's
 * libraries and cudasnap, else the outermost frame; no site for a missing or empty list. A frame
 * whose name or filename is not a string reads as "??".
 *
 * Allocator frames (memviz/allocator_frames.h) are never a site: those the tool's own list names
 * (--allocator-frames) and those the snapshot's cudasnap.allocator_frames names (its first 64
 * globs that common/cs_glob.h accepts; the others are passed over, as `check` says). */
cs_site_t cs_site_of(const cs_doc_t *doc, cs_val_t frames);

/* Add the file's allocator frames (its cudasnap.allocator_frames, as cs_site_of reads them) to the
 * tool's own list (memviz/allocator_frames.h), so that every file is named by them: diff names
 * both sides' sites by both files' lists. */
void cs_site_frames_adopt(const cs_doc_t *doc);

/* cs_site_of, remembered per frame list: a trace's million entries have a few thousand distinct
 * stacks, each one word (model/doc.h), and the rule reads every frame's strings. */
typedef struct cs_site_cache_s {
  const cs_doc_t *doc;
  cs_val_map_t frame_of;  /* frame list -> the index of its site's frame */
  cs_val_map_t allocator; /* a function name's string -> 1 + whether it is an allocator frame */
} cs_site_cache_t;

void cs_site_cache_init(cs_site_cache_t *c, const cs_doc_t *doc);
void cs_site_cache_free(cs_site_cache_t *c);
/* Never fails: without host memory to remember a list, its site is computed again next time. */
cs_site_t cs_site_cache_of(cs_site_cache_t *c, cs_val_t frames);

/* One frame read as a site: its name, filename and line ("??" and 0 where they are missing or of
 * the wrong type). */
cs_site_t cs_site_of_frame(const cs_doc_t *doc, cs_val_t frame);

/* True for a frame of a function the compiler inlined into the next frame's: the two stand for
 * one return address (cudasnap writes `"inlined": true` on such frames; PyTorch writes none). */
bool cs_frame_inlined(const cs_doc_t *doc, cs_val_t frame);

/* The index of the next user frame (memviz/site_rule.h) after the one at `frame` in the list
 * `frames`, that is, of the next user frame that called it; SIZE_MAX when none: the context shown
 * under a site, without the interpreter and framework frames in between. */
size_t cs_site_next_caller(const cs_doc_t *doc, cs_val_t frames, size_t frame);

/* "function file:line", or "(no stack)". */
void cs_site_format(const cs_site_t *site, char *buf, size_t len);

typedef struct cs_site_total_s {
  cs_site_t site;
  uint64_t bytes;
  uint64_t blocks;
} cs_site_total_t;

/* Totals by site: an array in insertion order plus an open-addressing index into it. */
typedef struct cs_sites_s {
  cs_site_total_t *totals;
  size_t count, capacity;
  uint32_t *slots;  /* index + 1 into totals; 0 = empty */
  size_t nslots;    /* a power of two, kept above twice count */
} cs_sites_t;

void cs_sites_init(cs_sites_t *t);
void cs_sites_free(cs_sites_t *t);

/* Count one block of `bytes` at site. Returns 0, or -1 without host memory. */
int cs_sites_add(cs_sites_t *t, const cs_site_t *site, uint64_t bytes);

/* The totals of site, or NULL when it has none. */
const cs_site_total_t *cs_sites_find(const cs_sites_t *t, const cs_site_t *site);

/* Most bytes first; ties by more blocks, then by function, file and line, so that output is the
 * same from run to run. Invalidates the index: no cs_sites_add or cs_sites_find afterwards. */
void cs_sites_sort(cs_sites_t *t);

/* The total order used by cs_sites_sort for equal counts (also for diff's rows). */
int cs_site_compare(const cs_site_t *a, const cs_site_t *b);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Frames a user names part of the allocator: globs over function names (C, C++ or Python, as
 * frames show them), for a program's own allocation helper (`cuda_alloc()`), a C++ pool or a
 * framework's wrapper. The site rule (memviz/site_rule.h) passes over such frames as it passes
 * over cudasnap's own: a stack's site is the first frame outside them.
 *
 * The process's list: in the profiled program, CUDASNAP_ALLOCATOR_FRAMES and what the program adds
 * at run time (cudasnap_allocator_frame, the Python package's cudasnap.allocator_frame); in the
 * tool, --allocator-frames. A snapshot carries the program's list (cudasnap.allocator_frames), and
 * the tool adds each file's to its own (analysis/sites.h). At most CS_ALLOCATOR_FRAMES_MAX globs;
 * globs are never removed. Adding is thread-safe and reading lock-free, from any thread: the live
 * record's publisher and a snapshot's writer read it while the program adds to it. */
#ifndef CS_ALLOCATOR_FRAMES_H
#define CS_ALLOCATOR_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cs_glob.h"
#include "memviz/frame.h"

enum { CS_ALLOCATOR_FRAMES_MAX = 64 };

/* Add glob[0..len) to the process's list (common/cs_glob.h's syntax). 0 when it is in the list
 * (added, or there already), else -1 with *why saying what is wrong with it ("is empty", "the
 * list holds 64 globs already", "no host memory"). */
int cs_allocator_frames_add(const char *glob, size_t len, const char **why);

/* Add every glob of a comma-separated list (spaces around each trimmed): none when one of them is
 * wrong, else each in turn (so a list the process's list has no room left for is added in part).
 * 0, or -1 with why[0..why_len) saying which item and why ("`[ab` has a [ that is not closed"). */
int cs_allocator_frames_add_list(const char *text, char *why, size_t why_len);

/* The globs added so far, in the order they were added; the text stays valid for the process's
 * life. The count only grows: a reader that saw count n may read globs 0..n-1. */
size_t cs_allocator_frames_count(void);
const char *cs_allocator_frames_text(size_t i);

/* Whether a function name matches one of globs[0..n): the name as the frame shows it, or, for a
 * C++ name, without its return type and parameter list ("KvCache::append_page(int)" matches
 * `KvCache::append_page`). Time linear in the name's length. */
bool cs_allocator_frames_match(const cs_glob_t *globs, size_t n, const char *name);

/* Whether the frame's function is one the process's list names. */
bool cs_allocator_frame(const cs_frame_t *f);

#endif

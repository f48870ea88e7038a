/* SPDX-License-Identifier: Apache-2.0 */
/* Which frame names an allocation's site. One rule for the exit leak report (inside the program)
 * and for the tool's summary and diff (on files, ours and PyTorch's), so they name the same site.
 *
 * The site of a stack (innermost frame first) is its first *user* frame, Python user frames
 * winning over native ones; when no frame is a user frame, the first frame outside CUDA's
 * libraries and cudasnap; when every frame is CUDA's, the outermost one. Frames the user named
 * part of the allocator (memviz/allocator_frames.h) count as CUDA's: never a site. */
#ifndef CS_SITE_RULE_H
#define CS_SITE_RULE_H

#include <stdbool.h>
#include <stddef.h>

#include "memviz/frame.h"

typedef enum cs_frame_kind_e {
  CS_FRAME_CUDA,        /* CUDA's runtime, driver and libraries, or cudasnap: never a site */
  CS_FRAME_MACHINERY,   /* C/C++ runtime, interpreter, framework allocator/dispatch, Python's
                           standard library, installed packages, synthetic code: a site only
                           when no user frame exists */
  CS_FRAME_USER_NATIVE, /* any other native frame */
  CS_FRAME_USER_PYTHON, /* a Python frame of the user's own files */
  CS_FRAME_ALLOCATOR,   /* a function the user named part of the allocator: never a site */
} cs_frame_kind_t;

/* Which frames are the user's allocator's. NULL (or is_allocator NULL): those the process's list
 * names (memviz/allocator_frames.h); the tool passes one that also reads a snapshot's own list. */
typedef struct cs_site_rule_s {
  bool (*is_allocator)(void *ctx, const cs_frame_t *f);
  void *ctx;
} cs_site_rule_t;

/* True for a Python frame as PyTorch and cudasnap write them: a filename ending in .py or .pyw,
 * or a synthetic one in angle brackets ("<string>", "<frozen runpy>"). */
bool cs_frame_is_python(const cs_frame_t *f);

cs_frame_kind_t cs_frame_kind(const cs_frame_t *f);
cs_frame_kind_t cs_frame_kind_in(const cs_site_rule_t *rule, const cs_frame_t *f);

/* True for a frame of CUDA's libraries (by library file, or by name when the runtime is linked
 * statically into the program) or of cudasnap itself. */
bool cs_frame_is_cuda(const cs_frame_t *f);

/* The i-th frame (innermost first) of some stack; ctx is the caller's. */
typedef cs_frame_t (*cs_frame_at_fn)(void *ctx, size_t i);

/* The index of the site among the n frames of a stack, by the rule above; n == 0 gives 0 and
 * means "no stack". Frames are asked for in order, each once. */
size_t cs_site_index(size_t n, cs_frame_at_fn at, void *ctx);
size_t cs_site_index_in(const cs_site_rule_t *rule, size_t n, cs_frame_at_fn at, void *ctx);

#endif
